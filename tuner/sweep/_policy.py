"""The search policy: what a sweep launches next, in one place.

In order: the baseline (queued by the study), then the search plan's proposals (screens,
combination, local search: :mod:`tuner.sweep._strategy`) interleaved with the sampler's,
then the finals (:mod:`tuner.sweep._finals`: a race of the finalists, confirmations of the
leader at the capacity it serves with), each on the final accuracy sample when the sweep
has one (:mod:`tuner.sweep._final_sample`: the baseline's launch on it first). What the
finals decide is read back through the study's answer (:class:`tuner.study.Answer`): the
pick is never this module's state, so a resumed sweep, the report and export agree.

The driver asks :meth:`SearchPolicy.next` for a proposal whenever a slot is free and runs
it; this module never launches or records anything itself.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from tuner.space import SearchSpace
from tuner.study import Proposal
from tuner.study import Role
from tuner.study import SweepStudy
from tuner.study import TrialSummary
from tuner.sweep._final_sample import FAILED
from tuner.sweep._final_sample import PENDING
from tuner.sweep._final_sample import final_baseline
from tuner.trial import EarlyStop


class SearchPolicy:
    """``canonical``: values -> (canonical configuration, why it was repaired or None)."""

    def __init__(self, space: SearchSpace, settings: Any, *, questions: int,
                 scored: bool, canonical: Callable[[dict[str, Any]], tuple[Any, str | None]],
                 regimes: bool = False, sample_beside: bool = False) -> None:
        from tuner.sweep._finals import Finals

        self.s, self.canonical = settings, canonical
        #: the workload measures load regimes: the local search also looks around theirs
        self.regimes = regimes
        #: the final sample's size when this sweep has one: GSM8K questions, the workload's
        #: own on a GSM8K workload, else answered beside it (``scored`` is kept for callers)
        self.final_questions: int | None = settings.final_questions
        #: the workload is not GSM8K: the final sample is answered beside it, once per
        #: finalist (its verdict holds for that configuration's later launches)
        self.sample_beside = sample_beside
        self.finals = Finals.for_space(space, trials=settings.trials, hours=settings.hours,
                                       share=settings.finals_share, questions=questions,
                                       final_questions=self.final_questions)
        self.plan = None
        if settings.staged:
            from tuner.sweep._strategy import StagedPlan

            self.plan = StagedPlan(space, lambda v: canonical(v)[0].hash(),
                                   seed=settings.seed, explore_every=settings.explore_every)

    def next(self, sweep: SweepStudy, baseline: TrialSummary | None, *, launched: int,
             started: float) -> Proposal | None:
        """The next proposal (launch it unless its kind says otherwise), or None: nothing
        may start now (the confirmations wait for the baseline's final-sample launch)."""
        elapsed = time.monotonic() - started
        finalist = None
        if baseline is not None and self.finals.due(
                trials=self.s.trials, launched=launched, elapsed_s=elapsed,
                rows=sweep.trials()):
            if sweep.queued():        # a finals launch queued again (its trial process
                return sweep.propose(self.canonical)     # died) goes first: a new one on
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
                                     also=lambda: self._regime_centers(sweep))
        prop = sweep.propose(self.canonical, planned=planned)
        if planned is not None and self.plan is not None and (
                prop.config_hash != self.plan.last):
            self.plan.not_taken()
        return prop

    def _regime_centers(self, sweep: SweepStudy) -> list[TrialSummary]:
        """Each load regime's search centers (:meth:`tuner.study.RegimeAnswer.centers`),
        first places of every regime first: the local search also looks around them,
        since a regime's best is often not batch 1's (docs/performance.md, "Load
        regimes")."""
        if not self.regimes:
            return []
        from tuner.study import regime_answers

        rows = sweep.trials()
        ranked = [g.centers() for g in regime_answers(sweep.answer(rows), rows)]
        return [cs[i].configuration.first for i in range(max(map(len, ranked), default=0))
                for cs in ranked if i < len(cs)]

    def _regime_confirmation(self, sweep: SweepStudy) -> Proposal | None:
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
                return sweep.remeasure(self.canonical, p.number)
        return None

    def _finals(self, sweep: SweepStudy, baseline: TrialSummary, number: int, confirm: bool,
                held: dict[str, Any] | None) -> Proposal | None:
        final = self.final_questions is not None
        first = final_baseline(sweep.trials(), baseline.number) if final else None
        if first == PENDING:
            return None
        if final and first is None:
            return sweep.remeasure(self.canonical, baseline.number, final_sample=True)
        again = final and first != FAILED and not (
            self.sample_beside and _sampled(sweep.trials(), number))
        return sweep.remeasure(self.canonical, number, confirm, held, final_sample=again)

    def early_stop(self, sweep: SweepStudy, prop: Proposal,
                   baseline: TrialSummary | None) -> EarlyStop | None:
        """For a search trial once the baseline is measured: judge it against the best so
        far's TPOT interval (never the baseline's own run or the finals')."""
        if self.s.early_stop <= 0 or baseline is None or prop.role != Role.TRIAL:
            return None
        best = sweep.best()
        high = best.tpot_ci95[1] if best is not None and best.tpot_ci95 else None
        return EarlyStop(self.s.early_stop, slower_than_ms=high)


def _sampled(rows: list[TrialSummary], number: int) -> bool:
    """Whether a finals launch of trial ``number``'s configuration answered the final
    sample, or is about to (queued or running)."""
    return any(s.role == Role.REMEASURE and s.remeasure_of == number and s.final_sample
               and not s.recovered and s.state in ("COMPLETE", "RUNNING", "WAITING")
               for s in rows)
