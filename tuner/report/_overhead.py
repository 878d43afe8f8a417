"""The night's launch overhead: how much of the machine time of a study's launches went on
starting servers (a cold Ling-3.0-flash start on a Spark takes minutes before the first
request; docs/trials.md, "Start-up time").

A launch is a trial that started a server (:attr:`tuner.study.TrialSummary.launched` with
a recorded start-up: a start-up that failed counts with the time it took; a launch the
unified-memory guard refused, a copied repeat or a lost run do not). Its machine time is
its ``total_s`` (start-up, evidence, warm-up, the workload and its regimes); its start-up,
``startup_s``, from the launch to healthy or to the start-up's failure. Against the
simulator both are simulated machine time (wall time x its time scale), and said to be.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from tuner.study import TrialSummary
from tuner.trial import clock_label


@dataclass(frozen=True)
class LaunchOverhead:
    launches: int
    startup_s: float              # machine seconds starting servers, summed
    total_s: float                # machine seconds of the launches, summed
    median_startup_s: float
    longest_startup_s: float
    simulated: bool
    twin: str | None = None

    @property
    def share(self) -> float:
        return self.startup_s / self.total_s if self.total_s > 0 else 0.0

    def sentence(self) -> str:
        """``launch overhead: 42 launches, 3.1 h of 9.8 h starting servers (32%) ...``."""
        clock = f" ({clock_label(True, self.twin)})" if self.simulated else ""
        return (f"launch overhead: {self.launches} launch{'es' if self.launches != 1 else ''}"
                f", {duration(self.startup_s)} of {duration(self.total_s)} starting servers "
                f"({self.share:.0%}); start-up median {duration(self.median_startup_s)}, "
                f"longest {duration(self.longest_startup_s)}{clock}")

    def as_dict(self) -> dict[str, Any]:
        return {"launches": self.launches, "startup_s": self.startup_s,
                "total_s": self.total_s, "share": self.share,
                "median_startup_s": self.median_startup_s,
                "longest_startup_s": self.longest_startup_s,
                "clock": clock_label(self.simulated, self.twin),
                "text": self.sentence()}


def duration(seconds: float) -> str:
    """``42 s``, ``7.9 min``, ``3.1 h``."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def launch_overhead(rows: list[TrialSummary], simulated: bool, twin: str | None = None
                    ) -> LaunchOverhead | None:
    """The overhead of ``rows``' launches; None when none recorded its start-up."""
    runs = [s for s in rows if s.launched and s.startup_s is not None and s.total_s
            and s.total_s >= s.startup_s]
    if not runs:
        return None
    starts = [float(s.startup_s or 0.0) for s in runs]
    return LaunchOverhead(launches=len(runs), startup_s=sum(starts),
                          total_s=sum(float(s.total_s or 0.0) for s in runs),
                          median_startup_s=statistics.median(starts),
                          longest_startup_s=max(starts), simulated=simulated, twin=twin)
