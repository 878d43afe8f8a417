"""Kills during the finals (issue 34 item 4, finding 5): a finals launch whose trial process
dies is queued again; a new finals launch was then queued on top of it, and the one taken
ran while the other stayed WAITING, with no configuration, after the budget was spent.
Real parts: the simulator's servers, the local runner's processes and a local Ray
instance, an SQLite study; the kill is SIGKILL of the trial process (the local runner's
job, the Ray worker) once its server exists."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.conftest import GSM8K_DIR
from tests.conftest import SPARK
from tests.sweep_tests import carries
from tests.sweep_tests import new_mark
from tuner.engines import make_engine
from tuner.space import load_space
from tuner.study import locate
from tuner.study import trial_at
from tuner.sweep import Driver
from tuner.sweep import LocalRunner
from tuner.sweep import RayRunner
from tuner.sweep import SweepSettings
from tuner.trial import TrialOptions


pytestmark = pytest.mark.slow


def _servers(mark: str) -> set[int]:
    return {p.pid for p in psutil.process_iter(["status"])
            if p.info["status"] != psutil.STATUS_ZOMBIE and carries(p.pid, mark)}


def _killing(base: type, mark: str, driver: dict[str, Any], killed: list[int],
             times: int = 2) -> type:
    """``base`` (a runner class) whose first ``times`` finals launches lose their trial
    process: SIGKILL as soon as the launch's server exists (its parent is the trial
    process), so the kill always lands mid-launch."""

    class Killing(base):  # type: ignore[misc, valid-type]
        def submit(self, job: Any) -> None:
            before = _servers(mark)
            super().submit(job)
            role = trial_at(driver["d"].sweep.study, job.key).user_attrs.get("tuner:role")
            if role != "remeasure" or len(killed) >= times:
                return
            deadline = time.monotonic() + 120
            while not (new := _servers(mark) - before) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert new, "the finals launch's server never started"
            os.kill(psutil.Process(min(new)).ppid(), signal.SIGKILL)
            killed.append(job.key)

    return Killing


@pytest.mark.parametrize("runner", ["local", "ray"])
def test_kills_during_the_finals_leave_no_waiting_trial_after_the_budget(
        tmp_path: Path, runner: str) -> None:
    mark = new_mark()
    space = load_space(SPARK)
    engine = make_engine("sim", sim_env={"TUNER_SIM_TIME_SCALE": "300",
                                         mark.split("=")[0]: mark.split("=")[1]})
    opts = TrialOptions(workdir=tmp_path / "runs", workload=space.spec.workload.model_copy(
        update={"questions": 4}), gsm8k=str(GSM8K_DIR), startup_timeout_s=120)
    settings = SweepSettings(study_name="s", location=locate(str(tmp_path / "s.db"), "s"),
                             trials=10, seed=1, deadline_s=300)      # 8 search, 2 finals
    driver: dict[str, Any] = {}
    killed: list[int] = []
    cls = _killing(LocalRunner if runner == "local" else RayRunner, mark, driver, killed)
    driver["d"] = Driver(space, engine, opts, settings, lambda: cls(slots=1) if runner ==
                         "local" else cls(address=None, gpu=False, slots=1))
    rows = driver["d"].run().summaries()
    assert len(killed) == 2, killed
    assert [(r.number, r.reason) for r in rows if r.number in killed] == [
        (n, "worker_lost") for n in killed]
    assert [r.number for r in rows if r.state == "WAITING"] == []
    assert all(r.state in ("COMPLETE", "FAIL") for r in rows), [(r.number, r.state)
                                                                 for r in rows]
    assert sum(r.launched for r in rows) == 10                # the budget, spent
    finals = [r for r in rows if r.role.value == "remeasure" and r.state == "COMPLETE"]
    assert finals, "no finals launch was measured"
