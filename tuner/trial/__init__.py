"""Trials: launch a configuration, prove it took effect, measure it, gate it."""

from tuner.trial._result import REASONS
from tuner.trial._result import TrialResult
from tuner.trial._run import TrialOptions
from tuner.trial._run import run_trial
from tuner.trial._run import workload_vocab


__all__ = ["REASONS", "TrialOptions", "TrialResult", "run_trial", "workload_vocab"]
