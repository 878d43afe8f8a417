"""The TrialRunner contract (tuner.testing.RunnerContract), run against every runner."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tests.conftest import SPARK
from tests.simulator import sim_env
from tuner.engines import make_engine
from tuner.space import load_space
from tuner.sweep import TrialJob
from tuner.testing import RunnerContract
from tuner.trial import TrialOptions


SPACE = load_space(SPARK)
pytestmark = pytest.mark.slow


def job(tmp: Path, key: int, *, hang: bool = False) -> tuple[TrialJob, str]:
    """A quick synthetic trial on the simulator, its server tagged for the clean-up check."""
    tag = uuid.uuid4().hex
    env = sim_env(tmp, 300.0)
    if hang:
        env["TUNER_SIM_FAULT"] = "hang"
    engine = make_engine("sim", sim_env=env)
    wl = SPACE.spec.workload.model_copy(update={
        "kind": "synthetic", "questions": 2, "warmup_requests": 0, "input_len": 64,
        "output_len": 16})
    opts = TrialOptions(workdir=tmp, workload=wl, startup_timeout_s=60,
                        server_env={"TUNER_OWNER": tag})
    return TrialJob(key, SPACE, engine, engine.resolve(SPACE, {}), opts, 600), tag


@pytest.fixture
def make_job():
    return job


class TestLocalRunner(RunnerContract):
    @pytest.fixture
    def runner(self):
        from tuner.sweep import LocalRunner

        r = LocalRunner(slots=1)
        yield r
        r.close()


class TestRayRunner(RunnerContract):
    @pytest.fixture(scope="class")
    @classmethod
    def ray_runner(cls):
        from tuner.sweep import RayRunner

        r = RayRunner(address=None, gpu=False, slots=1)
        yield r
        r.close()

    @pytest.fixture
    def runner(self, ray_runner):
        yield ray_runner
        for key in list(ray_runner.inflight):
            ray_runner.cancel(key)
