from __future__ import annotations

import time
from pathlib import Path

import optuna
import pytest

from tests.conftest import SPARK
from tuner.errors import UserError
from tuner.space import load_space
from tuner.study._bridge import suggest
from tuner.study._lock import KEY
from tuner.study._lock import DriverLock
from tuner.study._lock import LockHeld
from tuner.study._lock import is_stale
from tuner.study._record import add_failure_twin
from tuner.study._storage import locate


SPACE = load_space(SPARK)


def test_locate_defaults_and_journal(tmp_path: Path) -> None:
    loc = locate(None, "my study", home=tmp_path)
    assert loc.storage_url == f"sqlite:///{(tmp_path / 'my-study.db').resolve()}"
    assert loc.artifacts == tmp_path / "my-study.artifacts"
    j = locate(str(tmp_path / "s.journal"), "x")
    assert j.journal == tmp_path / "s.journal" and j.artifacts == tmp_path / "s.artifacts"
    with pytest.raises(UserError, match="--artifacts"):
        locate("postgresql://u@h/db", "x")


def test_suggest_follows_conditions() -> None:
    study = optuna.create_study(directions=["minimize", "maximize"],
                                sampler=optuna.samplers.RandomSampler(seed=0))
    seen_off = seen_on = 0
    for _ in range(60):
        t = study.ask()
        values = suggest(SPACE, t)
        if values["speculative"] == "off":
            seen_off += 1
            assert not any(k.startswith("spec_") for k in t.params)
        else:
            seen_on += 1
            assert {"spec_steps", "spec_topk", "spec_draft_tokens"} <= set(t.params)
        assert ("humming_activation" in t.params) == (values["moe_backend"] == "humming")
        assert 0.55 <= values["mem_fraction"] <= 0.70
        study.tell(t, [1.0, 1.0])
    assert seen_off and seen_on


def _study(tmp_path: Path) -> optuna.Study:
    return optuna.create_study(study_name="s", storage=f"sqlite:///{tmp_path}/s.db",
                               load_if_exists=True)


def test_lock_refuses_a_live_driver_and_takes_over_a_stale_one(tmp_path: Path) -> None:
    first = DriverLock(_study(tmp_path), lease_s=30)
    first.acquire()
    second = DriverLock(_study(tmp_path), lease_s=30)
    with pytest.raises(LockHeld, match="being run by"):
        second.acquire()
    # a dead pid on this host makes the lock stale at once
    _study(tmp_path).set_user_attr(KEY, {**first.current(), "pid": 2**22 + 7})  # type: ignore[dict-item]
    second.acquire()
    assert second.current()["token"] == second.token  # type: ignore[index]
    with pytest.raises(UserError, match="taken over"):
        first.renew(force=True)
    second.release()
    assert second.current() is None


def test_lock_lease_expiry_and_break(tmp_path: Path) -> None:
    a = DriverLock(_study(tmp_path), lease_s=30)
    a.acquire()
    info = a.current()
    assert info is not None and not is_stale(info)
    assert is_stale(info, now=time.time() + 31)
    b = DriverLock(_study(tmp_path))
    b.acquire(break_lock=True)
    assert b.previous is not None and b.previous["token"] == a.token


def test_failure_twin_is_infeasible_and_keeps_params() -> None:
    study = optuna.create_study(directions=["minimize", "maximize"])
    t = study.ask()
    suggest(SPACE, t)
    study.tell(t, state=optuna.trial.TrialState.FAIL)
    add_failure_twin(study, study.trials[0], with_accuracy=True, pessimistic_tpot=300.0,
                     reason="oom")
    twin = study.trials[1]
    assert twin.state == optuna.trial.TrialState.COMPLETE and twin.params == t.params
    assert twin.constraints["failed"] == 1.0
    assert study.best_trials == []            # infeasible: never on the front
