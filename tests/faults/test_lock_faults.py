"""``--break-lock`` against a driver that is alive on this host is refused (exit 2, one line,
the lock left to its holder): only a dead holder, or one on another host, is taken over.
Before, two drivers and two servers ran together (issue 24, item 4)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import optuna
import psutil
import pytest

from tests.conftest import GSM8K_DIR
from tests.conftest import SPARK
from tests.conftest import tuner_argv
from tuner.errors import UserError
from tuner.study._lock import KEY
from tuner.study._lock import DriverLock


STUDY = "ling-3.0-flash-dgx-spark"


@pytest.fixture
def holder() -> Iterator[subprocess.Popen[bytes]]:
    """A live process standing for a driver (sleeping)."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait(timeout=20)


def _study(tmp_path: Path) -> optuna.Study:
    return optuna.create_study(study_name=STUDY, storage=f"sqlite:///{tmp_path / 's.db'}",
                               directions=["minimize", "maximize"], load_if_exists=True)


def _lock_held_by(study: optuna.Study, pid: int, host: str | None = None) -> dict[str, object]:
    info: dict[str, object] = {
        "token": "their-token", "owner": f"someone@{host or socket.gethostname()}",
        "host": host or socket.gethostname(), "pid": pid,
        "pid_started": psutil.Process(pid).create_time(), "started": "2026-01-01T00:00:00",
        "lease_until": time.time() + 600}
    study.set_user_attr(KEY, info)
    return info


def test_break_lock_refuses_a_holder_alive_on_this_host(
        tmp_path: Path, holder: subprocess.Popen[bytes]) -> None:
    info = _lock_held_by(_study(tmp_path), holder.pid)
    proc = subprocess.run(tuner_argv(
        "sweep", str(SPARK), "--engine", "sim", "--gsm8k", str(GSM8K_DIR), "--storage",
        str(tmp_path / "s.db"), "--trials", "1", "--questions", "2", "--ray-address", "none",
        "--workdir", str(tmp_path / "runs"), "--break-lock"),
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"pid {holder.pid}" in proc.stderr and "alive" in proc.stderr
    study = _study(tmp_path)
    assert study.user_attrs[KEY] == info            # the holder keeps its lock
    assert study.get_trials() == []                 # and nothing was written


def test_break_lock_takes_over_a_dead_holder_or_one_on_another_host(
        tmp_path: Path, holder: subprocess.Popen[bytes]) -> None:
    study = _study(tmp_path)
    _lock_held_by(study, holder.pid)
    with pytest.raises(UserError, match="alive"):
        DriverLock(_study(tmp_path)).acquire(break_lock=True)
    _lock_held_by(study, holder.pid, host="another-host")     # cannot be checked from here
    other = DriverLock(_study(tmp_path))
    other.acquire(break_lock=True)
    assert other.current()["token"] == other.token  # type: ignore[index]
    _lock_held_by(study, holder.pid)
    holder.kill()
    holder.wait(timeout=20)                         # dead: broken as before
    mine = DriverLock(_study(tmp_path))
    mine.acquire(break_lock=True)
    assert mine.current()["token"] == mine.token  # type: ignore[index]
    assert mine.previous is not None and mine.previous["pid"] == holder.pid
