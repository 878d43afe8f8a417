"""The simulator's time scale under load: many users at once are served at a lower scale
(each stream's wall-time cost is multiplied into machine time), unless the user set one."""

from __future__ import annotations

import pytest

from tuner.cli._engine_options import DEFAULT_TIME_SCALE
from tuner.cli._engine_options import choose_engine
from tuner.cli._engine_options import load_time_scale
from tuner.space import Regime
from tuner.space import Workload


def _choice(scale: float | None, engine: str = "sim") -> object:
    return choose_engine(engine, engine_command=None, time_scale=scale, noise=0.0,
                         sim_seed=0, sim_faults=None, gsm8k=None)


def test_one_user_keeps_the_default_scale() -> None:
    choice = _choice(None)
    assert choice.for_users(1) is choice
    assert choice.time_scale == DEFAULT_TIME_SCALE


def test_many_users_lower_the_scale_the_server_is_started_with() -> None:
    fitted = _choice(None).for_users(16)
    assert fitted.time_scale == load_time_scale(16) < DEFAULT_TIME_SCALE
    env = fitted.engine.extra_env          # what the server process gets
    assert float(env["TUNER_SIM_TIME_SCALE"]) == fitted.time_scale
    assert env["TUNER_SIM_NOISE"] == "0"   # the other settings are kept
    assert "time scale x" in (fitted.note or "") and "16 users" in (fitted.note or "")


def test_a_scale_the_user_set_is_kept_with_a_note_when_it_is_too_high() -> None:
    high = _choice(100.0).for_users(16)
    assert high.time_scale == 100.0
    assert float(high.engine.extra_env["TUNER_SIM_TIME_SCALE"]) == 100.0
    assert "--time-scale 100 with 16 users" in (high.note or "")
    low = _choice(2.0)
    assert low.for_users(16) is low       # already faithful: nothing to say


def test_a_real_engine_has_no_scale_to_lower() -> None:
    real = _choice(None, engine="sglang")
    assert real.for_users(64) is real and real.time_scale == 1.0


def test_the_peak_counts_the_workload_and_every_regime() -> None:
    wl = Workload(concurrency=2, regimes=[Regime(name="a", concurrency=8),
                                          Regime(name="b", concurrency=4)])
    assert wl.peak_users == 8
    assert Workload(concurrency=3).peak_users == 3


@pytest.mark.parametrize("users", [1, 2, 16, 64, 4096])
def test_the_load_scale_falls_with_users_and_never_rises_above_the_default(users: int
                                                                           ) -> None:
    assert 0 < load_time_scale(users) <= DEFAULT_TIME_SCALE
    assert load_time_scale(users) >= load_time_scale(users * 2)
