"""A sweep with early stopping: trials stopped early are PRUNED, counted, never re-run,
never picked, and the sampler learns from what they measured."""

from __future__ import annotations

from pathlib import Path

import optuna

from tests.sweep_tests.model_runner import ModelRunner
from tests.sweep_tests.model_runner import model_sweep
from tuner.study import summaries
from tuner.study.pooled import feasible_front
from tuner.study.samplers import sampler_trials


def test_pruned_trials_are_recorded_counted_and_not_repeated(tmp_path: Path) -> None:
    runner = ModelRunner(seed=3)
    study = model_sweep(tmp_path, runner, trials=30, seed=3, early_stop=0.25)
    rows = summaries(study)
    pruned = [t for t in rows if t.state == "PRUNED" and t.measured]
    assert pruned, "with the best so far as the bar, some trials are clearly slower"
    assert {t.reason for t in pruned} <= {"dominated", "collapsed"}
    assert all(t.tpot_ms for t in pruned)                 # what they measured is kept
    assert sum(t.launched for t in rows) == 30             # and they count in the budget
    hashes = [t.config_hash for t in rows if t.measured]
    assert len(hashes) == len(set(hashes))                 # no configuration measured twice
    assert not {t.number for t in pruned} & {t.number for t in feasible_front(study)}
    seen = {t.number: t for t in sampler_trials(study)}
    for t in pruned:
        twin = seen[t.number]
        assert twin.state == optuna.trial.TrialState.COMPLETE
        assert twin.values[0] == t.tpot_ms
    base = next(t for t in rows if t.role.value == "baseline")
    assert base.state == "COMPLETE"                        # the baseline is never judged


def test_without_early_stop_nothing_is_pruned(tmp_path: Path) -> None:
    study = model_sweep(tmp_path, ModelRunner(seed=3), trials=15, seed=3)
    assert not [t for t in summaries(study) if t.state == "PRUNED"]
