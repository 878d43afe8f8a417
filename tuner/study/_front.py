"""The feasible Pareto front: the one definition the driver, reports and export share."""

from __future__ import annotations

from typing import Any

from tuner.study._record import ROLE


def feasible_front(study: Any) -> list[Any]:
    """Optuna's Pareto front (min TPOT, max accuracy) restricted to feasible, measured
    trials: never failure stand-ins, copied repeats or gated trials."""
    return [t for t in study.best_trials
            if t.user_attrs.get(ROLE) not in ("failure_twin", "duplicate")
            and all(v <= 0 for v in t.constraints.values())]


def feasible_best(study: Any) -> Any | None:
    """The fastest trial of the feasible front (None before one exists)."""
    front = feasible_front(study)
    return min(front, key=lambda t: t.values[0]) if front else None
