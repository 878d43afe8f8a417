"""One driver per study: a lock with owner, host, pid and a lease, kept in the study itself.

Kept as a study user attribute, so it works for every storage (SQLite, PostgreSQL, a
journal file) without a shared file system. A lock is stale when its lease has run out, or
when its pid is gone on this same host; a stale lock is taken over, a live one refused.
``--break-lock`` takes over a live lock only when its holder runs on another host (whose
pid cannot be checked from here): a holder alive on this host is refused even then.
"""

from __future__ import annotations

import getpass
import os
import socket
import time
import uuid
from datetime import UTC
from datetime import datetime
from typing import TYPE_CHECKING
from typing import Any

import psutil

from tuner.errors import UserError
from tuner.processes import process_alive


if TYPE_CHECKING:
    import optuna


KEY = "tuner:driver_lock"


class LockHeld(UserError):
    """Another live driver owns the study."""

    exit_code = 1


def _here(info: dict[str, Any]) -> bool:
    """Whether the lock was taken on this host (its pid can be checked here)."""
    return info.get("host") == socket.gethostname()


def _alive_here(info: dict[str, Any]) -> bool:
    if not _here(info):
        return True        # cannot tell: trust the lease
    started = info.get("pid_started")
    return process_alive(int(info.get("pid", -1)), float(started) if started else None)


def is_stale(info: dict[str, Any], now: float | None = None) -> bool:
    now = time.time() if now is None else now
    return float(info.get("lease_until", 0)) < now or not _alive_here(info)


class DriverLock:
    def __init__(self, study: optuna.Study, *, lease_s: float = 60.0) -> None:
        self.study = study
        self.lease_s = lease_s
        self.token = uuid.uuid4().hex
        self.previous: dict[str, Any] | None = None
        self._renewed = 0.0
        self.extra: dict[str, Any] = {}

    def _info(self) -> dict[str, Any]:
        me = psutil.Process(os.getpid())
        return {"token": self.token, "owner": f"{getpass.getuser()}@{socket.gethostname()}",
                "host": socket.gethostname(), "pid": os.getpid(),
                "pid_started": me.create_time(),
                "started": datetime.now(UTC).isoformat(timespec="seconds"),
                "lease_until": time.time() + self.lease_s, **self.extra}

    def current(self) -> dict[str, Any] | None:
        info = self.study.user_attrs.get(KEY)
        return info if isinstance(info, dict) and info else None

    def acquire(self, *, break_lock: bool = False) -> None:
        cur = self.current()
        if cur is not None and break_lock and not is_stale(cur) and _here(cur):
            raise UserError(
                f"--break-lock: study {self.study.study_name!r} is being run by pid "
                f"{cur.get('pid')} on this host ({cur.get('host')}), which is alive; "
                "--break-lock only takes over from a driver that died (or runs on another "
                f"host). Stop it first (kill {cur.get('pid')}), or wait for it to finish")
        if cur is not None and not break_lock and not is_stale(cur):
            until = datetime.fromtimestamp(float(cur["lease_until"]), UTC)
            raise LockHeld(
                f"study {self.study.study_name!r} is being run by {cur.get('owner')} (pid "
                f"{cur.get('pid')} on {cur.get('host')}, since {cur.get('started')}; lease "
                f"until {until:%H:%M:%S} UTC). Wait for it to finish or stop it; if it is dead "
                f"on another host, pass --break-lock.")
        self.previous = cur
        self.study.set_user_attr(KEY, self._info())
        time.sleep(0.3)
        mine = self.current()
        if mine is None or mine.get("token") != self.token:
            raise LockHeld(f"another driver took study {self.study.study_name!r} at the same "
                            f"moment ({(mine or {}).get('owner')}); not starting")
        self._renewed = time.monotonic()

    def renew(self, force: bool = False) -> None:
        if force or time.monotonic() - self._renewed > self.lease_s / 4:
            cur = self.current()
            if cur is not None and cur.get("token") != self.token:
                raise UserError("the driver lock was taken over by "
                                f"{cur.get('owner')} (pid {cur.get('pid')}); stopping")
            self.study.set_user_attr(KEY, {**self._info(), "started": (cur or {}).get(
                "started", self._info()["started"])})
            self._renewed = time.monotonic()

    def release(self) -> None:
        cur = self.current()
        if cur is not None and cur.get("token") == self.token:
            self.study.set_user_attr(KEY, {})
