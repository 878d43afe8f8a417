"""The search policy: what a sweep launches next, in one place.

In order: the baseline (queued by the study), then the search plan's proposals (screens,
combination, local search: :mod:`tuner.sweep._strategy`) interleaved with the sampler's,
then the finals (:mod:`tuner.sweep._finals`: a race of the finalists, confirmations of the
leader at the capacity it serves with), each on the final accuracy sample when the sweep
has one (:mod:`tuner.sweep._final_sample`: the baseline's launch on it first). What the
finals decide is read back through the study's answer (:class:`tuner.study.Answer`): the
pick is never this module's state, so a resumed sweep, the report and export agree.

A space small enough to enumerate (:data:`ENUMERABLE` configurations at most, capacity
knobs held) whose every configuration is measured goes to its finals at once, however much
of the budget is left, and the sweep ends after them (:meth:`SearchPolicy.finished`):
proposing measured configurations again would only store copies.

The scheduler asks :meth:`SearchPolicy.suggest` whenever a slot is free, and makes the
suggestion a trial and launches it: this module reads the study and never writes it, nor
launches or records anything (the searcher contract, :mod:`tuner.sweep._searcher`).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING
from typing import Any

from tuner.space import SearchSpace
from tuner.study import Proposal
from tuner.study import Role
from tuner.study import StudyReads
from tuner.study import TrialSummary
from tuner.sweep._final_sample import FAILED
from tuner.sweep._final_sample import MIN_FINAL_LAUNCHES
from tuner.sweep._final_sample import PENDING
from tuner.sweep._final_sample import final_baseline
from tuner.sweep._searcher import Ask
from tuner.sweep._searcher import Planned
from tuner.sweep._searcher import Remeasure
from tuner.sweep._searcher import Searcher
from tuner.sweep._searcher import Suggestion
from tuner.sweep._searcher import Turn
from tuner.sweep._searcher import Wait
from tuner.sweep._strategy import Again
from tuner.sweep._strategy import Exhausted


if TYPE_CHECKING:
    from tuner.engines import Engine
    from tuner.space import Workload
    from tuner.sweep._settings import SweepSettings


#: a space of at most this many configurations (capacity knobs held at the baseline's
#: values) is enumerated, so the sweep knows when it has measured all of them
ENUMERABLE = 2000
#: the sampler's repeats in a row after which an enumerable space's next unmeasured
#: configuration is proposed instead
REPEATS_BEFORE_FILL = 5
#: a configuration is measured once a launch of it finished (measured or failed)
FINISHED = ("COMPLETE", "FAIL")


def every_config(space: SearchSpace, canonical: Callable[[dict[str, Any]], tuple[Any, Any]]
                 ) -> dict[str, dict[str, Any]] | None:
    """Every canonical configuration a speed search can launch, hash -> values (capacity
    knobs at the baseline's values; what the engine refuses left out), or None when the
    space is continuous or larger than :data:`ENUMERABLE`."""
    import math

    from tuner.errors import ConfigError

    base = space.complete({})
    held = {n: base[n] for n in space.capacity_knobs if n in base}
    spread = math.prod(len(space.domain(n) or [None]) for n in held)
    if space.raw_size() > ENUMERABLE * spread:
        return None
    out: dict[str, dict[str, Any]] = {}
    try:
        for values in space.iter_configs(limit=ENUMERABLE * spread + 1):
            if any(values.get(n, v) != v for n, v in held.items()):
                continue
            try:
                out.setdefault(canonical(values)[0].hash(), values)
            except ConfigError:
                continue
    except ValueError:                   # a continuous knob
        return None
    return out


class SearchPolicy(Searcher):
    """The product's searcher. ``canonical``: values -> (canonical configuration, why it
    was repaired or None); ``capacity``: the capacity knobs a load regime searches
    (screened first)."""

    def __init__(self, space: SearchSpace, settings: SweepSettings, *, questions: int,
                 scored: bool, canonical: Callable[[dict[str, Any]], tuple[Any, str | None]],
                 regimes: tuple[str, ...] = (), sample_beside: bool = False,
                 capacity: tuple[str, ...] = ()) -> None:
        from tuner.sweep._finals import Finals

        self.s, self.canonical = settings, canonical
        #: the load regimes the workload measures: the local search also looks around their
        #: bests, and the sampler's turns go round batch 1's sampler and each regime's own
        self.regimes = regimes
        self.sampler_turns = 0
        #: the final sample's size when this sweep has one: GSM8K questions, the workload's
        #: own on a GSM8K workload, else answered beside it (``scored`` is kept for callers)
        self.final_questions: int | None = settings.final_questions
        #: the workload is not GSM8K: the final sample is answered beside it, once per
        #: finalist (its verdict holds for that configuration's later launches)
        self.sample_beside = sample_beside
        self.finals = Finals.for_space(space, trials=settings.trials, hours=settings.hours,
                                       share=settings.finals_share, questions=questions,
                                       final_questions=self.final_questions)
        self.space = space
        #: the sampler's proposals in a row that repeated a measured configuration
        self.repeats = 0
        #: the last suggestion was the plan's or the sampler's (whose repeats are counted),
        #: and the plan's own
        self._searched = self._from_plan = False
        #: launches counted when every configuration was found measured (None: not yet)
        self.exhausted_at: int | None = None
        self.plan = None
        if settings.staged:
            from tuner.sweep._strategy import StagedPlan

            self.plan = StagedPlan(space, lambda v: canonical(v)[0].hash(),
                                   seed=settings.seed, explore_every=settings.explore_every,
                                   first=capacity)

    @classmethod
    def for_sweep(cls, space: SearchSpace, engine: Engine, workload: Workload,
                  settings: SweepSettings) -> SearchPolicy:
        """The searcher of a sweep of ``space`` (as its file declares it) on ``engine``
        serving ``workload``: several users at once make the capacity knobs searched, and
        screened first."""
        from tuner.sweep._scheduler import canonicalizer

        searched = space.for_workload(workload)
        held = space.capacity_knobs
        return cls(searched, settings, questions=workload.questions,
                   scored=workload.kind == "gsm8k", sample_beside=workload.kind != "gsm8k",
                   regimes=tuple(r.name for r in workload.regimes),
                   capacity=held if searched.capacity_knobs != held else (),
                   canonical=canonicalizer(engine, searched))

    def suggest(self, sweep: StudyReads, turn: Turn) -> Suggestion:
        """What to launch next (:class:`Wait`: the confirmations wait for the baseline's
        final-sample launch)."""
        baseline, launched, elapsed = turn.baseline, turn.launched, turn.elapsed_s
        self._searched = False
        finalist = None
        if baseline is not None and self.exhausted_at is None and self._every and not (
                self._lacking(sweep.trials(), FINISHED)):
            self.exhausted_at = launched
            self.finals.force(MIN_FINAL_LAUNCHES if self.final_questions is not None
                              else MIN_FINAL_LAUNCHES - 1)
        if baseline is not None and self.finals.due(
                trials=self.s.trials, launched=launched, elapsed_s=elapsed,
                rows=sweep.trials()):
            if sweep.queued():        # a finals launch queued again (its trial process
                return Ask()                             # died) goes first: a new one on
            again = self._regime_confirmation(sweep)     # top of it would stay WAITING
            if again is not None:
                return again
            finalist = self.finals.choose(sweep.trials(), elapsed_s=elapsed)
        if finalist is not None:
            assert baseline is not None
            return self._finals(sweep, baseline, *finalist)
        planned = None
        if self.plan is not None and baseline is not None:
            planned = self.plan.next(sweep.measured(), sweep.best(), baseline,
                                     also=lambda: self._regime_centers(sweep),
                                     again=lambda: self.finals.contender(sweep.trials()))
        if isinstance(planned, Again):
            return Remeasure(planned.number, contender=True)
        if isinstance(planned, Exhausted):
            planned = None
            if self.s.trials is not None and not self.s.hours:   # the finals start now
                assert baseline is not None
                self.finals.start_now(self.s.trials - launched)
                finalist = self.finals.choose(sweep.trials(), elapsed_s=elapsed)
                if finalist is not None:
                    return self._finals(sweep, baseline, *finalist)
        from_plan = planned is not None
        if planned is None and self.repeats >= REPEATS_BEFORE_FILL and baseline is not None:
            left = self._lacking(sweep.trials())   # the sampler circles what it measured:
            if left:                            # an enumerable space's unmeasured one
                planned = (left[0], "not yet measured (the sampler repeats itself)", None)
        self._searched, self._from_plan = True, from_plan
        if planned is not None:
            return Planned(*planned)
        return Ask(self._sampler_serves() if baseline is not None else None)

    def _sampler_serves(self) -> str | None:
        """Whose sampler proposes this turn: batch 1's and each load regime's, in turn (a
        regime's own learns its goodput within its SLA: :mod:`tuner.study._regime_sampler`);
        None: batch 1's (the study's own)."""
        turn, self.sampler_turns = self.sampler_turns, self.sampler_turns + 1
        objectives = (None, *self.regimes)
        return objectives[turn % len(objectives)]

    def proposed(self, suggestion: Suggestion, prop: Proposal) -> None:
        """After the plan's or the sampler's turn: count the sampler's repeats in a row; a
        planned configuration that was not taken (a queued trial went first) is planned
        again later."""
        if not self._searched:
            return
        self.repeats = self.repeats + 1 if prop.kind in ("repeat", "wait") else 0
        if self._from_plan and self.plan is not None and (
                prop.config_hash != self.plan.last):
            self.plan.not_taken()

    @cached_property
    def _every(self) -> dict[str, dict[str, Any]] | None:
        """Every configuration of the space, hash -> values (None: not enumerable)."""
        return every_config(self.space, self.canonical)

    def _lacking(self, rows: list[TrialSummary], states: tuple[str, ...] | None = None
                 ) -> list[dict[str, Any]]:
        """An enumerable space's configurations without a trial in one of ``states``
        (None: without any trial, running and queued ones included)."""
        have = {s.config_hash for s in rows if states is None or s.state in states}
        return [v for h, v in (self._every or {}).items() if h not in have]

    def exhausted(self) -> bool:
        return self.exhausted_at is not None

    def finished(self, launched: int) -> str | None:
        """The space was exhausted and its finals' launches are spent, or the local search
        had nothing left worth a launch and its finals are decided and confirmed: the sweep
        ends with budget left (it says why)."""
        if self.exhausted_at is not None and launched >= (
                self.exhausted_at + self.finals.reserve):
            return "every configuration of the space is measured and its finals are done"
        if self.finals.settled:
            return ("the search found nothing left worth a launch and its finals are "
                    "decided and confirmed")
        return None

    def _regime_centers(self, sweep: StudyReads) -> list[tuple[TrialSummary, str]]:
        """Each load regime's search centers (:meth:`tuner.study.RegimeAnswer.centers`)
        with the regime's name, first places of every regime first: the local search also
        looks around them, since a regime's best is often not batch 1's
        (docs/performance.md, "Load regimes")."""
        if not self.regimes:
            return []
        from tuner.study import regime_answers

        rows = sweep.trials()
        ranked = [(g.name, g.centers()) for g in regime_answers(sweep.answer(rows), rows)]
        return [(cs[i].configuration.first, name)
                for i in range(max((len(cs) for _, cs in ranked), default=0))
                for name, cs in ranked if i < len(cs)]

    def _regime_confirmation(self, sweep: StudyReads) -> Remeasure | None:
        """In the finals, first: a second launch of each load regime's pick measured once.
        Its SLA verdict then rests on two launches (every one must be within it): one
        reading near a binding bound passed by noise in the search benchmark."""
        if not self.regimes:
            return None
        from tuner.study import regime_answers

        rows = sweep.trials()
        again = {s.remeasure_of for s in rows if s.role == Role.REMEASURE and not s.recovered}
        for g in regime_answers(sweep.answer(rows), rows):
            p = g.pick
            if p is not None and p.launches == 1 and p.number not in again:
                return Remeasure(p.number, serves=g.name)
        return None

    def _finals(self, sweep: StudyReads, baseline: TrialSummary, number: int, confirm: bool,
                held: dict[str, Any] | None) -> Suggestion:
        final = self.final_questions is not None
        first = final_baseline(sweep.trials(), baseline.number) if final else None
        if first == PENDING:
            return Wait()
        if final and first is None:
            return Remeasure(baseline.number, final_sample=True)
        again = final and first != FAILED and not (
            self.sample_beside and _sampled(sweep.trials(), number))
        return Remeasure(number, confirm, held or {}, final_sample=again)


def _sampled(rows: list[TrialSummary], number: int) -> bool:
    """Whether a finals launch of trial ``number``'s configuration answered the final
    sample, or is about to (queued or running)."""
    return any(s.role == Role.REMEASURE and s.remeasure_of == number and s.final_sample
               and not s.recovered and s.state in ("COMPLETE", "RUNNING", "WAITING")
               for s in rows)
