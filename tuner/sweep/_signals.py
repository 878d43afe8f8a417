"""SIGTERM stops a sweep as Ctrl-C does: the trials in flight are stopped, their
configurations queued again, nothing is left running, and the process exits 143 (a service
manager's stop, a ``kill``, a scheduler's pre-emption are not crashes)."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING


if TYPE_CHECKING:
    from types import FrameType


class Terminated(KeyboardInterrupt):
    """Raised in the main thread by SIGTERM; handled wherever Ctrl-C is."""


_received: list[int] = []


def terminated(exc: BaseException | None = None) -> bool:
    """Whether the stop under way is SIGTERM's (a library between the handler and the
    caller, Ray's ``wait``, may re-raise it as a plain KeyboardInterrupt)."""
    return isinstance(exc, Terminated) or bool(_received)


def _raise(signum: int, frame: FrameType | None) -> None:
    _received.append(signum)
    raise Terminated()


def stop_on_sigterm() -> None:
    """Make SIGTERM raise :class:`Terminated` in the main thread. Called at the start and
    again once the runner is up (Ray's ``init`` installs handlers of its own)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _raise)


def hold_stops() -> Callable[[], None]:
    """Ignore SIGINT and SIGTERM while a stop cleans up (a second Ctrl-C once killed the
    driver mid-clean-up); returns what restores the handlers."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    old = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}

    def restore() -> None:
        for s, handler in old.items():
            signal.signal(s, handler)
    return restore
