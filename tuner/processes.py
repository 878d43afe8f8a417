"""Process identity, shared by the driver lock and the reaper (no heavy imports: the reaper
runs as its own small process)."""

from __future__ import annotations

import psutil


def process_alive(pid: int, started: float | None) -> bool:
    """Whether process ``pid`` runs and is the one that started at ``started`` (epoch s;
    None: any), not a later process that reused the number."""
    try:
        p = psutil.Process(pid)
        return p.status() != psutil.STATUS_ZOMBIE and (
            started is None or abs(p.create_time() - started) < 2.0)
    except (psutil.NoSuchProcess, ValueError):
        return False
