"""What the sweep's display shows: counts over the whole study, the last event, the pick.

The driver updates :class:`Progress` after every event; the pick and its TPOT are the
study's answer's (:class:`tuner.study.Answer`), so the status line names what `tuner
report` and `tuner export` name.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from dataclasses import field
from typing import TYPE_CHECKING

from tuner.errors import clip
from tuner.errors import counted
from tuner.study import Role
from tuner.study import SweepStudy
from tuner.trial import DERIVED_TWIN
from tuner.trial import TrialResult


if TYPE_CHECKING:
    from tuner.study import Answer
    from tuner.study import Configuration
    from tuner.study import TrialSummary


@dataclass
class Progress:
    """What the display shows; updated by the driver after every event. Counts cover the
    whole study (a resumed sweep's earlier runs too); ``done_before``: launches done when
    this run started (this run's pace sets the ETA)."""

    started: float = field(default_factory=time.monotonic)
    budget: int | None = None
    hours: float | None = None
    done: int = 0                      # launches the budget counts
    done_before: int = 0
    failed: int = 0
    failures: dict[str, int] = field(default_factory=dict)    # reason -> launches
    gated: int = 0
    duplicates: int = 0
    running: int = 0
    baseline_tpot: float | None = None
    best_tpot: float | None = None
    best_number: int | None = None
    best_launches: int = 1             # the pick's launches (x N once the finals ran)
    best_checked: bool = True          # whether anything scored the pick's answers
    #: the pick's other figures as every output shows them: ``acc 90.0%/300, accept
    #: 2.94, mem_fraction=0.7`` (its one accuracy and sample, mean accept length, the
    #: capacity it is exported at)
    best_figures: str = ""
    last: str = ""
    #: lines said once each, in order (a load regime nothing measured can meet)
    notes: list[str] = field(default_factory=list)
    _said: set[str] = field(default_factory=set, repr=False)

    def refresh(self, sweep: SweepStudy, first: bool = False) -> None:
        """Recount from the study (``first``: this run's start, for its pace)."""
        rows = sweep.trials()
        self.done = sum(r.launched for r in rows)
        if first:
            self.done_before = self.done
        failed = [r for r in rows if r.launched and r.state == "FAIL"]
        self.failed = len(failed)
        self.failures = {}
        for r in failed:
            why = r.reason or "unknown"
            self.failures[why] = self.failures.get(why, 0) + 1
        self.gated = sum(r.launched and r.state == "COMPLETE" and bool(r.gate) for r in rows)
        self.duplicates = sum(r.role == Role.DUPLICATE for r in rows)
        answer = sweep.answer(rows)
        self._infeasible(answer, rows)
        if answer.baseline is not None:    # its TPOT as the report shows it (pooled)
            self.baseline_tpot = answer.baseline.tpot_ms
        pick = answer.pick
        if pick is not None:
            self.best_tpot, self.best_number, self.best_launches = (
                pick.tpot_ms, pick.number, pick.launches)
            self.best_checked = pick.accuracy_checked
            self.best_figures = _figures(pick)


    def _infeasible(self, answer: Answer, rows: list[TrialSummary]) -> None:
        """Say, once per regime, that nothing measured meets its SLA: as soon as
        :data:`INFEASIBLE_AFTER` configurations measured it, or :data:`INFEASIBLE_BY`
        launches are done (the nearest and by how much it misses, and what would help)."""
        if not any(r.regimes for r in rows):
            return
        from tuner.study import regime_answers

        for g in regime_answers(answer, rows):
            if g.name in self._said or not (len(g.rows) >= INFEASIBLE_AFTER
                                            or self.done >= INFEASIBLE_BY):
                continue
            line = g.infeasibility()
            if line is not None:
                self._said.add(g.name)
                self.notes.append(line)


#: configurations that measured a regime before its infeasibility is said
INFEASIBLE_AFTER = 3
#: launches after which it is said whatever measured the regime
INFEASIBLE_BY = 5


def _figures(pick: Configuration) -> str:
    """The pick's accuracy (on its largest sample), accept length and exported capacity,
    in the status line's few words."""
    parts = []
    acc = pick.accuracy_figure
    if acc is not None:
        parts.append(f"acc {acc.value:.1%}/{acc.questions}")
    if pick.accept_length:
        parts.append(f"accept {pick.accept_length:.2f}")
    if pick.capacity_launch is not None:
        parts += [f"{k}={v}" for k, v in pick.capacity_launch.held.items()]
    return ", ".join(parts)


def resuming(sweep: SweepStudy, trials: int | None) -> str:
    """The first line of a run: a new study, or where a resumed one stands."""
    done = sweep.counted()
    if not done:
        return f"new study {sweep.study.study_name!r}"
    left = f", {max(0, trials - done)} left of --trials {trials}" if trials else ""
    pick = sweep.answer().pick
    where = (f"; the pick so far #{pick.number} {pick.tpot_ms:.2f} ms"
             if pick is not None and pick.tpot_ms else "")
    return (f"resuming study {sweep.study.study_name!r}: {counted(done, 'launch', 'launches')} "
            f"done{left}{where}")


def told(n: int, result: TrialResult, state: str) -> str:
    """The line that says how trial ``n`` ended."""
    if state in ("FAIL", "RETRY"):
        out = f"#{n} FAILED {result.reason}: {clip(result.message, 160)}"
        if state == "RETRY":
            out += " (a start-up failure: launching it once more)"
    elif state == "PRUNED":
        out = f"#{n} {clip(result.message, 200)}"
    else:
        a = result.aggregates
        gated = result.gate is not None and not result.gate.passed
        verdict = ("gated: " + ", ".join(r.rule for r in result.gate.fired())
                   if gated and result.gate else "ok")
        acc = f", accuracy {a.accuracy:.1%}" if a and a.accuracy is not None else ""
        out = (f"#{n} TPOT {a.tpot_ms:.2f} ms, accept {a.accept_length or 1:.2f}"
               f"{acc} - {verdict}") if a and a.tpot_ms else f"#{n} {verdict}"
    if result.timings.startup_s is not None:
        out += f" (start-up {result.timings.startup_s:.0f} s)"
    if result.twin == DERIVED_TWIN:        # simulated figures no published number checks
        out += " [DERIVED twin]"
    return out
