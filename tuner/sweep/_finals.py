"""The finals: the end of a sweep launches its finalists again, so the pick is decided by
fresh launches, not by the lucky draw that put it on top, and its TPOT is reported from
launches taken after it was chosen.

Finalists: the feasible configurations whose TPOT interval overlaps the best one's (the
fastest ``max_finalists``). The last ``share`` of the trial budget (or of ``--hours``) is
theirs: first a **race** (one launch at a time, always to the finalist with the fewest
race launches; ranked by a TPOT borrowed from each one's priced one-move neighbours as
well as its own launches, :mod:`tuner.sweep._borrowed`, which also chooses the finalists;
a finalist that trails the fastest on that ranking by two standard errors of the
difference of their own launches leaves it), then **confirmation**
launches of the race's leader. When the search has nothing left worth a launch before
that (:meth:`Finals.start_now`), the finals start then and race over the rest of the
budget; once decided and confirmed the sweep ends. The search's own re-measurements of its
fastest so far (:meth:`Finals.contender`) are pooled like any launch but are not the
race's. The pick is decided on the mean over all of each finalist's launches
(:func:`tuner.study.answer_of`): the leader, unless another finalist's mean is ahead of it
by more than one standard error of the difference; the TPOT reported is that mean, "x5"
beside it five launches (:mod:`tuner.study._pooled`).

The leader is the fastest finalist, except that a finalist with fewer lossy settings
(:func:`numerics_changes`: an activation or LM head quantized online can cost accuracy
below what the sample sees) is preferred when the fastest's lead over it is under one
standard error of the difference (the launches' spread, pooled over the finalists) and
under :attr:`Finals.NUMERICS_MARGIN`: in the search benchmark the Humming W4A8 activation,
truly 1.4% slower and 0.45 points less accurate, won the race on noise in most seeds.
Merely overlapping intervals are not enough: with two or three launches they also cover a
9% gain (seed 112: the FP8 LM head against the FP32 one); nor is one standard error alone
(seed 108: the FP32 head, truly 5% slower, for the FP8 head's 0.05 points).

Confirmations also find the pick's capacity: a capacity knob (``role: capacity``, the
memory fraction) changes no speed, so the confirmations bisect the values above the
baseline's (the ``ladder``), the space's cap first; the export takes the largest that
served (:func:`tuner.study.largest_capacity`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from tuner.space import SearchSpace
from tuner.study import Role
from tuner.study import TrialSummary
from tuner.study.pooled import Estimate
from tuner.study.pooled import behind_within_noise
from tuner.study.pooled import feasible_estimates
from tuner.sweep._final_sample import MIN_FINAL_LAUNCHES
from tuner.sweep._final_sample import final_launch_s


def capacity_ladder(space: SearchSpace) -> list[dict[str, Any]]:
    """Values of the first float capacity knob (the memory fraction) above the baseline's,
    largest first. A maximum of running requests is no rung: held at one user at a time,
    more would only cost memory."""
    floats = [n for n in space.capacity_knobs if space.knob(n).type == "float"]
    if not floats:
        return []
    name = floats[0]
    base = space.complete({})[name]
    return [{name: v} for v in sorted((v for v in space.domain(name) or [] if v > base),
                                      reverse=True)]


def numerics_changes(space: SearchSpace) -> Callable[[dict[str, Any]], int]:
    """How many of a configuration's numerics settings may cost accuracy
    (:meth:`tuner.space.SearchSpace.lossy_knobs`: a value its knob lists as lossy, or any
    change from the baseline of a knob that lists none)."""
    return lambda config: len(space.lossy_knobs(config))


def race_launches(rows: list[TrialSummary]) -> dict[int, int]:
    """Trial number -> the finals' race launches of its configuration so far, running ones
    included, failed ones too (what the race counts: read from the study, so a resumed
    sweep goes on where it stopped; a launch a dead driver or Ctrl-C left unmeasured is
    not counted, it runs again). The baseline's launch on the final sample counts under
    the baseline's number."""
    out: dict[int, int] = {}
    for s in rows:
        if (s.role == Role.REMEASURE and not s.confirm and not s.recovered
                and not s.contender and s.remeasure_of is not None):
            out[s.remeasure_of] = out.get(s.remeasure_of, 0) + 1
    return out


class Finals:
    def __init__(self, *, trials: int | None, hours: float | None, share: float,
                 max_finalists: int | None = None, ladder: list[dict[str, Any]] | None = None,
                 questions: int = 0, final_questions: int | None = None,
                 numerics: Callable[[dict[str, Any]], int] | None = None,
                 borrow: Callable[..., dict[int, float]] | None = None) -> None:
        #: the ranking estimate (:mod:`tuner.sweep._borrowed`); None: each own mean
        self.borrow = borrow
        self.max_finalists = max_finalists or self.MAX_FINALISTS
        self.numerics = numerics or (lambda config: 0)
        self.ladder = ladder or []
        self.reserve = (max(2, round(share * trials)) if trials and trials >= 10 and share
                        else 0)
        #: the reserve the budget set (the finals' confirmations are a third of it, however
        #: early the search hands over: :meth:`start_now`)
        self.planned_reserve = self.reserve
        self.search_share = (1 - share) if hours and share else None
        #: a timed sweep confirms in the last third of its finals' time
        self.confirm_from = (1 - share / 3) if hours and share else None
        self.hours = hours
        #: a timed sweep keeps time for MIN_FINAL_LAUNCHES launches (one fewer without a
        #: final sample) of their length, start-up included
        #: (:func:`tuner.sweep._final_sample.final_launch_s`)
        self.questions, self.final_questions = questions, final_questions
        self.finalists: list[int] | None = None
        self.leader: int | None = None
        #: the finals run now whatever the budget says (the space is exhausted)
        self.forced = False
        #: the finals started early (:meth:`start_now`) and are decided and confirmed:
        #: nothing is left for the rest of the budget
        self.settled = False
        self.early = False

    @classmethod
    def for_space(cls, space: SearchSpace, **kw: Any) -> Finals:
        """The finals of a sweep of ``space``: its capacity ladder, numerics count and the
        moves its ranking borrows across."""
        from tuner.sweep._borrowed import borrowing

        return cls(ladder=capacity_ladder(space), numerics=numerics_changes(space),
                   borrow=borrowing(space), **kw)

    def due(self, *, trials: int | None, launched: int, elapsed_s: float,
            rows: list[TrialSummary] | None = None) -> bool:
        """Whether the search phase is over and the finals run now. ``rows``: the study's
        summaries (a timed sweep with a final sample sizes its finals' time from them)."""
        if self.finalists is not None or self.forced:
            return True
        if self.reserve and trials is not None and launched >= trials - self.reserve:
            return True
        if not (self.search_share and self.hours):
            return False
        launches = MIN_FINAL_LAUNCHES if self.final_questions else MIN_FINAL_LAUNCHES - 1
        return elapsed_s >= self.hours * 3600 - self._window(rows, (1 - self.search_share),
                                                             launches)

    def _window(self, rows: list[TrialSummary] | None, share: float, launches: int) -> float:
        """Seconds kept at the end of a timed sweep: ``share`` of its hours, or the time of
        ``launches`` finals launches (start-up included; on the final sample when there is
        one) when that is longer."""
        assert self.hours is not None
        each = final_launch_s(rows or [], self.questions, self.final_questions)
        return max(share * self.hours * 3600, launches * each if each else 0.0)

    def force(self, launches: int) -> None:
        """Run the finals from now on: every configuration is measured. A sweep without a
        trial budget's reserve races and confirms over ``launches`` launches."""
        self.forced = True
        if not self.reserve:
            self.reserve = self.planned_reserve = launches

    #: finalists at most (the fastest whose intervals overlap the fastest's)
    MAX_FINALISTS = 3

    #: standard errors of the difference within which fewer lossy settings lead
    NUMERICS_SE = 1.0

    #: the most of the ranking TPOT the leader gives up for fewer lossy settings
    #: (ASSUMED: a tie-break, not a trade; the one-standard-error bound alone gave up 5%
    #: in the search benchmark, seed 108: the FP32 head for a 0.05-point FP8 head)
    NUMERICS_MARGIN = 0.02

    #: launches the fastest configuration so far has before the local search moves from it
    INCUMBENT_LAUNCHES = 2

    def contender(self, rows: list[TrialSummary]) -> int | None:
        """During the local search: the fastest feasible configuration so far (by its
        pooled mean) when it has fewer than :attr:`INCUMBENT_LAUNCHES` launches, to be
        launched again before the search moves around it, else None. One lucky reading
        otherwise takes the search's center and often the finals (search benchmark seed
        108: the BF16 head read 3% fast once, the search spent ten launches around it and
        the true best, 3 configurations within 4% of it, missed the three finalists). Its
        launches count toward the finals' race (:func:`race_launches`)."""
        est = feasible_estimates(None, rows)
        if not est:
            return None
        fastest = min(est.values(), key=lambda e: e.tpot_ms)
        return fastest.number if fastest.launches < self.INCUMBENT_LAUNCHES else None

    def start_now(self, launches: int) -> None:
        """The search has nothing left worth a launch: the finals run now, over the
        ``launches`` left of the trial budget at most (a longer race); once decided and
        confirmed (a third of the reserve the budget set) they are :attr:`settled` and
        the sweep ends."""
        self.forced = self.early = True
        self.reserve = max(self.reserve, launches)

    def choose(self, rows: list[TrialSummary], elapsed_s: float = 0.0
               ) -> tuple[int, bool, dict[str, Any] | None] | None:
        """(trial whose configuration to launch next, whether it is a confirmation, the
        capacity knobs to set), or None when nothing is feasible yet. ``elapsed_s``: the
        sweep's time so far (a timed sweep's race ends at a share of its hours)."""
        est = feasible_estimates(None, rows)
        if self.leader is not None and self.leader not in est:
            self.leader = None      # gated on the final sample: the next finalist leads
        if self.finalists is not None:
            self.finalists = [n for n in self.finalists if n in est] or None
        rank = self._rank(rows, est)
        if self.finalists is None:
            cands = sorted(est.values(), key=lambda e: rank[e.number])
            if not cands:
                return None
            self.finalists = [e.number for e in cands if e.overlaps(cands[0])][
                :self.max_finalists]
        raced = race_launches(rows)
        if self.reserve:
            racing = (sum(raced.get(n, 0) for n in self.finalists)
                      < self.reserve - self._confirm_share())
        else:
            racing = not (self.confirm_from and self.hours and elapsed_s >= self.hours * 3600
                          - self._window(rows, 1 - self.confirm_from, 1))
        alive = self._contending(est, rank)
        if self.leader is None and racing and len(alive) > 1:
            number = min(alive, key=lambda n: (raced.get(n, 0), rank[n]))
            return number, False, None
        if self.leader is None:
            self.leader = self._lead(rows, est, rank)
        if self.early and self._confirmed(rows) + 1 >= self._confirm_share():
            self.settled = True             # this is the last confirmation
        return self.leader, True, self._held(rows, self.leader)

    def _confirmed(self, rows: list[TrialSummary]) -> int:
        """The leader's confirmation launches so far (running ones included)."""
        return sum(1 for s in rows if s.role == Role.REMEASURE and s.confirm
                   and not s.recovered and s.remeasure_of == self.leader)

    #: standard errors of the difference behind the fastest finalist at which a finalist
    #: leaves the race (its launches go to those still in contention)
    OUT_OF_RACE_SE = 2.0

    def _rank(self, rows: list[TrialSummary], est: dict[int, Any]) -> dict[int, float]:
        """Trial number -> the TPOT the finals rank it by: borrowed from its priced
        neighbours (:mod:`tuner.sweep._borrowed`) where the space allows, else its mean."""
        if not self.borrow or not est:
            return {n: e.pooled_ms for n, e in est.items()}
        configs = {s.number: s.config for s in rows if s.number in est}
        return self.borrow(configs, est, list(est))

    def _contending(self, est: dict[int, Any], rank: dict[int, float]) -> list[int]:
        """The finalists still in the race: those whose ranking TPOT trails the fastest
        finalist's by less than :attr:`OUT_OF_RACE_SE` standard errors of the difference
        (the launches' spread pooled over every configuration launched twice or more;
        every finalist while none was)."""
        assert self.finalists is not None
        ranked = sorted((n for n in self.finalists if n in est), key=lambda n: rank[n])
        if not ranked:
            return []
        spread = list(est.values())
        if not any(len(e.readings) > 1 for e in spread):
            return ranked                       # nothing says what noise is yet
        at = _at_rank(est, rank)
        return [n for n in ranked if n == ranked[0] or behind_within_noise(
            at[n], at[ranked[0]], spread, self.OUT_OF_RACE_SE)]

    def _lead(self, rows: list[TrialSummary], est: dict[int, Any], rank: dict[int, float]
              ) -> int:
        """The finalist to confirm: the fastest by the ranking (:meth:`_rank`), unless one
        with fewer lossy settings trails it there by less than one standard error of the
        difference of their own launches and by at most :attr:`NUMERICS_MARGIN`."""
        assert self.finalists is not None
        ranked = sorted((n for n in self.finalists if n in est), key=lambda n: rank[n])
        if not ranked:
            return self.finalists[0]
        fastest = ranked[0]
        spread, at = [est[n] for n in ranked], _at_rank(est, rank)
        close = [n for n in ranked if n == fastest
                 or (rank[n] <= rank[fastest] * (1 + self.NUMERICS_MARGIN)
                     and behind_within_noise(at[n], at[fastest], spread, self.NUMERICS_SE))]
        configs = {s.number: s.config for s in rows}
        return min(close, key=lambda n: (self.numerics(configs.get(n, {})), rank[n]))

    def _held(self, rows: list[TrialSummary], leader: int) -> dict[str, Any] | None:
        """The capacity setting of the next confirmation of ``leader``: the space's cap
        first; after a failure, the middle of what lies between the largest value that
        served and the smallest that failed (a bisection: a larger value fails if a smaller
        one did); once nothing lies between, the largest that served (None: the
        baseline's)."""
        if not self.ladder:
            return None
        (name,) = self.ladder[0]
        runs = [s for s in rows if s.role == Role.REMEASURE and s.confirm
                and s.remeasure_of == leader and name in s.held]
        served = [float(s.held[name]) for s in runs if s.state == "COMPLETE"]
        failed = [float(s.held[name]) for s in runs if s.state == "FAIL"]
        ok, bad = (max(served) if served else None), (min(failed) if failed else None)
        between = [h for h in self.ladder if (bad is None or h[name] < bad)
                   and (ok is None or h[name] > ok)]       # largest first
        if not between:
            return {name: ok} if ok is not None else None
        return between[0] if bad is None else between[len(between) // 2]

    def _confirm_share(self) -> int:
        return max(1, self.planned_reserve // 3)


def _at_rank(est: dict[int, Estimate], rank: dict[int, float]) -> dict[int, Estimate]:
    """The estimates with their means at the finals' ranking TPOT (their launches and so
    their standard errors unchanged): how far one trails another is judged on the ranking
    the finals use."""
    return {n: dataclasses.replace(e, tpot_ms=rank.get(n, e.tpot_ms)) for n, e in est.items()}
