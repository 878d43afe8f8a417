"""A driver killed while Ray starts (issue 24, item 9): SIGKILL during ``ray.init`` once left
Ray's dashboard and runtime-env agents running for a minute, because the watcher that ends a
dead driver's processes started only after ``ray.init`` returned. It now starts first, and
every process of the local Ray instance carries the runner's owner tag."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from tests.conftest import GSM8K_DIR
from tests.conftest import SPARK
from tests.conftest import tuner_argv


pytestmark = pytest.mark.slow


def _owner(pid: int) -> str | None:
    """The ``TUNER_OWNER`` tag in a process's environment (read raw: Ray's titles overwrite
    the start of the block), or None."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            for entry in fh.read().split(b"\0"):
                if entry.startswith(b"TUNER_OWNER="):
                    return entry.split(b"=", 1)[1].decode()
    except OSError:
        return None
    return None


def _alive(pids: set[int]) -> list[int]:
    out = []
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                out.append(pid)
    return out


def test_a_driver_killed_while_ray_starts_leaves_no_ray_process(tmp_path: Path) -> None:
    driver = subprocess.Popen(
        tuner_argv("sweep", str(SPARK), "--engine", "sim", "--trials", "2", "--questions",
                   "4", "--gsm8k", str(GSM8K_DIR), "--storage", str(tmp_path / "s.db"),
                   "--workdir", str(tmp_path / "runs")),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path)
    gcs = None
    deadline = time.monotonic() + 180
    while gcs is None and time.monotonic() < deadline and driver.poll() is None:
        with contextlib.suppress(psutil.Error):
            gcs = next((p for p in psutil.Process(driver.pid).children(recursive=True)
                        if "gcs_server" in " ".join(p.cmdline())), None)
        time.sleep(0.02)
    assert gcs is not None, "Ray's GCS never started under the driver"
    # Read the tag while the GCS is certainly alive: once the driver dies, the watcher may
    # end the GCS before this test could read its environment (CI saw that race).
    tag = _owner(gcs.pid)
    assert tag is not None, "Ray's processes carry no owner tag: nothing can find them"
    seen = {p.pid for p in psutil.Process(driver.pid).children(recursive=True)}
    os.kill(driver.pid, signal.SIGKILL)                 # ray.init has not returned yet
    driver.wait()
    tagged: set[int] = set()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        tagged |= {p.pid for p in psutil.process_iter() if _owner(p.pid) == tag}
        if not _alive(seen | tagged):
            break
        time.sleep(0.5)
    assert not _alive(seen | tagged), [" ".join(psutil.Process(p).cmdline())[:80]
                                       for p in _alive(seen | tagged)]
