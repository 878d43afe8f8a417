"""The scheduler's memory of what is in flight (tuner/sweep/_scheduler.py): a repeat of a
configuration in flight waits for it and is told its result; Ctrl-C queues what ran again
and fails what waited. Model-backed runner, two slots, a scripted searcher."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest

from tests.conftest import SPARK
from tests.sweep_tests.model_runner import ModelRunner
from tuner.engines import make_engine
from tuner.space import load_space
from tuner.study import Role
from tuner.study import StudyReads
from tuner.study import locate
from tuner.study import summaries
from tuner.sweep import Ask
from tuner.sweep import Driver
from tuner.sweep import Outcome
from tuner.sweep import Planned
from tuner.sweep import Searcher
from tuner.sweep import Suggestion
from tuner.sweep import SweepSettings
from tuner.sweep import Turn
from tuner.trial import TrialOptions


SPACE = load_space(SPARK)
ENGINE = make_engine("sim")
HUMMING = SPACE.complete({"moe_backend": "humming"})


class Twice(Searcher):
    """The baseline, then one configuration planned twice in a row, then the sampler's."""

    def __init__(self) -> None:
        self.planned = 0

    def suggest(self, study: StudyReads, turn: Turn) -> Suggestion:
        if turn.baseline is None or self.planned == 2:
            return Ask()
        self.planned += 1
        return Planned(HUMMING, "twice")


class Interrupted(ModelRunner):
    """Ctrl-C while the first launches after the baseline are in flight."""

    def poll(self, timeout: float) -> list[Outcome]:
        if any(key != 0 for key in self.inflight):
            raise KeyboardInterrupt
        return super().poll(timeout)


def _sweep(tmp: Path, runner: ModelRunner) -> optuna.Study:
    settings = SweepSettings(study_name="s", location=locate(str(tmp / "s.db"), "s"),
                             trials=4, seed=0, finals_share=0)
    Driver(SPACE, ENGINE, TrialOptions(workdir=tmp, workload=SPACE.spec.workload), settings,
           lambda: runner, searcher=Twice()).run()
    return optuna.load_study(study_name="s", storage=f"sqlite:///{tmp / 's.db'}")


def test_a_repeat_of_a_configuration_in_flight_waits_and_is_told_its_result(
        tmp_path: Path) -> None:
    runner = ModelRunner(seed=1, slots=2)
    rows = summaries(_sweep(tmp_path, runner))
    first, repeat = (s for s in rows if s.config == HUMMING and s.role != Role.BASELINE)
    assert first.role == Role.TRIAL and first.state == "COMPLETE"
    assert repeat.role == Role.DUPLICATE and repeat.duplicate_of == first.number
    assert repeat.values == first.values
    assert runner.launched.count(HUMMING) == 1        # measured once


def test_ctrl_c_queues_what_ran_again_and_fails_what_waited(tmp_path: Path) -> None:
    with pytest.raises(KeyboardInterrupt):
        _sweep(tmp_path, Interrupted(seed=1, slots=2))
    study = optuna.load_study(study_name="s", storage=f"sqlite:///{tmp_path / 's.db'}")
    rows = summaries(study)
    ran, waited = (s for s in rows if s.state == "FAIL"
                   and SPACE.speed_key(s.config) == SPACE.speed_key(HUMMING))
    assert ran.recovered and ran.reason == "cancelled"             # not a failure of it
    assert waited.reason == "cancelled" and not waited.recovered
    queued = [t for t in study.get_trials() if t.state == optuna.trial.TrialState.WAITING]
    assert ran.number in [t.user_attrs.get("retry_of") for t in queued]   # runs on resume
    assert study.user_attrs["tuner:driver_lock"] == {}            # the lock was released
