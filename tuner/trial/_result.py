"""``TrialResult``: everything one trial learnt, as versioned JSON.

Failure reasons come from a fixed taxonomy (docs/trials.md): ``launch_error``,
``startup_timeout``, ``oom``, ``crashed``, ``unsupported_knob``, ``effect_mismatch``,
``bench_error``, ``worker_lost``, ``cancelled``, ``would_exhaust_memory`` (the
unified-memory guard refused the launch or stopped its server); a trial stopped early
(status ``pruned``) says why: ``dominated`` or ``collapsed``. All durations are machine time.
"""

from __future__ import annotations

from typing import Any
from typing import Literal

from pydantic import BaseModel
from pydantic import Field

from tuner.engines import LaunchPlan
from tuner.trial._evidence import KnobCheck
from tuner.trial._gate import GateVerdict
from tuner.trial._memory import MemoryRecord
from tuner.trial._regimes import RegimeResult
from tuner.trial._requests import RequestRecord
from tuner.trial._stats import Aggregates


SCHEMA_VERSION = 1
#: a simulated server's twin derived from the model's config.json: figures that no
#: published number checks (the simulator's ``/server_info`` says ``twin``)
DERIVED_TWIN = "DERIVED"


def clock_label(simulated: bool, twin: str | None = None) -> str:
    """What a launch's figures are: wall-clock time, or simulated machine time, and when
    the simulator's twin of the model was DERIVED from its config.json, that."""
    if not simulated:
        return "wall-clock time"
    return "simulated machine time" + (", DERIVED twin" if twin == DERIVED_TWIN else "")
Reason = Literal["launch_error", "startup_timeout", "oom", "crashed", "unsupported_knob",
                 "effect_mismatch", "bench_error", "worker_lost", "cancelled",
                 "would_exhaust_memory", "dominated", "collapsed"]
REASONS: tuple[str, ...] = Reason.__args__  # type: ignore[attr-defined]


class Timings(BaseModel):
    """Seconds of machine time spent in each phase (wall time x the server's time scale).
    ``startup_s``: from the launch to healthy, or to the start-up's failure (an
    out-of-memory, a timeout); None when no server was started."""

    startup_s: float | None = None
    evidence_s: float | None = None
    warmup_s: float | None = None
    benchmark_s: float | None = None
    #: the client scoring completions (a code completion's tests in the sandbox): its own
    #: wall time, which is the same on any machine, so not scaled
    scoring_s: float | None = None
    #: the GSM8K accuracy sample answered after the workload (``sample_requests``)
    sample_s: float | None = None
    #: the whole trial: machine time, plus ``scoring_s`` as it is
    total_s: float | None = None


class TrialResult(BaseModel):
    schema_version: int = SCHEMA_VERSION
    tuner_version: str
    #: ``pruned``: stopped after the first part of its workload (:class:`EarlyStop`); its
    #: figures cover the requests it measured
    status: Literal["ok", "failed", "pruned"]
    reason: Reason | None = None
    message: str | None = None
    space: str
    machine: str
    config: dict[str, Any]
    config_hash: str
    plan: LaunchPlan
    engine: str
    engine_version: str | None = None
    simulated: bool = False
    time_scale: float = 1.0
    #: what a simulated server's figures rest on: ``calibrated`` or ``DERIVED`` (a twin
    #: derived from the model's config.json, checked against no published figure)
    twin: str | None = None
    workload: dict[str, Any]
    timings: Timings = Field(default_factory=Timings)
    server_info: dict[str, Any] = Field(default_factory=dict)
    #: tokens the KV pool holds (the server's own figure), what a capacity knob changes
    kv_tokens: int | None = None
    #: what the unified-memory guard saw of the host (None: not a unified-memory machine)
    memory: MemoryRecord | None = None
    #: where the trial ran when a runner knows more than the host name (a Ray node id)
    worker: str | None = None
    metrics: dict[str, float] = Field(default_factory=dict)
    effect: list[KnobCheck] = Field(default_factory=list)
    requests: list[RequestRecord] = Field(default_factory=list)
    #: the GSM8K accuracy sample answered after the workload (``TrialOptions.
    #: accuracy_sample``: a final accuracy sample beside a workload that is not GSM8K):
    #: scored and gated with the workload's scored requests, in no speed figure
    sample_requests: list[RequestRecord] = Field(default_factory=list)
    warmup_requests: int = 0
    #: measured prompts this launch was to send: the workload's, or the first
    #: ``TrialOptions.measure_first`` of them (a search trial's cheaper fidelity)
    planned_requests: int | None = None
    aggregates: Aggregates | None = None
    gate: GateVerdict | None = None
    #: the workload's load regimes, measured on the same launch after its own requests
    regimes: list[RegimeResult] = Field(default_factory=list)
    log_path: str | None = None
    log_tail: str | None = None
    cleanup: list[str] = Field(default_factory=list)
    started_at: str
    finished_at: str | None = None
    host: str

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def feasible(self) -> bool:
        return self.ok and self.gate is not None and self.gate.passed
