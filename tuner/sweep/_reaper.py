"""Clean-up of a local Ray instance whose driver died (SIGKILL, OOM kill, a closed laptop).

Ray removes most of a session when its driver dies, but the dashboard and runtime-env agents
survive and ignore SIGTERM (docs/optuna-ray-facts.md, Ray 4), and a trial server whose raylet
was killed may survive too. The driver starts this watcher in its own session; when the
driver's pid is gone it kills every descendant of the driver it saw while the driver lived
(Ray's GCS, raylet, agents, workers, trial servers) and whatever still carries the node's
id in its environment (``RAY_NODE_ID`` for Ray's processes, ``TUNER_OWNER`` for the trial
servers the sweep started), then exits.

    python -m tuner.sweep._reaper DRIVER_PID DRIVER_START_TIME NODE_ID
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time

import psutil

from tuner.processes import child_env
from tuner.processes import process_alive


def _env_has(pid: int, entries: tuple[bytes, ...]) -> bool:
    """Whether the process's environment holds one of ``entries``. Read raw: Ray's process
    titles overwrite the start of the environment block, which defeats psutil's parser."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            env = set(fh.read().split(b"\0"))
    except OSError:
        return False
    return any(e in env for e in entries)


def tagged_processes(entries: tuple[bytes, ...]) -> list[psutil.Process]:
    """Processes whose environment holds one of ``entries`` (``b"NAME=value"``), and their
    descendants."""
    found: dict[int, psutil.Process] = {}
    for p in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            if p.pid != os.getpid() and _env_has(p.pid, entries):
                found[p.pid] = p
                for child in p.children(recursive=True):
                    found[child.pid] = child
    return list(found.values())


def node_processes(node_id: str) -> list[psutil.Process]:
    return tagged_processes((f"RAY_NODE_ID={node_id}".encode(),
                             f"TUNER_OWNER={node_id}".encode()))


def _gone(p: psutil.Process) -> bool:
    """Dead: no such process, or a zombie (killed, not yet reaped: in a container whose
    pid 1 never reaps, a killed orphan stays a zombie; waiting for it would wait for ever)."""
    try:
        return p.status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return True


def kill_processes(procs: list[psutil.Process], timeout: float = 5.0) -> int:
    """SIGKILL ``procs``; wait (at most ``timeout`` s) until each is dead or a zombie."""
    for p in procs:
        with contextlib.suppress(psutil.Error):
            p.kill()
    deadline = time.monotonic() + timeout
    while any(not _gone(p) for p in procs) and time.monotonic() < deadline:
        time.sleep(0.05)
    return len(procs)


def kill_node(node_id: str) -> int:
    return kill_processes(node_processes(node_id))


def _tree(pid: int) -> dict[int, float]:
    """pid -> create time of every descendant of ``pid`` (Ray's GCS, raylet, agents,
    workers and the trial servers under them)."""
    out: dict[int, float] = {}
    with contextlib.suppress(psutil.Error):
        for child in psutil.Process(pid).children(recursive=True):
            with contextlib.suppress(psutil.Error):
                if child.pid != os.getpid():
                    out[child.pid] = child.create_time()
    return out


def snapshot_processes(snapshot: dict[int, float]) -> list[psutil.Process]:
    """The processes of ``snapshot`` (pid -> create time) still running as themselves."""
    procs = []
    for pid, created in snapshot.items():
        with contextlib.suppress(psutil.Error):
            p = psutil.Process(pid)
            if abs(p.create_time() - created) < 0.5:
                procs.append(p)
    return procs


def watch(pid: int, started: float, node_id: str, poll_s: float = 0.5) -> None:
    seen: dict[int, float] = {}
    while process_alive(pid, started):
        seen.update(_tree(pid))
        time.sleep(poll_s)
    time.sleep(1.0)   # let Ray's own clean-up go first
    # one kill for all: what was seen while the driver lived, and what carries the node's
    # tag (a server started after the last look); waiting on the first before the second
    # let a young server outlive the reaper's deadline
    kill_processes(snapshot_processes(seen) + node_processes(node_id))
    for _ in range(5):  # a worker killed mid-spawn can still start a child: sweep again
        if kill_node(node_id) == 0:
            time.sleep(0.5)
            if kill_node(node_id) == 0:
                break
        time.sleep(0.5)


def start(node_id: str) -> subprocess.Popen[bytes]:
    """Start a watcher for the calling driver."""
    me = psutil.Process(os.getpid())
    return subprocess.Popen(
        [sys.executable, "-m", "tuner.sweep._reaper", str(me.pid), repr(me.create_time()),
         node_id], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True, env=child_env())


if __name__ == "__main__":
    watch(int(sys.argv[1]), float(sys.argv[2]), sys.argv[3])
