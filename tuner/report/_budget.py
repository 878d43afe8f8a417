"""Where a study's launch budget went: to batch 1's objective and to each load regime's.

A sweep whose workload measures load regimes searches for each of them as well as for
batch 1 (the regime's neighbours of its best, its own sampler's turns, its pick launched
again: ``tuner/sweep/_policy.py``); every launch records what it was proposed for
(:attr:`tuner.study.TrialSummary.serves`) and why (``proposed_by``). A launch counts as
the ``--trials`` budget counts it (:attr:`tuner.study.TrialSummary.launched`). Every launch
measures every regime, so a launch for batch 1 also informs a regime's answer: the split
says what steered the search, not what each objective learnt from.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from tuner.study import Role
from tuner.study import TrialSummary


#: how a launch is named in the split, in the order shown
KINDS = ("baseline", "screen", "combine", "probe", "neighbour", "sampler", "contender",
         "finals", "pick again", "other")
BATCH1 = "batch 1"


def kind_of(s: TrialSummary) -> str:
    """Why ``s`` was launched, as the split names it."""
    if s.role == Role.BASELINE:
        return "baseline"
    if s.role == Role.REMEASURE:
        return "contender" if s.contender else "pick again" if s.serves else "finals"
    why = s.proposed_by or "sampler"      # a study from before ``proposed_by``: the sampler's
    return why if why in KINDS else "other"


@dataclass(frozen=True)
class BudgetSplit:
    """Launches per objective (``batch 1``, then each regime), each split by kind."""

    launches: int
    by_objective: dict[str, dict[str, int]]

    def sentence(self) -> str:
        """``budget: 30 launches; batch 1: 24 (baseline 1, screen 6, ...); sixteen: 6
        (neighbour 2, sampler 3, pick again 1)``."""
        parts = [f"{name}: {sum(kinds.values())} ("
                 + ", ".join(f"{k} {n}" for k, n in kinds.items()) + ")"
                 for name, kinds in self.by_objective.items()]
        return (f"budget: {self.launches} launch{'es' if self.launches != 1 else ''}; "
                + "; ".join(parts))

    def as_dict(self) -> dict[str, Any]:
        return {"launches": self.launches, "by_objective": self.by_objective,
                "text": self.sentence()}


def budget_split(rows: list[TrialSummary], regimes: list[str]) -> BudgetSplit | None:
    """How ``rows``' launches split between batch 1 and ``regimes`` (the study's load
    regimes, in order); None when the study measures no regime (all of it is batch 1's)."""
    if not regimes:
        return None
    counts: dict[str, Counter[str]] = {BATCH1: Counter(), **{r: Counter() for r in regimes}}
    launched = [s for s in rows if s.launched]
    for s in launched:
        counts.setdefault(s.serves or BATCH1, Counter())[kind_of(s)] += 1
    return BudgetSplit(launches=len(launched), by_objective={
        name: {k: c[k] for k in KINDS if c[k]} for name, c in counts.items()})
