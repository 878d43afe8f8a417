"""Pooled TPOT estimates across a configuration's launches, and the ties and capacity read from
them (what the pick, the finals and export compare); a configuration's one accuracy figure
(:class:`Accuracy`)."""

from tuner.study._figures import Accuracy
from tuner.study._front import feasible_front
from tuner.study._pooled import Estimate
from tuner.study._pooled import behind_within_noise
from tuner.study._pooled import estimates
from tuner.study._pooled import feasible_estimates
from tuner.study._pooled import final_baseline_runs
from tuner.study._pooled import largest_capacity
from tuner.study._pooled import ties_with


__all__ = [
    "Accuracy",
    "Estimate",
    "behind_within_noise",
    "estimates",
    "feasible_estimates",
    "feasible_front",
    "final_baseline_runs",
    "largest_capacity",
    "ties_with",
]
