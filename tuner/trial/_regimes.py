"""Load regimes: the same launch measured at other concurrencies, after its own workload.

A regime (:class:`tuner.space.Regime`) sends the workload's measured prompts
``concurrency`` at a time, ``requests`` of them (reused in order when there are fewer),
as ``sglang.bench_serving --max-concurrency`` does: a closed loop, each client sending its
next prompt when its last one ends. Its figures (docs/trials.md, "Load regimes"), all
machine time:

* TPOT mean and p95 over its requests, TTFT mean and p95 (TTFT includes queueing: a request
  the server cannot admit waits, and its first token is late);
* throughput: output tokens over the regime's duration;
* goodput: requests that met the SLA per second of that duration (all requests when the
  regime has no SLA), and the share that met it.

A regime that fails (a request refused, the server dead of an out-of-memory at load) is a
failure of that regime only: it records the reason, and the trial's own figures stand.
"""

from __future__ import annotations

import enum
import functools
import time
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING
from typing import Annotated
from typing import Any
from typing import Literal

import httpx
from pydantic import BaseModel

from tuner.engines import RequestFailed
from tuner.engines import ServerProtocol
from tuner.space import Regime
from tuner.trial._requests import run_requests
from tuner.trial._stats import percentile
from tuner.workloads import Prompt


if TYPE_CHECKING:
    from tuner.engines import Engine
    from tuner.errors import SpaceError
    from tuner.space import SearchSpace


def queue_notes(regimes: list[Regime], max_running: int | None) -> list[str]:
    """One line per regime with more users than a launch that serves at most
    ``max_running`` requests at once can run together (None: the engine decides): the rest
    wait in the queue, which shows in TTFT and goodput, not in TPOT."""
    if max_running is None:
        return []
    from tuner.errors import counted

    return [f"regime {r.name!r} has {counted(r.concurrency, 'user', 'users')} but the launch "
            f"serves at most {max_running} at once: {r.concurrency - max_running} wait in "
            "the queue (their wait shows in TTFT); raise the space's maximum of running "
            "requests to serve them together" for r in regimes if r.concurrency > max_running]


@dataclass(frozen=True)
class ServingLimit:
    """The most requests any configuration of a space runs at once, as the engine plans
    them, and where that bound is written: ``knob`` is the knob whose value reaches it
    (None: the space's fixed flags hold it for every configuration)."""

    most: int
    knob: str | None


def serving_limit(space: SearchSpace, engine: Engine) -> ServingLimit | None:
    """How many requests the space can serve at once, over the baseline and every value of
    every knob (each beside the baseline's others, with the values its condition needs);
    None when some launch leaves it to the engine (which sizes it from memory)."""
    from tuner.errors import UserError

    tries: list[tuple[str | None, dict[str, Any]]] = [(None, {})]
    for name in space.order:
        when = {p: (v[0] if isinstance(v, list) else v)
                for p, v in space.knob(name).when.items()}
        tries += [(name, {**when, name: v}) for v in space.domain(name) or []]
    best: ServingLimit | None = None
    for knob, assigned in tries:
        try:
            most = engine.plan(space, engine.resolve(space, assigned)).max_running
        except UserError:                 # a value this baseline cannot take: not a launch
            continue
        if most is None:
            return None
        if best is None or most > best.most:
            best = ServingLimit(most, knob if best is not None else None)
    return best


def capacity_refusal(space: SearchSpace, engine: Engine, regimes: list[Regime],
                     where: str) -> SpaceError | None:
    """The located one-line refusal of a regime with more users than any configuration of
    ``space`` serves at once (None: every regime can be served): its users would only wait
    in the queue, so a sweep would measure what the space already implies. ``where`` says
    where the regimes were given (``--regime``, the space's ``workload.regimes``)."""
    limit = serving_limit(space, engine)
    over = [r for r in regimes if limit is not None and r.concurrency > limit.most]
    if limit is None or not over:
        return None
    from tuner.errors import counted

    r = max(over, key=lambda g: g.concurrency)
    fix = (f"extend knob {limit.knob!r} to {r.concurrency}" if limit.knob is not None else
           "add a capacity knob for the maximum of running requests (docs/search-spaces.md, "
           "\"Capacity knobs\"; the Spark space's max_running is one)")
    path: tuple[str | int, ...] = ("knobs", limit.knob) if limit.knob else ("fixed_flags",)
    return space.error(path, (
        f"regime {r.name!r} ({where}) has {counted(r.concurrency, 'user', 'users')} but every "
        f"configuration of this space serves at most {limit.most} at once (the rest would "
        f"only wait in the queue): {fix}, or ask for at most "
        f"{counted(limit.most, 'user', 'users')}"))


class Pool(enum.Enum):
    """How one figure of a regime pools over a configuration's launches: the study's answer
    per regime holds one record of the launch's shape, each field pooled as its declaration
    says (``Annotated[float | None, Pool.MEAN]``; tuner/study/_regimes.py ``pooled``)."""

    SAME = "same"                  # the regime's own (its name, users, SLA): the first launch's
    MEAN = "mean"                  # the mean over the launches that have one (None: none has)
    MOST = "most"                  # the largest any launch saw (None: none saw one)
    SUM = "sum"                    # the total over the launches that have one (None: none has)
    ALL = "all"                    # True when every launch says True (None: none says)
    ANY_FAILED = "any failed"      # ``failed`` when any launch failed, else ``ok``
    FIRST_FAILURE = "first failure"   # the first failed launch's (None: none failed)


class RegimeResult(BaseModel):
    """One regime's figures (machine time); ``status`` failed: ``message`` says why. Each
    field declares how it pools over a configuration's launches (:class:`Pool`): a new
    figure is one field here, and the study's answer per regime pools it."""

    name: Annotated[str, Pool.SAME]
    concurrency: Annotated[int, Pool.SAME]
    status: Annotated[Literal["ok", "failed"], Pool.ANY_FAILED] = "ok"
    message: Annotated[str | None, Pool.FIRST_FAILURE] = None
    #: the requests measured and the seconds they took (pooled: over every launch)
    requests: Annotated[int, Pool.SUM] = 0
    duration_s: Annotated[float | None, Pool.SUM] = None
    tpot_mean_ms: Annotated[float | None, Pool.MEAN] = None
    tpot_p95_ms: Annotated[float | None, Pool.MEAN] = None
    ttft_mean_s: Annotated[float | None, Pool.MEAN] = None
    ttft_p95_s: Annotated[float | None, Pool.MEAN] = None
    throughput_tok_s: Annotated[float | None, Pool.MEAN] = None
    goodput_rps: Annotated[float | None, Pool.MEAN] = None
    sla_met: Annotated[float | None, Pool.MEAN] = None
    #: whether the p95 figures meet the regime's SLA (None: no SLA)
    within_sla: Annotated[bool | None, Pool.ALL] = None
    #: the most requests the server ran at once and kept waiting, as its batch log lines
    #: said during the regime (None: it logged none)
    peak_running: Annotated[int | None, Pool.MOST] = None
    peak_queued: Annotated[int | None, Pool.MOST] = None


@functools.cache
def pools(model: type[BaseModel]) -> Mapping[str, Pool]:
    """Each field of ``model`` (:class:`RegimeResult` or a record that extends it) -> how it
    pools, as the field declares; a field that declares none, or two, is a ``TypeError``."""
    out = {}
    for name, info in model.model_fields.items():
        how = [m for m in info.metadata if isinstance(m, Pool)]
        if len(how) != 1:
            raise TypeError(f"{model.__name__}.{name} must declare one way it pools over "
                            "launches (Annotated[..., Pool.MEAN], tuner/trial/_regimes.py)")
        out[name] = how[0]
    return MappingProxyType(out)


def regime_prompts(prompts: list[Prompt], regime: Regime) -> list[Prompt]:
    """``regime.total`` prompts, the workload's reused in order (ids made unique)."""
    if not prompts:
        return []
    out = []
    for i in range(regime.total):
        p = prompts[i % len(prompts)]
        out.append(p if i < len(prompts) else _renamed(p, f"{p.id}#{i // len(prompts)}"))
    return out


def _renamed(p: Prompt, new_id: str) -> Prompt:
    from dataclasses import replace

    return replace(p, id=new_id)


def measure_regime(base_url: str, headers: dict[str, str], protocol: ServerProtocol,
                   prompts: list[Prompt], regime: Regime, *, scale: float,
                   timeout_s: float) -> RegimeResult:
    """Send ``regime``'s load and sum it up; a failed request fails the regime."""
    out = RegimeResult(name=regime.name, concurrency=regime.concurrency)
    sent = regime_prompts(prompts, regime)
    t0 = time.monotonic()
    try:
        records = run_requests(base_url, headers, protocol, sent, scale=scale,
                               concurrency=regime.concurrency, timeout_s=timeout_s)
    except (RequestFailed, httpx.HTTPError) as exc:
        out.status, out.message = "failed", str(exc) or type(exc).__name__
        return out
    duration = (time.monotonic() - t0) * scale
    tpots = [r.tpot_ms for r in records if r.tpot_ms is not None]
    ttfts = [r.ttft_s for r in records]
    sla = regime.sla
    met = sum(1 for r in records if sla is None or sla.met_by(r.tpot_ms, r.ttft_s))
    out.requests, out.duration_s = len(records), duration
    out.tpot_mean_ms = sum(tpots) / len(tpots) if tpots else None
    out.tpot_p95_ms = percentile(tpots, 95) if tpots else None
    out.ttft_mean_s = sum(ttfts) / len(ttfts) if ttfts else None
    out.ttft_p95_s = percentile(ttfts, 95) if ttfts else None
    if duration > 0:
        out.throughput_tok_s = sum(r.completion_tokens for r in records) / duration
        out.goodput_rps = met / duration
    out.sla_met = met / len(records) if records else None
    if sla is not None and records:
        out.within_sla = ((sla.p95_tpot_ms is None or out.tpot_p95_ms is None
                           or out.tpot_p95_ms <= sla.p95_tpot_ms)
                          and (sla.p95_ttft_s is None or out.ttft_p95_s is None
                               or out.ttft_p95_s <= sla.p95_ttft_s))
    return out
