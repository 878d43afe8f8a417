"""What a sweep reads of its study, apart from what it writes.

:class:`StudyReads` is all a searcher (``tuner.sweep.Searcher``) is handed: typed summaries,
the measured configurations, the pick so far, the answer, and whether a trial is queued.
:class:`tuner.study.SweepStudy` implements it and adds the writes, which only the sweep's
scheduler calls. :class:`BaselineRuns` is how the driver judges the baseline (measured,
failed for good, or still to run).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from tuner.study._answer import Answer
from tuner.study._summary import Role
from tuner.study._summary import TrialSummary


class StudyReads(Protocol):
    """The reads of a sweep's study. None of them writes; each reads the study as it is
    now (what another process recorded included)."""

    def trials(self) -> list[TrialSummary]:
        """Every trial's summary, in number order."""
        ...

    def measured(self) -> dict[str, TrialSummary]:
        """config hash -> the finished trial that measured it (the first)."""
        ...

    def best(self, trials: list[TrialSummary] | None = None) -> TrialSummary | None:
        """The pick so far (:func:`tuner.study.feasible_best`); ``trials``: summaries the
        caller already read."""
        ...

    def answer(self, trials: list[TrialSummary] | None = None) -> Answer:
        """The study's :class:`tuner.study.Answer` (``trials``: summaries already read)."""
        ...

    def queued(self) -> bool:
        """Whether a trial is queued (WAITING): the next ask takes it, whatever else is
        suggested."""
        ...


@dataclass(frozen=True)
class BaselineRuns:
    """The baseline's launches, as the driver judges them: ``measured``: the measured
    baseline (COMPLETE), or None; ``failed``: its last run when that failed and no other
    is queued or running (the sweep cannot go on); ``last_failure``: its last failed run,
    one cancelled at a sweep's end included (what to say when the budget ended before it
    was measured)."""

    measured: TrialSummary | None
    failed: TrialSummary | None
    last_failure: TrialSummary | None

    @classmethod
    def of(cls, rows: list[TrialSummary]) -> BaselineRuns:
        runs = [t for t in rows if t.role == Role.BASELINE]
        live = [t for t in runs if not t.recovered]
        pending = any(t.state in ("WAITING", "RUNNING") for t in live)
        failed = [t for t in live if t.state == "FAIL"]
        return cls(measured=next((t for t in runs if t.state == "COMPLETE"), None),
                   failed=failed[-1] if failed and not pending else None,
                   last_failure=next((t for t in reversed(runs) if t.state == "FAIL"), None))
