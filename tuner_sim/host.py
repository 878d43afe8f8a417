"""The simulated machine's host memory: unified memory, as a meminfo file.

On a unified-memory machine (the GB10) the GPU allocates from the host's memory, so what a
server loads shows in the host's ``MemAvailable``. Each simulated launch runs on its own
simulated machine whose ``/proc/meminfo`` is a file (``TUNER_SIM_HOST_MEMINFO``):

* ``python -m tuner_sim host PATH`` powers the machine on: it writes the idle host of the
  machine profile (``TUNER_SIM_MACHINE``), less ``TUNER_SIM_HOST_BUSY_GIB`` that something
  else already holds (a server left behind, a build), so a client reads it before the
  launch as it reads a real host's;
* the server takes its share step by step as it starts (its processes and CUDA context,
  the weights, the memory pool, the activation workspace); when it stops, its machine is
  powered off (the file removed);
* below the profile's ``wedge_below_gib`` the machine wedges, as a GB10 does
  (NVIDIA/open-gpu-kernel-modules#1358: no out-of-memory error, nothing answers).

A machine whose GPU has memory of its own (no ``host`` in its profile) writes nothing.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from tuner_sim.profiles import HostMemory


KB_PER_GIB = 1024 * 1024
GB_PER_GIB = 1024**3 / 1e9


def _write(path: Path, total_gib: float, available_gib: float, note: str) -> None:
    """A meminfo file, replaced at once (a reader never sees half of it)."""
    total, avail = round(total_gib * KB_PER_GIB), round(max(0.0, available_gib) * KB_PER_GIB)
    text = (f"MemTotal:       {total:>10} kB\nMemFree:        {avail:>10} kB\n"
            f"MemAvailable:   {avail:>10} kB\n# tuner_sim host: {note}\n")
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)


def read_available(path: Path) -> float | None:
    try:
        for line in path.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return float(line.split()[1]) / KB_PER_GIB
    except (OSError, ValueError, IndexError):
        return None
    return None


def power_on(path: Path, spec: HostMemory, busy_gib: float = 0.0) -> None:
    """The idle machine, less ``busy_gib`` held by something else."""
    path.parent.mkdir(parents=True, exist_ok=True)
    _write(path, spec.memory_gib, spec.memory_gib - spec.idle_used_gib - busy_gib,
           f"idle{f', {busy_gib:g} GiB held by something else' if busy_gib else ''}")


class SimHost:
    """One server's share of its simulated machine's memory, written to ``path``."""

    def __init__(self, path: Path, spec: HostMemory) -> None:
        self.path, self.spec = path, spec
        if read_available(path) is None:        # started without a client powering it on
            power_on(path, spec)
        self.base_gib = read_available(path) or spec.memory_gib - spec.idle_used_gib
        self.held: dict[str, float] = {}

    @property
    def available_gib(self) -> float:
        return self.base_gib - sum(self.held.values())

    @property
    def wedged(self) -> bool:
        return self.available_gib < self.spec.wedge_below_gib

    def take(self, what: str, gib: float) -> float:
        """Hold ``gib`` more for ``what``; the host's MemAvailable after it."""
        self.held[what] = self.held.get(what, 0.0) + max(0.0, gib)
        parts = ", ".join(f"{k} {v:.2f}" for k, v in self.held.items())
        _write(self.path, self.spec.memory_gib, self.available_gib,
               f"pid {os.getpid()} holds {sum(self.held.values()):.2f} GiB ({parts})")
        return self.available_gib

    def release(self) -> None:
        """The server stopped, and its machine with it (one machine per launch): what it
        held is free again, and its meminfo file is gone."""
        self.held.clear()
        with contextlib.suppress(OSError):
            self.path.unlink()


def attach(env: dict[str, str], spec: HostMemory | None) -> SimHost | None:
    """The server's host, when its machine has unified memory and a meminfo file is set."""
    path = env.get("TUNER_SIM_HOST_MEMINFO")
    if spec is None or not path:
        return None
    return SimHost(Path(path), spec)


def main(path: str) -> int:
    """``python -m tuner_sim host PATH``: power the machine of ``TUNER_SIM_MACHINE`` on."""
    import sys

    from tuner_sim.profiles import load_machine

    try:
        machine = load_machine(os.environ.get("TUNER_SIM_MACHINE", "dgx-spark"))
        busy = float(os.environ.get("TUNER_SIM_HOST_BUSY_GIB") or 0.0)
    except (LookupError, ValueError) as exc:
        print(f"error: {exc.args[0] if exc.args else exc}", file=sys.stderr)
        return 2
    target = Path(path)
    if machine.host is None:                # memory of its own: no host to show
        with contextlib.suppress(OSError):
            target.unlink()
        return 0
    power_on(target, machine.host, busy)
    return 0
