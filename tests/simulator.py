"""Start the simulator as a real process for tests, through the product's own lifecycle."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.conftest import GSM8K_DIR
from tests.conftest import SPARK
from tuner.engines import make_engine
from tuner.space import load_space
from tuner.trial._server import ServerProcess
from tuner.trial._server import free_port


def sim_env(tmp_path: Path, scale: float = 200.0, **extra: str) -> dict[str, str]:
    env = {"TUNER_SIM_TIME_SCALE": str(scale), "TUNER_SIM_NOISE": "0",
           "TUNER_SIM_GSM8K": str(GSM8K_DIR), "HUMMING_CACHE_DIR": str(tmp_path / "humming"),
           # each test's simulated machines in its own folder: a meminfo file a killed server
           # left in the shared default (named by port) drained the next server on that port
           "TUNER_SIM_HOST_DIR": str(tmp_path / "sim-hosts")}
    env.update(extra)
    return env


def sim_plan(tmp_path: Path, settings: dict[str, Any] | None = None, *, variant: str = "fork",
             space_path: Path = SPARK, scale: float = 200.0, extra_args: list[str] | None = None,
             **env: str):
    space = load_space(space_path)
    engine = make_engine(f"sim:{variant}", sim_env=sim_env(tmp_path, scale, **env))
    plan = engine.plan(space, engine.resolve(space, settings or {}), port=free_port())
    if extra_args:
        plan = plan.model_copy(update={"argv": [*plan.argv, *extra_args]})
    return plan


@contextlib.contextmanager
def running_sim(tmp_path: Path, settings: dict[str, Any] | None = None, *,
                ready_timeout: float = 60.0, **kw: Any) -> Iterator[ServerProcess]:
    plan = sim_plan(tmp_path, settings, **kw)
    server = ServerProcess(plan, tmp_path / f"server-{plan.port}.log",
                           make_engine("sglang").protocol())
    server.start()
    try:
        server.wait_ready(ready_timeout)
        yield server
    finally:
        server.stop()
