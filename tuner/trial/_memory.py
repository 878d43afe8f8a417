"""The unified-memory guard: never launch what would exhaust a unified-memory host, and stop
a server before the host runs out (docs/trials.md, "The unified-memory guard").

On a DGX Spark the GPU allocates from the host's 121 GiB; exhausting it wedges the driver
(``rmapiLockAcquire``, NVIDIA/open-gpu-kernel-modules#1358) instead of failing with an
out-of-memory error, and the night and the box are lost. So, on a unified-memory machine:

* **before each launch**, the engine predicts the launch's peak host memory
  (:meth:`tuner.engines.Engine.memory_need`: the memory fraction's budget, CUDA graphs,
  activation workspace, its processes) and the host's ``MemAvailable`` is read
  (:meth:`tuner.engines.Engine.launch_host`); a launch whose peak would leave less than the
  margin free is refused as ``would_exhaust_memory``, with both figures, and never started;
* **while it runs**, a watch reads ``MemAvailable`` every half second (and at the end of
  each phase) and stops the server (SIGTERM, then SIGKILL) once less than the margin is
  free: the trial fails ``would_exhaust_memory`` with the reading.

The margin is the space's ``machine.memory_margin_gib``, else 5% of the host's memory, at
least 4 GiB. A machine is unified when the space says so (``machine.unified_memory``), else
when its GPU is one (a GB10), else when the launch host's ``nvidia-smi`` reports no memory
of the GPU's own (NVML has none to report on unified memory).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from functools import cache

from pydantic import BaseModel

from tuner.engines import Engine
from tuner.engines import Host
from tuner.engines import LaunchPlan
from tuner.space import SearchSpace
from tuner.trial._server import TrialStopped


#: GPUs that allocate from the host's memory (docs/field-facts.md: the GB10)
UNIFIED_GPUS = ("GB10",)
MARGIN_SHARE = 0.05
MIN_MARGIN_GIB = 4.0
REASON = "would_exhaust_memory"


class MemoryRecord(BaseModel):
    """What the guard saw of one launch's host (GiB): before it, and while it ran."""

    source: str
    total_gib: float
    available_gib: float                 # MemAvailable just before the launch
    margin_gib: float
    predicted_peak_gib: float | None = None
    terms: dict[str, float] = {}         # the prediction's terms (tuner.engines.TERMS)
    notes: list[str] = []
    lowest_available_gib: float | None = None   # the watch's lowest reading
    stopped: bool = False                # the watch stopped the server


@cache
def _nvidia_smi_unified() -> bool:
    """Whether this host's ``nvidia-smi`` shows a GPU without memory of its own (a GB10:
    NVML reports no framebuffer on unified memory) or one named like a unified GPU."""
    import shutil
    import subprocess

    exe = shutil.which("nvidia-smi")
    if exe is None:
        return False
    try:
        out = subprocess.run([exe, "--query-gpu=name,memory.total",
                              "--format=csv,noheader,nounits"], capture_output=True,
                             text=True, timeout=15).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    for line in out.splitlines():
        name, _, total = line.partition(",")
        if any(g in name.upper() for g in UNIFIED_GPUS) or total.strip().lower() in (
                "[n/a]", "n/a", "[not supported]", "not supported"):
            return True
    return False


def unified_memory(space: SearchSpace) -> bool:
    """Whether ``space``'s machine allocates GPU memory from the host's."""
    m = space.spec.machine
    if m.unified_memory is not None:
        return m.unified_memory
    return any(g in m.gpu.upper() for g in UNIFIED_GPUS) or _nvidia_smi_unified()


def margin_gib(space: SearchSpace, total_gib: float) -> float:
    return space.spec.machine.memory_margin_gib or max(MIN_MARGIN_GIB,
                                                       MARGIN_SHARE * total_gib)


def before_launch(space: SearchSpace, engine: Engine, plan: LaunchPlan
                  ) -> tuple[Host | None, MemoryRecord | None, TrialStopped | None]:
    """On a unified-memory machine: (the launch's host, what the guard saw, the refusal
    when the launch would exhaust it); (None, None, None) elsewhere or when the host's
    memory cannot be read."""
    if not unified_memory(space):
        return None, None, None
    host = engine.launch_host(plan)
    now = host.read()
    if now is None:
        return None, None, None
    margin = margin_gib(space, now.total_gib)
    need = engine.memory_need(space, plan, available_gib=now.available_gib,
                              visible_gib=space.spec.machine.memory_gib)
    record = MemoryRecord(source=now.source, total_gib=now.total_gib,
                          available_gib=now.available_gib, margin_gib=margin,
                          predicted_peak_gib=need.peak_gib if need else None,
                          terms=need.terms if need else {},
                          notes=need.notes if need else ["the engine predicts no peak"])
    if need is None or need.peak_gib <= now.available_gib - margin:
        return host, record, None
    return host, record, TrialStopped(REASON, (
        f"predicted peak {need.peak_gib:.1f} GiB of host memory, "
        f"{now.available_gib - margin:.1f} GiB usable ({now.available_gib:.1f} GiB "
        f"MemAvailable of {now.total_gib:.1f}, less a {margin:.1f} GiB margin): not launched. "
        f"Peak = {need.describe()} ({'; '.join(need.notes)}); read from {now.source}"))


class MemoryWatch:
    """Reads ``host`` every ``poll_s`` wall seconds while a server runs and calls ``stop``
    (once) when less than the record's margin is free. :meth:`check` reads once more and
    raises the failure when it did: call it at the end of each phase, so that memory that
    grew between two readings is never missed."""

    def __init__(self, host: Host, record: MemoryRecord, stop: Callable[[], None], *,
                 scale: Callable[[], float], poll_s: float = 0.5) -> None:
        self.host, self.record, self._stop, self._scale = host, record, stop, scale
        self.poll_s = poll_s
        self.tripped: str | None = None
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._t0 = time.monotonic()
        self._thread = threading.Thread(target=self._run, daemon=True, name="memory-watch")

    def start(self) -> None:
        self._t0 = time.monotonic()
        self._thread.start()

    def close(self) -> None:
        self._done.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._done.wait(self.poll_s):
            self._read()

    def _read(self) -> None:
        now = self.host.read()
        if now is None:
            return
        with self._lock:
            r = self.record
            low = r.lowest_available_gib
            r.lowest_available_gib = now.available_gib if low is None else min(
                low, now.available_gib)
            if self.tripped is not None or now.available_gib >= r.margin_gib:
                return
            at = (time.monotonic() - self._t0) * self._scale()
            self.tripped = (
                f"host memory fell to {now.available_gib:.1f} GiB MemAvailable, under the "
                f"{r.margin_gib:.1f} GiB margin, {at:.0f} s into the launch: the server was "
                f"stopped before the host ran out (predicted peak "
                f"{_gib(r.predicted_peak_gib)}, {r.available_gib:.1f} GiB available before "
                f"the launch; read from {now.source})")
            r.stopped = True
        self._stop()

    def failure(self) -> TrialStopped | None:
        return TrialStopped(REASON, self.tripped) if self.tripped else None

    def check(self) -> None:
        """Read once more; raise the failure when the watch stopped the server."""
        self._read()
        stop = self.failure()
        if stop is not None:
            raise stop


def _gib(v: float | None) -> str:
    return "unknown" if v is None else f"{v:.1f} GiB"
