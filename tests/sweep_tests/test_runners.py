"""The TrialRunner contract (tuner/sweep/_base.py), run against every implementation."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import psutil
import pytest

from tests.conftest import SPARK
from tests.simulator import sim_env
from tuner.engines import make_engine
from tuner.space import load_space
from tuner.sweep._base import Outcome
from tuner.sweep._base import TrialJob
from tuner.sweep._base import TrialRunner
from tuner.trial import TrialOptions


SPACE = load_space(SPARK)
pytestmark = pytest.mark.slow


def job(tmp: Path, key: int, *, hang: bool = False) -> tuple[TrialJob, str]:
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


def servers(tag: str) -> list[psutil.Process]:
    out = []
    for p in psutil.process_iter():
        try:
            with open(f"/proc/{p.pid}/environ", "rb") as fh:
                if f"TUNER_OWNER={tag}".encode() in fh.read().split(b"\0"):
                    out.append(p)
        except OSError:
            continue
    return out


def wait_for(pred, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError("timed out")


def drain(runner: TrialRunner, timeout: float = 120.0) -> list[Outcome]:
    out: list[Outcome] = []
    deadline = time.monotonic() + timeout
    while runner.inflight and time.monotonic() < deadline:
        out += runner.poll(timeout=0.5)
    return out


class RunnerContract:
    """Subclasses provide ``runner``: a fresh TrialRunner with at least one slot."""

    def test_a_job_reports_its_result(self, runner: TrialRunner, tmp_path: Path) -> None:
        j, tag = job(tmp_path, 7)
        runner.submit(j)
        assert runner.inflight == [7]
        outs = drain(runner)
        assert [(o.key, o.kind) for o in outs] == [(7, "result")]
        assert outs[0].result is not None and outs[0].result.ok
        assert runner.inflight == [] and servers(tag) == []

    def test_cancel_ends_the_job_and_its_server(self, runner: TrialRunner, tmp_path: Path
                                                ) -> None:
        j, tag = job(tmp_path, 3, hang=True)
        runner.submit(j)
        wait_for(lambda: servers(tag))
        runner.cancel(3)
        assert runner.inflight == []
        wait_for(lambda: not [p for p in servers(tag) if p.status() != psutil.STATUS_ZOMBIE],
                 timeout=30)
        assert runner.poll(timeout=1.0) == []

    def test_a_dead_worker_is_worker_lost(self, runner: TrialRunner, tmp_path: Path) -> None:
        j, tag = job(tmp_path, 5, hang=True)
        runner.submit(j)
        server = wait_for(lambda: servers(tag))[0]
        worker = server.parent()
        assert worker is not None
        worker.kill()
        outs = drain(runner, timeout=60)
        assert [(o.key, o.kind) for o in outs] == [(5, "worker_lost")]
        # Ray's process-group clean-up, or the local runner's job tag, ends the server too
        wait_for(lambda: not [p for p in servers(tag) if p.status() != psutil.STATUS_ZOMBIE],
                 timeout=30)


class TestLocalRunner(RunnerContract):
    @pytest.fixture
    def runner(self):
        from tuner.sweep._local import LocalRunner

        r = LocalRunner(slots=1)
        yield r
        r.close()


class TestRayRunner(RunnerContract):
    @pytest.fixture(scope="class")
    @classmethod
    def ray_runner(cls):
        from tuner.sweep._ray import RayRunner

        r = RayRunner(address=None, gpu=False, slots=1)
        yield r
        r.close()

    @pytest.fixture
    def runner(self, ray_runner):
        yield ray_runner
        for key in list(ray_runner.inflight):
            ray_runner.cancel(key)
