"""Running untrusted Python (a model's completion and its tests) in a sandboxed process.

Each program runs in a fresh ``python -I -S -B`` process (``_sandbox_child.py``) in its own
temporary folder and its own session, under kernel limits (address space, CPU seconds,
file size, processes, open files), a wall-clock timeout and a Python audit hook; where
``unshare`` works, also in its own network namespace (no network: only a loopback that is
down) and PID namespace (every process it starts dies with it); started as root, it drops
to uid/gid 65534. On a timeout the whole process group is killed, and every descendant
still alive; the folder is removed after. docs/trials.md ("The sandbox") says what each
layer stops and what it does not.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import psutil

from tuner.errors import UserError


CHILD = Path(__file__).with_name("_sandbox_child.py")
#: the unprivileged user a root caller's programs run as (``nobody``)
NOBODY = 65534


@dataclass(frozen=True)
class SandboxLimits:
    """What one program may use. CPU seconds stop a busy loop (SIGXCPU), the wall clock a
    sleeping one."""

    wall_s: float = 20.0
    cpu_s: int = 10
    memory_mb: int = 1024
    file_mb: int = 16
    #: processes (threads count) beyond those its user already runs
    processes: int = 16
    open_files: int = 64


@dataclass(frozen=True)
class Isolation:
    """How programs are kept apart here (found once per process, :func:`isolation`)."""

    #: the command put before ``python`` (``unshare ...``), empty when none works
    prefix: tuple[str, ...]
    #: ``net``, ``pid`` when the prefix gives them
    namespaces: tuple[str, ...]
    #: the uid/gid programs run as when the caller is root (None: the caller's)
    uid: int | None

    def describe(self) -> str:
        parts = [f"{n} namespace" for n in self.namespaces] or ["no namespaces"]
        if self.uid is not None:
            parts.append(f"uid {self.uid}")
        return ", ".join(parts)


@dataclass(frozen=True)
class SandboxRun:
    """One program's outcome: ``passed`` only when it ran to its last line and exited 0."""

    status: Literal["passed", "failed", "timed_out", "killed"]
    #: the last line of its error output, or why it was stopped
    detail: str
    #: its folder (removed by now): what a check for leftovers looks for
    folder: str

    @property
    def passed(self) -> bool:
        return self.status == "passed"


@functools.cache
def isolation() -> Isolation:
    """The strongest isolation that runs a program here, tried in turn: namespaces where
    ``unshare`` makes them (root: directly; another user: inside a user namespace), then
    none; as root, each with the drop to uid 65534. Found once per process, by running a
    program that must pass. Raises :class:`~tuner.errors.UserError` when none can run one
    (a code completion's failure must be the completion's, never the sandbox's)."""
    uid = NOBODY if os.geteuid() == 0 else None
    tried = []
    tool = shutil.which("unshare")
    if tool is not None:
        user = () if uid is not None else ("--user", "--map-root-user")
        tried.append(Isolation((tool, *user, "--net", "--pid", "--fork", "--kill-child"),
                               ("net", "pid"), uid))
    tried.append(Isolation((), (), uid))
    why = []
    for iso in tried:
        try:
            got = run_sandboxed("import math\nassert math.isqrt(49) == 7\n",
                                SandboxLimits(wall_s=60), iso)
        except OSError as exc:
            why.append(f"{iso.describe()}: {exc}")
            continue
        if got.passed:
            return iso
        why.append(f"{iso.describe()}: {got.status} {got.detail}".strip())
    raise UserError("the code workload's sandbox cannot run a program on this machine ("
                    + "; ".join(why) + ")")


def _tasks_of(uid: int) -> int:
    """Processes and threads ``uid`` runs now (what RLIMIT_NPROC counts)."""
    n = 0
    for p in psutil.process_iter(["uids", "num_threads"]):
        uids, threads = p.info.get("uids"), p.info.get("num_threads")
        if uids is not None and uids.real == uid:
            n += threads or 1
    return n


def run_sandboxed(program: str, limits: SandboxLimits | None = None,
                  iso: Isolation | None = None) -> SandboxRun:
    """Run ``program`` (Python source) in a fresh sandboxed process; its outcome."""
    limits = limits or SandboxLimits()
    iso = isolation() if iso is None else iso
    folder = tempfile.mkdtemp(prefix="tuner-sandbox-")
    try:
        Path(folder, "program.py").write_text(program, encoding="utf-8")
        uid = iso.uid if iso.uid is not None else os.getuid()
        if iso.uid is not None:
            os.chown(folder, iso.uid, iso.uid)
        spec = {"memory_mb": limits.memory_mb, "cpu_s": limits.cpu_s,
                "file_mb": limits.file_mb, "open_files": limits.open_files,
                "nproc": _tasks_of(uid) + limits.processes + 1,
                "uid": iso.uid, "gid": iso.uid}
        return _run(folder, spec, limits, iso)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _run(folder: str, spec: dict[str, int | None], limits: SandboxLimits, iso: Isolation
         ) -> SandboxRun:
    nonce = secrets.token_hex(16)
    argv = [*iso.prefix, sys.executable, "-I", "-S", "-B", str(CHILD), folder,
            json.dumps(spec)]
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": folder, "TMPDIR": folder}
    out_path, err_path = Path(folder, ".stdout"), Path(folder, ".stderr")
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=out, stderr=err,
                                cwd=folder, env=env, start_new_session=True)
    timed_out = False
    try:
        try:
            assert proc.stdin is not None
            proc.stdin.write(f"{nonce}\n".encode())
            proc.stdin.close()
        except BrokenPipeError:
            pass
        try:
            proc.wait(timeout=limits.wall_s)
        except subprocess.TimeoutExpired:
            timed_out = True
    finally:
        _kill_all(proc)
        rc = proc.wait()
    if timed_out:
        return SandboxRun("timed_out", f"stopped after {limits.wall_s:g} s (wall clock)",
                          folder)
    last = _tail(err_path)
    sig = -rc if rc < 0 else rc - 128 if rc > 128 else 0
    if sig:
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        why = {"SIGXCPU": "its CPU limit"}.get(name)
        return SandboxRun("killed", f"killed by {name}" + (f" ({why})" if why else ""),
                          folder)
    if rc == 0 and _tail(out_path) == nonce:
        return SandboxRun("passed", "", folder)
    return SandboxRun("failed", last or f"exit status {rc} before its last line", folder)


def _kill_all(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the program's process group and every descendant still alive."""
    try:
        kids = psutil.Process(proc.pid).children(recursive=True)
    except psutil.Error:
        kids = []
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    for k in kids:
        with contextlib.suppress(psutil.Error):
            k.kill()
    psutil.wait_procs(kids, timeout=5)


def _tail(path: Path, limit: int = 4096) -> str:
    """The last non-empty line of a file's last ``limit`` bytes."""
    try:
        with open(path, "rb") as fh:
            fh.seek(max(0, path.stat().st_size - limit))
            lines = fh.read().decode(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1].strip()[:300] if lines else ""
