"""The memory of the host a server runs on, as the unified-memory guard reads it.

On a unified-memory machine (a DGX Spark's GB10) the GPU allocates from the host's memory,
so what the guard compares a launch with is the host's ``MemAvailable`` (``/proc/meminfo``:
what can be allocated without swapping, page cache included), never ``MemTotal``: a server
left behind, a build or a desktop take their share of it.

* :class:`Host` reads one meminfo file: the kernel's ``/proc/meminfo`` for a real server.
* :class:`SimulatedHosts` is the simulator's: each launch runs on its own simulated machine
  whose meminfo file the simulator writes as it loads weights and allocates its pools
  (docs/simulator.md, "Host memory"). Before the launch, the simulator's ``host`` command
  powers that machine on (writes its idle meminfo), so the tool reads it exactly as it reads
  a real host's.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel


GIB_KB = 1024 * 1024          # /proc/meminfo counts kB (KiB)
PROC_MEMINFO = "/proc/meminfo"


class HostMemory(BaseModel):
    """One reading of a host's memory, GiB."""

    total_gib: float
    available_gib: float
    #: the file it was read from (``/proc/meminfo`` or a simulated host's)
    source: str


def read_meminfo(path: str | Path) -> HostMemory | None:
    """``MemTotal`` and ``MemAvailable`` of a meminfo file; None when it cannot be read or
    lacks them (a kernel before 3.14 has no ``MemAvailable``)."""
    fields: dict[str, float] = {}
    try:
        text = Path(path).read_text()
    except OSError:
        return None
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if key in ("MemTotal", "MemAvailable") and parts:
            try:
                fields[key] = float(parts[0]) / GIB_KB
            except ValueError:
                return None
    if "MemTotal" not in fields or "MemAvailable" not in fields:
        return None
    return HostMemory(total_gib=fields["MemTotal"], available_gib=fields["MemAvailable"],
                      source=str(path))


#: What each term of a :class:`MemoryNeed` is, in words (the guard's message).
TERMS = {"weights": "weights", "draft": "draft weights",
         "kv_pool": "KV pool and state (the rest of the fraction's budget)",
         "budget": "weights, KV pool and state (the fraction's budget)",
         "cuda_graphs": "CUDA graphs", "workspace": "activation workspace",
         "processes": "server processes"}


class MemoryNeed(BaseModel):
    """A launch's predicted peak host memory: GiB by term (:data:`TERMS`), and how the
    engine arrived at them."""

    terms: dict[str, float]
    notes: list[str] = []

    @property
    def peak_gib(self) -> float:
        return sum(self.terms.values())

    def describe(self) -> str:
        """``weights 64.9 + KV pool and state ... 15.9 + ... GiB``."""
        return " + ".join(f"{TERMS.get(k, k)} {v:.1f}" for k, v in self.terms.items()) + " GiB"


@dataclass(frozen=True)
class Host:
    """The host one launch runs on, read through its meminfo file."""

    meminfo: str = PROC_MEMINFO

    def read(self) -> HostMemory | None:
        return read_meminfo(self.meminfo)


@dataclass(frozen=True)
class SimulatedHosts:
    """One simulated machine per launch, its meminfo in ``folder`` (named by the launch's
    port: launches running at once never share one). ``boot`` is the simulator's command
    that powers a machine on: it is run with the launch's environment and the file's path;
    the server is told the path in the env var ``env_var`` (added to the launch's plan)."""

    folder: str
    boot: tuple[str, ...]
    env_var: str

    def meminfo(self, port: int) -> str:
        return os.path.join(self.folder, f"host-{port}.meminfo")

    def power_on(self, port: int, env: dict[str, str]) -> Host:
        """The simulated machine of the launch on ``port``, idle, before its server starts
        (an unreadable one reads as unknown: the guard then says it could not check)."""
        path = self.meminfo(port)
        os.makedirs(self.folder, exist_ok=True)
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            subprocess.run([*self.boot, path], env={**os.environ, **env}, timeout=120,
                           stdin=subprocess.DEVNULL, capture_output=True, check=False)
        return Host(path)
