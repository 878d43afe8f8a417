"""The TrialRunner contract (:mod:`tuner.sweep`'s ``TrialRunner``) as a test suite.

A subclass provides two fixtures: ``runner`` (a fresh runner with at least one slot) and
``make_job`` (``make_job(tmp_path, key, hang=False) -> (TrialJob, tag)``: a quick trial whose
server carries ``TUNER_OWNER=tag`` in its environment; ``hang=True`` makes a server that
never becomes ready).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

from tuner.sweep import Outcome
from tuner.sweep import TrialJob
from tuner.sweep import TrialRunner


#: ``make_job(tmp_path, key, hang=False)`` -> a job and the tag its server carries
MakeJob = Callable[..., tuple[TrialJob, str]]


def servers_tagged(tag: str) -> list[psutil.Process]:
    """Processes whose environment holds ``TUNER_OWNER=tag``."""
    out = []
    for p in psutil.process_iter():
        try:
            with open(f"/proc/{p.pid}/environ", "rb") as fh:
                if f"TUNER_OWNER={tag}".encode() in fh.read().split(b"\0"):
                    out.append(p)
        except OSError:
            continue
    return out


def _alive(tag: str) -> list[psutil.Process]:
    return [p for p in servers_tagged(tag) if p.status() != psutil.STATUS_ZOMBIE]


def wait_for(pred: Callable[[], Any], timeout: float = 60.0) -> Any:
    """Poll ``pred`` until it returns something truthy; fail the test at ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError("timed out")


def drain(runner: TrialRunner, timeout: float = 120.0) -> list[Outcome]:
    """Every outcome until nothing is in flight."""
    out: list[Outcome] = []
    deadline = time.monotonic() + timeout
    while runner.inflight and time.monotonic() < deadline:
        out += runner.poll(timeout=0.5)
    return out


class RunnerContract:
    """Shared tests; see the module docstring for the fixtures a subclass provides."""

    def test_a_job_reports_its_result(self, runner: TrialRunner, make_job: MakeJob,
                                      tmp_path: Path) -> None:
        j, tag = make_job(tmp_path, 7)
        runner.submit(j)
        assert runner.inflight == [7]
        outs = drain(runner)
        assert [(o.key, o.kind) for o in outs] == [(7, "result")]
        assert outs[0].result is not None and outs[0].result.ok
        assert runner.inflight == [] and servers_tagged(tag) == []

    def test_cancel_ends_the_job_and_its_server(self, runner: TrialRunner, make_job: MakeJob,
                                                tmp_path: Path) -> None:
        j, tag = make_job(tmp_path, 3, hang=True)
        runner.submit(j)
        wait_for(lambda: servers_tagged(tag))
        runner.cancel(3)
        assert runner.inflight == []
        wait_for(lambda: not _alive(tag), timeout=30)
        assert runner.poll(timeout=1.0) == []

    def test_a_dead_worker_is_worker_lost(self, runner: TrialRunner, make_job: MakeJob,
                                          tmp_path: Path) -> None:
        j, tag = make_job(tmp_path, 5, hang=True)
        runner.submit(j)
        server = wait_for(lambda: servers_tagged(tag))[0]
        worker = server.parent()
        assert worker is not None
        worker.kill()
        outs = drain(runner, timeout=60)
        assert [(o.key, o.kind) for o in outs] == [(5, "worker_lost")]
        # the runner's clean-up (Ray's process group, the local job tag) ends the server
        wait_for(lambda: not _alive(tag), timeout=30)
