"""Trials: launch a configuration, prove it took effect, measure it, gate it."""

from tuner.trial._evidence import MISSING
from tuner.trial._evidence import lookup
from tuner.trial._evidence import same_value
from tuner.trial._gate import PairedAccuracy
from tuner.trial._gate import paired_accuracy
from tuner.trial._power import detectable_drop
from tuner.trial._power import gate_power
from tuner.trial._regimes import Pool
from tuner.trial._regimes import RegimeResult
from tuner.trial._regimes import ServingLimit
from tuner.trial._regimes import capacity_refusal
from tuner.trial._regimes import measure_regime
from tuner.trial._regimes import pools
from tuner.trial._regimes import queue_notes
from tuner.trial._requests import RequestRecord
from tuner.trial._requests import run_requests
from tuner.trial._result import DERIVED_TWIN
from tuner.trial._result import REASONS
from tuner.trial._result import TrialResult
from tuner.trial._result import clock_label
from tuner.trial._run import EarlyStop
from tuner.trial._run import TrialOptions
from tuner.trial._run import run_trial
from tuner.trial._run import workload_vocab
from tuner.trial._stats import Aggregates
from tuner.trial._stats import aggregate


__all__ = ["DERIVED_TWIN", "MISSING", "REASONS", "Aggregates", "EarlyStop", "PairedAccuracy",
           "Pool", "RegimeResult",
           "RequestRecord", "ServingLimit",
           "TrialOptions", "TrialResult", "aggregate", "capacity_refusal", "clock_label",
           "detectable_drop",
           "gate_power",
           "lookup", "measure_regime", "paired_accuracy", "pools", "queue_notes", "run_requests",
           "run_trial", "same_value", "workload_vocab"]
