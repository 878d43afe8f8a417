"""Trials in local processes, without Ray (``tuner sweep --ray-address none``).

Each job runs in a fresh process (``spawn``); a cancel kills that process and every
descendant (its server included); a process that dies without answering is ``worker_lost``,
and the server it left (found by its ``TUNER_LOCAL_JOB`` tag) is killed too.
For one machine whose trials should not pay Ray's start-up and memory (about 0.6 GiB).
"""

from __future__ import annotations

import contextlib
import dataclasses
import multiprocessing as mp
import uuid
from multiprocessing.connection import Connection
from multiprocessing.connection import wait
from typing import Any
from typing import cast

import psutil

from tuner.processes import secrets_withheld
from tuner.sweep import _reaper
from tuner.sweep._base import Outcome
from tuner.sweep._base import TrialJob
from tuner.sweep._base import TrialRunner
from tuner.sweep._base import execute
from tuner.sweep._reaper import kill_processes
from tuner.sweep._reaper import tagged_processes
from tuner.trial import TrialResult


def _child(job: TrialJob, conn: Connection) -> None:
    import signal

    # Ctrl-C reaches the whole process group: the driver stops this job itself, so the
    # child must not die with a stray "Process SpawnProcess-2:" traceback. A handler, not
    # SIG_IGN: exec resets it, so the servers this job starts keep the default. Unless the
    # driver itself ignores Ctrl-C (started so: a script's background job), whose SIG_IGN
    # this process inherited: then the job and its servers ignore it too (it survives
    # exec), for the driver goes on and would record the server's death as a crash.
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, lambda signum, frame: None)
    try:
        conn.send(("result", execute(job)))
    except Exception as exc:  # a bug in the trial code: reported, never silent
        conn.send(("error", f"{exc.__class__.__name__}: {exc}"))
    finally:
        conn.close()


#: Env var naming the job that started a server: what a dead job process leaves behind is
#: found by it (its servers are re-parented once the job process is gone).
JOB_ENV = "TUNER_LOCAL_JOB"


def _kill_job(pid: int | None, tag: str) -> None:
    procs: list[psutil.Process] = []
    if pid is not None:
        with contextlib.suppress(psutil.NoSuchProcess):
            root = psutil.Process(pid)
            procs = [root, *root.children(recursive=True)]
    procs += tagged_processes((f"{JOB_ENV}={tag}".encode(),))
    kill_processes(procs)


class LocalRunner(TrialRunner):
    """Trials in local processes (no Ray). A watcher started in its own session ends the
    trial processes and their servers if the driver is killed (``_reaper``); the driver tags
    servers with :attr:`node_id` for it."""

    def __init__(self, slots: int = 1, *, reaper: bool = True) -> None:
        self.slots = slots
        self._ctx = mp.get_context("spawn")
        self._jobs: dict[int, tuple[Any, Connection, str]] = {}
        self.node_id = f"local-{uuid.uuid4().hex}"
        self._reaper = _reaper.start(self.node_id) if reaper else None

    @property
    def inflight(self) -> list[int]:
        return list(self._jobs)

    def submit(self, job: TrialJob) -> None:
        tag = uuid.uuid4().hex
        job = dataclasses.replace(job, options=dataclasses.replace(
            job.options, server_env={**job.options.server_env, JOB_ENV: tag}))
        recv, send = self._ctx.Pipe(duplex=False)
        proc = self._ctx.Process(target=_child, args=(job, send), daemon=False)
        with secrets_withheld():             # spawn copies the environment: not the study's
            proc.start()                     # credentials (PGPASSWORD...)
        send.close()
        self._jobs[job.key] = (proc, recv, tag)

    def poll(self, timeout: float) -> list[Outcome]:
        if not self._jobs:
            return []
        by_conn = {conn: key for key, (_, conn, _) in self._jobs.items()}
        ready = wait(list(by_conn), timeout=timeout)
        out = []
        for ready_conn in ready:
            conn = cast("Connection", ready_conn)
            key = by_conn[conn]
            proc, _, tag = self._jobs.pop(key)
            try:
                kind, payload = conn.recv()
            except (EOFError, OSError):
                proc.join(timeout=5)
                _kill_job(None, tag)              # its server outlived it
                out.append(Outcome(key, "worker_lost",
                                   detail=f"trial process exited with {proc.exitcode}"))
                continue
            proc.join(timeout=30)
            if kind == "result":
                out.append(Outcome(key, "result", result=TrialResult.model_validate(payload)))
            else:
                out.append(Outcome(key, "error", detail=payload))
        return out

    def cancel(self, key: int) -> None:
        entry = self._jobs.pop(key, None)
        if entry is None:
            return
        proc, conn, tag = entry
        _kill_job(proc.pid, tag)
        proc.join(timeout=5)
        conn.close()

    def close(self) -> None:
        for key in list(self._jobs):
            self.cancel(key)
        if self._reaper is not None:      # a clean exit: nothing left for it to do
            self._reaper.kill()
            self._reaper.wait(timeout=5)
            self._reaper = None
