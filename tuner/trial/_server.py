"""Server lifecycle: start a LaunchPlan, wait until it is ready, stop its whole process tree.

The same for every engine (readiness and start-up failures through its
:class:`~tuner.engines.ServerProtocol`). The server runs in the caller's process group (not
a new session), so that when a Ray worker dies, Ray's process-group clean-up reaches the
server too (docs/sweep.md). Stopping is SIGTERM, then SIGKILL, of the server
and every descendant, then a check that the port is free and nothing survived.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import psutil

from tuner.engines import LaunchPlan
from tuner.engines import ServerProtocol
from tuner.processes import child_env


class TrialStopped(Exception):
    """A phase of a trial ended it: ``reason`` from the failure taxonomy, what happened, and
    the server log's tail."""

    def __init__(self, reason: str, message: str, log_tail: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.log_tail = log_tail


class StartupFailure(TrialStopped):
    """The server did not become ready."""


REDACTED = "***"


def redact(value: Any, secret: str | None) -> Any:
    """``value`` (text, or JSON-like data) with every occurrence of ``secret`` replaced."""
    if not secret:
        return value
    if isinstance(value, str):
        return value.replace(secret, REDACTED)
    if isinstance(value, dict):
        return {k: redact(v, secret) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v, secret) for v in value]
    return value


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def port_is_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex((host, port)) != 0


class ServerProcess:
    """One server started from ``plan``, its log captured to ``log_path``."""

    def __init__(self, plan: LaunchPlan, log_path: Path, protocol: ServerProtocol, *,
                 api_key: str | None = None, secret_argv: list[str] | None = None,
                 extra_env: dict[str, str] | None = None) -> None:
        """``secret_argv`` (the engine's way of passing ``api_key``) is added to the launch
        but never to the plan; the key is redacted from the log once the server stops."""
        self.plan = plan
        self.protocol = protocol
        self.extra_env = dict(extra_env or {})
        self.log_path = Path(log_path)
        self.api_key = api_key
        self.secret_argv = list(secret_argv or [])
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_at = 0.0
        self.ready_at: float | None = None
        self._tree: list[psutil.Process] = []

    @property
    def base_url(self) -> str:
        return self.plan.base_url

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        env = {**child_env(), **self.plan.env, **self.extra_env}   # no study secret
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen([*self.plan.argv, *self.secret_argv], env=env,
                                         stdout=log,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.started_at = time.monotonic()

    def log_tail(self, lines: int = 40) -> str:
        try:
            with self.log_path.open("rb") as fh:
                fh.seek(0, os.SEEK_END)
                size = fh.tell()
                fh.seek(max(0, size - 64 * 1024))
                text = fh.read().decode("utf-8", errors="replace")
        except OSError:
            return ""
        return redact("\n".join(text.splitlines()[-lines:]), self.api_key)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def wait_ready(self, timeout_s: float, poll_s: float = 0.2) -> float:
        """Block until the engine's health path answers 200; return the wall seconds it took.

        Raises :class:`StartupFailure` (``oom``, ``launch_error``, ``unsupported_knob``) the
        moment the process exits, or ``startup_timeout`` at the deadline.
        """
        assert self.proc is not None, "start() first"
        deadline = self.started_at + timeout_s
        with httpx.Client(timeout=5.0, headers=self.headers()) as client:
            while True:
                code = self.proc.poll()
                if code is not None:
                    tail = self.log_tail()
                    raise StartupFailure(self.protocol.classify_exit(tail), f"server exited "
                                         f"with code {code} during start-up: "
                                         f"{self.protocol.last_error_line(tail)}", tail)
                try:
                    if client.get(self.base_url + self.protocol.health_path).status_code == 200:
                        self.ready_at = time.monotonic()
                        return self.ready_at - self.started_at
                except httpx.HTTPError:
                    pass
                if time.monotonic() >= deadline:
                    tail = self.log_tail()
                    raise StartupFailure("startup_timeout", f"not ready after {timeout_s:.0f} s"
                                         f" (last log line: "
                                         f"{self.protocol.last_error_line(tail)})", tail)
                time.sleep(poll_s)

    def stop(self, grace_s: float = 10.0) -> None:
        """SIGTERM the server and its descendants, SIGKILL what is left after ``grace_s``."""
        if self.proc is None:
            return
        try:
            root = psutil.Process(self.proc.pid)
            tree = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            tree = []
        if tree or not self._tree:     # a second stop keeps what the first one saw
            self._tree = tree
        for p in tree:
            with contextlib.suppress(psutil.NoSuchProcess):
                p.terminate()
        _, alive = psutil.wait_procs(tree, timeout=grace_s)
        for p in alive:
            with contextlib.suppress(psutil.NoSuchProcess):
                p.kill()
        psutil.wait_procs(alive, timeout=5)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        self._redact_log()

    def _redact_log(self) -> None:
        """The server prints its arguments (the key among them): rewrite the log without."""
        if not self.api_key:
            return
        with contextlib.suppress(OSError):
            data = self.log_path.read_bytes()
            key = self.api_key.encode()
            if key in data:
                self.log_path.write_bytes(data.replace(key, REDACTED.encode()))

    def leftovers(self) -> list[str]:
        """What survived :meth:`stop`: live descendants or a still-bound port (empty: clean)."""
        out = []
        if self.proc is not None and self.proc.poll() is None:
            out.append(f"server pid {self.proc.pid} still running")
        for p in self._tree[1:]:
            with contextlib.suppress(psutil.NoSuchProcess):
                if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                    out.append(f"child pid {p.pid} still running")
        if not port_is_free(self.plan.host, self.plan.port):
            out.append(f"port {self.plan.port} still accepting connections")
        return out
