"""What the driver's bookkeeping costs per trial does not grow with the study."""

from __future__ import annotations

from pathlib import Path

import pytest

import tuner.study._facade as facade
from tests.sweep_tests.model_runner import ModelRunner
from tests.sweep_tests.model_runner import model_sweep


def test_a_finished_trial_is_summarised_once(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = facade.summarize

    def counting(trial):
        calls.append(trial.number)
        return real(trial)

    monkeypatch.setattr(facade, "summarize", counting)
    study = model_sweep(tmp_path, ModelRunner(seed=1), trials=30)
    n = len(study.trials)
    # summarising every trial at every read: 2,688 calls for these 32 trials (84 a trial,
    # growing with the study); a finished trial once, the few unfinished at each read
    assert len(calls) <= 10 * n, (len(calls), n)
    again = {k for k in calls if calls.count(k) > 5}    # while waiting, running, finished
    assert not again, again

