"""The answer of a study: one read model that every output tells.

A sweep launches a configuration once while searching and the finalists again at the end
(:mod:`tuner.sweep._finals`), so a configuration has several trials and one estimate. The
progress line, ``tuner report`` (terminal, HTML, CSV, JSON), ``tuner export``, the profile
and the dashboard all read a study through :func:`answer_of`, so they agree:

* **configurations** - one :class:`Configuration` per measured configuration (its first
  trial's number names it) with every launch, the displayed TPOT (the confirmed mean, else
  the mean over its launches, else its one reading) and interval, and a verdict;
* **the front** - the admissible configurations that no other admissible one beats on the
  figures displayed (TPOT as above, the first launch's accuracy): non-dominated by
  construction, whatever was re-measured;
* **the pick** - what ``export --pick fastest`` takes: the confirmed finalist after the
  finals (never a single lucky draw once re-measured), the fastest front row before them;
  with a final accuracy sample, only what passed it;
* **ties** - re-measured configurations whose launch intervals overlap the pick's: the data
  cannot order them. A configuration measured once is never called a tie: it is
  "1 launch, unconfirmed".

Admissible: measured, every gate passed, and not refused by the final accuracy sample
(directly or through a configuration with the same numerics, :func:`final_verdicts`).
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
from typing import TYPE_CHECKING
from typing import Any

from tuner.errors import counted
from tuner.study._figures import Accuracy
from tuner.study._figures import accept_length_of
from tuner.study._figures import accuracy_of
from tuner.study._figures import served_capacity
from tuner.study._front import dominates
from tuner.study._front import undominated
from tuner.study._pooled import Estimate
from tuner.study._pooled import behind_within_noise
from tuner.study._pooled import estimates
from tuner.study._pooled import final_verdicts
from tuner.study._pooled import final_verified
from tuner.study._pooled import shares
from tuner.study._summary import Role
from tuner.study._summary import TrialSummary


if TYPE_CHECKING:
    import optuna


#: Kinds of configuration, in the order a table lists them.
KINDS = ("feasible", "gated", "refused", "pruned", "failed")


@dataclass(frozen=True)
class Configuration:
    """One measured configuration. ``number``: the trial that first measured it."""

    number: int
    role: Role
    #: feasible, gated (a screening gate fired), refused (the final accuracy sample refused
    #: it or a configuration with its numerics), pruned (stopped early) or failed
    kind: str
    first: TrialSummary
    estimate: Estimate | None = None
    #: the trials that measured it: the first, then the finals' launches
    launch_numbers: tuple[int, ...] = ()
    #: repeats answered from its result (nothing launched)
    copies: tuple[int, ...] = ()
    on_front: bool = False
    is_pick: bool = False
    tie: bool = False
    #: passed the final accuracy sample (directly or through its numerics); None: no sample
    final_passed: bool | None = None
    #: its one accuracy: on its largest sample, paired with the baseline (``_figures``)
    accuracy_figure: Accuracy | None = None
    #: the mean accept length over its launches
    mean_accept_length: float | None = None
    #: the finals' launch that served at the largest capacity setting (None: none raised it)
    capacity_launch: TrialSummary | None = None

    @property
    def config(self) -> dict[str, Any]:
        """The configuration as the search measured it first (what its neighbours move)."""
        return self.first.config

    @property
    def served_config(self) -> dict[str, Any]:
        """The configuration as every output shows it and ``export`` writes it: at the
        largest capacity setting the finals saw serve (the memory fraction)."""
        held = self.capacity_launch.held if self.capacity_launch is not None else {}
        return {**self.first.config, **held}

    @property
    def first_reading_ms(self) -> float | None:
        return self.first.tpot_ms

    @property
    def accept_length(self) -> float | None:
        return self.mean_accept_length

    @property
    def admissible(self) -> bool:
        return self.kind == "feasible"

    @property
    def tpot_ms(self) -> float | None:
        return self.estimate.tpot_ms if self.estimate is not None else self.first.tpot_ms

    @property
    def tpot_ci95(self) -> tuple[float, float] | None:
        if self.estimate is not None:
            return (self.estimate.low, self.estimate.high)
        ci = self.first.tpot_ci95
        return (ci[0], ci[1]) if ci else None

    @property
    def launches(self) -> int:
        return self.estimate.launches if self.estimate is not None else 1

    @property
    def confirmed(self) -> bool:
        """Re-measured by the finals (its figure pools several launches)."""
        return self.estimate is not None and self.estimate.remeasured > 0

    @property
    def accuracy(self) -> float | None:
        """The one accuracy (on its largest sample), else its first launch's."""
        f = self.accuracy_figure
        return f.value if f is not None else self.first.accuracy

    @property
    def accuracy_checked(self) -> bool:
        """Whether any launch of it scored answers (GSM8K, HumanEval, the final sample)."""
        return self.accuracy_figure is not None or self.first.accuracy is not None

    @property
    def accuracy_ci95(self) -> tuple[float, float] | None:
        f = self.accuracy_figure
        if f is not None:
            return f.ci95
        ci = self.first.accuracy_ci95
        return (ci[0], ci[1]) if ci else None

    @property
    def status(self) -> str:
        """The verdict in words: the same text in every table, page and file."""
        if self.kind == "gated":
            return "gated: " + ", ".join(self.first.gate)
        if self.kind == "refused":
            return "refused: the final accuracy sample"
        if self.kind == "failed":
            return f"failed: {self.first.reason or 'unknown'}"
        if self.kind == "pruned":
            return "stopped early"
        if self.is_pick:       # a pick nothing scored says so wherever it is shown
            return "pick" if self.accuracy_checked else "pick (accuracy not checked)"
        if self.tie:
            return "tie with the pick"
        return "feasible" if self.confirmed else "feasible, 1 launch, unconfirmed"


@dataclass(frozen=True)
class Answer:
    """A study's configurations, front, pick and ties (:func:`answer_of`)."""

    configurations: list[Configuration]
    with_accuracy: bool
    pick: Configuration | None = None
    baseline: Configuration | None = None
    front: list[Configuration] = field(default_factory=list)
    #: admissible configurations that read better than the pick on the figures shown but
    #: are left off the front: single readings, or finalists within noise of it
    left_off: frozenset[int] = frozenset()

    @property
    def confirmed(self) -> int:
        """Configurations the finals re-measured."""
        return sum(c.confirmed for c in self.configurations)

    @property
    def unconfirmed_faster(self) -> list[Configuration]:
        """Admissible configurations measured once that read faster than the confirmed pick
        at no less accuracy: single readings, the luckiest of their draws, that the finals
        did not launch again (the budget ended). They are left off the front: a single
        reading does not displace what the finals confirmed."""
        p = self.pick
        if p is None or not p.confirmed or p.tpot_ms is None:
            return []
        return [c for c in self.configurations if c.admissible and not c.confirmed
                and c.tpot_ms is not None and c.tpot_ms < p.tpot_ms
                and (c.accuracy or 0.0) >= (p.accuracy or 0.0)]

    def pick_note(self) -> str | None:
        """A sentence when single readings read faster than the pick, else None."""
        faster = self.unconfirmed_faster
        if self.pick is None or not faster:
            return None
        shown = ", ".join(f"#{c.number}" for c in faster[:6])
        return (f"{counted(len(faster), 'configuration')} measured once read faster than "
                f"the pick #{self.pick.number} ({shown}; 1 launch, unconfirmed: a single "
                "reading is the luckiest of its draws) and are left off the front; the "
                "finals confirmed the pick. More --trials let the finals launch them again")

    @property
    def ties(self) -> list[Configuration]:
        return [c for c in self.configurations if c.tie]

    def get(self, number: int) -> Configuration | None:
        return next((c for c in self.configurations if c.number == number), None)

    def choose(self, pick: str) -> Configuration:
        """The configuration ``tuner export --pick`` names: ``fastest`` (the pick),
        ``most-accurate`` or ``knee`` of the front (the displayed figures), or ``trial:N``
        (any measured configuration, a launch naming the configuration it measured). With a
        final accuracy sample, the front's choices are among what passed it. Raises
        :class:`tuner.errors.UserError` with the reason when there is none."""
        from tuner.errors import UserError

        if pick.startswith("trial:"):
            return self._trial(pick)
        if pick not in ("fastest", "most-accurate", "knee"):
            raise UserError(f"--pick {pick!r}: expected fastest, most-accurate, knee or "
                            "trial:N")
        if self.pick is None:
            raise UserError("the study has no feasible measured configuration yet")
        front = [c for c in self.front if c.final_passed is not False] or [self.pick]
        if pick == "fastest":
            return self.pick
        if not self.with_accuracy:
            if pick == "most-accurate":
                raise UserError("--pick most-accurate needs a GSM8K study (accuracy "
                                "objective)")
            return self.pick
        if pick == "most-accurate":
            return max(front, key=lambda c: (c.accuracy or 0.0, -(c.tpot_ms or 0.0)))
        return _knee(front) if len(front) >= 3 else self.pick

    def _trial(self, pick: str) -> Configuration:
        from tuner.errors import UserError

        try:
            number = int(pick.split(":", 1)[1])
        except ValueError:
            raise UserError(f"--pick {pick}: expected trial:N with N a trial number") from None
        for c in self.configurations:
            if number in c.launch_numbers or number in c.copies:
                if c.kind == "failed" or c.tpot_ms is None:
                    raise UserError(f"--pick {pick}: trial #{c.number} has no measurement "
                                    f"({c.first.state}, {c.first.reason or ''})")
                if c.kind in ("gated", "refused"):   # accuracy is part of the answer
                    raise UserError(f"--pick {pick}: trial #{c.number} is {c.status}; only "
                                    "a configuration every gate passed can be exported")
                return c
        raise UserError(f"--pick {pick}: no measured configuration has trial #{number}; "
                        "`tuner report` lists them")

    def speedup(self, c: Configuration) -> float | None:
        base = self.baseline.tpot_ms if self.baseline is not None else None
        return base / c.tpot_ms if base and c.tpot_ms else None


def _knee(front: list[Configuration]) -> Configuration:
    """The front row nearest the ideal corner (fastest TPOT, best accuracy), each figure
    scaled to the front's span."""
    import math

    tp = [c.tpot_ms or 0.0 for c in front]
    ac = [c.accuracy or 0.0 for c in front]
    span_t, span_a = (max(tp) - min(tp)) or 1.0, (max(ac) - min(ac)) or 1.0
    return min(front, key=lambda c: math.hypot(((c.tpot_ms or 0.0) - min(tp)) / span_t,
                                               (max(ac) - (c.accuracy or 0.0)) / span_a))


def _kind(s: TrialSummary, refused: list[dict[str, Any]]) -> str:
    if s.state == "PRUNED":
        return "pruned"
    if s.state != "COMPLETE" or not s.values:
        return "failed"
    if not s.feasible:
        return "gated"
    return "refused" if refused and shares(s.config, refused) else "feasible"


def _pick(rows: list[Configuration], summaries: list[TrialSummary],
          front: set[int]) -> Configuration | None:
    """After the finals: the re-measured admissible configuration with the lowest mean over
    all its launches, except that the finals' leader (the one they confirmed) stays the
    pick when it trails by less than one standard error of the difference (the finals
    chose it over that one within noise, :mod:`tuner.sweep._finals`). Before the finals:
    the fastest front row. With a final accuracy sample only what passed it; when nothing
    did, the baseline."""
    verified = final_verified(summaries)
    ok = [c for c in rows if c.admissible and (verified is None or c.number in verified)]
    again = [c for c in ok if c.confirmed and c.estimate is not None]
    if again:
        fastest = min(again, key=lambda c: (c.tpot_ms or 0.0, c.number))
        leaders = [c for c in again if c.estimate and c.estimate.confirmations]
        if not leaders:
            return fastest
        leader = min(leaders, key=lambda c: (c.tpot_ms or 0.0, c.number))
        assert leader.estimate is not None and fastest.estimate is not None
        spread = [c.estimate for c in again if c.estimate is not None]
        if behind_within_noise(leader.estimate, fastest.estimate, spread):
            return leader
        return fastest
    on_front = [c for c in ok if c.number in front]
    if on_front:
        return min(on_front, key=lambda c: (c.tpot_ms or 0.0, c.number))
    if verified:        # nothing faster passed the final sample: the baseline
        return next((c for c in ok if c.role == Role.BASELINE), None)
    return None


def answer_of(summaries: list[TrialSummary], with_accuracy: bool) -> Answer:
    """The :class:`Answer` of a study whose trials are ``summaries`` (in number order)."""
    from dataclasses import replace

    _, refused = final_verdicts(summaries)
    verified = final_verified(summaries)
    pooled = estimates(None, summaries)
    by_number = {s.number: s for s in summaries}
    again: dict[int, list[int]] = {}
    copies: dict[int, list[int]] = {}
    for s in summaries:
        if s.role == Role.REMEASURE and s.remeasure_of is not None and not s.recovered:
            again.setdefault(s.remeasure_of, []).append(s.number)
        elif s.role == Role.DUPLICATE and s.duplicate_of is not None:
            copies.setdefault(s.duplicate_of, []).append(s.number)
    base = next((s for s in summaries if s.role == Role.BASELINE and s.measured), None)
    base_launches = ([by_number[n] for n in (base.number, *again.get(base.number, []))]
                     if base is not None else [])
    rows = []
    for s in summaries:
        if not s.measured:
            continue
        numbers = (s.number, *again.get(s.number, []))
        launches = [by_number[n] for n in numbers]
        rows.append(Configuration(
            number=s.number, role=s.role, kind=_kind(s, refused), first=s,
            estimate=pooled.get(s.number), launch_numbers=numbers,
            copies=tuple(copies.get(s.number, [])),
            final_passed=None if verified is None else s.number in verified,
            accuracy_figure=accuracy_of(launches, [] if s is base else base_launches),
            mean_accept_length=accept_length_of(launches),
            capacity_launch=served_capacity(launches)))
    pick = _pick(rows, summaries, undominated(rows, with_accuracy))
    # the pick is on the front: what beats it on the figures shown is a single reading or
    # a finalist the finals judged within noise of it, and stays off (pick_note, ties)
    beaten_by = frozenset(c.number for c in rows if pick is not None and c.admissible
                          and c.tpot_ms is not None and c.number != pick.number
                          and dominates(c, pick, with_accuracy))
    front = undominated(rows, with_accuracy, beaten_by)
    me = pick.estimate if pick is not None else None
    out = []
    for c in rows:
        tie = (me is not None and pick is not None and c.number != pick.number
               and c.admissible and c.confirmed and me.remeasured > 0
               and c.estimate is not None and c.estimate.overlaps(me))
        out.append(replace(c, on_front=c.number in front,
                           is_pick=pick is not None and c.number == pick.number, tie=tie))
    shown = {c.number: c for c in out}
    return Answer(
        configurations=out, with_accuracy=with_accuracy,
        pick=shown[pick.number] if pick is not None else None,
        baseline=next((c for c in out if c.role == Role.BASELINE and c.kind != "failed"),
                      None),
        front=sorted((shown[n] for n in front),
                     key=lambda c: (c.tpot_ms or 0.0, -(c.accuracy or 0.0), c.number)),
        left_off=beaten_by)


def study_answer(study: optuna.Study, summaries: list[TrialSummary] | None = None) -> Answer:
    """:func:`answer_of` a stored Optuna study (``summaries``: when the caller read them)."""
    from tuner.study._summary import summaries as read

    rows = summaries if summaries is not None else read(study)
    return answer_of(rows, with_accuracy=len(study.directions) > 1)
