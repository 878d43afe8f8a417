"""One trial, start to finish: launch, prove, measure, gate, stop. Never raises for a failing
server: every failure becomes a ``TrialResult`` with a reason from the taxonomy."""

from __future__ import annotations

import math
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from datetime import UTC
from datetime import datetime
from pathlib import Path

import httpx

from tuner import __version__
from tuner.engines import Capabilities
from tuner.engines import Engine
from tuner.engines import RequestFailed
from tuner.engines import ServerProtocol
from tuner.space import Config
from tuner.space import SearchSpace
from tuner.space import Workload
from tuner.trial._evidence import effect_check
from tuner.trial._evidence import unsupported
from tuner.trial._gate import evaluate
from tuner.trial._memory import MemoryWatch
from tuner.trial._memory import before_launch
from tuner.trial._regimes import measure_regime
from tuner.trial._requests import RequestRecord
from tuner.trial._requests import run_requests
from tuner.trial._requests import score_requests
from tuner.trial._requests import send_requests
from tuner.trial._result import TrialResult
from tuner.trial._server import ServerProcess
from tuner.trial._server import TrialStopped
from tuner.trial._server import free_port
from tuner.trial._server import redact
from tuner.trial._stats import SAMPLE_PREFIX
from tuner.trial._stats import aggregate
from tuner.trial._stats import question_groups
from tuner.trial._stats import with_accuracy_sample
from tuner.workloads import KINDS
from tuner.workloads import Context
from tuner.workloads import Prepared
from tuner.workloads import Workload as PromptWorkload
from tuner.workloads import make_workload
from tuner.workloads import vocab_size


@dataclass(frozen=True)
class EarlyStop:
    """Judge a trial after the first ``fraction`` of its measured requests (at least
    ``MIN_FIRST``) and stop it there when it is clearly not a candidate (status ``pruned``,
    figures over those requests): ``dominated`` when the low end of its TPOT interval is
    above ``slower_than_ms`` (the incumbent's interval's high end), ``collapsed`` when
    speculation's accept length already fails the gate."""

    fraction: float
    slower_than_ms: float | None = None

    MIN_FIRST = 3

    def first(self, measured: int) -> int:
        """How many of ``measured`` requests come before the judgement."""
        return max(self.MIN_FIRST, math.ceil(self.fraction * measured))


@dataclass(frozen=True)
class TrialOptions:
    """How to run a trial (everything but the configuration). Frozen: a changed copy is
    ``dataclasses.replace(opts, ...)``."""

    workdir: Path
    workload: Workload
    gsm8k: str | None = None
    startup_timeout_s: float = 1800.0
    bench_timeout_s: float = 4 * 3600.0
    host: str = "127.0.0.1"
    port: int | None = None
    capabilities: Capabilities | None = None
    baseline_per_question: dict[str, bool] | None = None
    reference_accept_length: float | None = None
    keep_full_server_info: bool = False
    #: Token ids a synthetic workload may send, [0, vocab_size); None: found from the
    #: space's model (:func:`tuner.workloads.vocab.vocab_size`).
    vocab_size: int | None = None
    #: The server's API key (``--api-key``): sent with every request, passed to the server
    #: out of the recorded plan, redacted from its log; never stored.
    api_key: str | None = field(default=None, repr=False)
    #: Added to the server's environment (not to the plan): e.g. the sweep's owner tag,
    #: by which its clean-up finds servers a killed driver left behind.
    server_env: dict[str, str] = field(default_factory=dict)
    #: stop early when clearly not a candidate (None: run the whole workload)
    early_stop: EarlyStop | None = None
    #: measure only the first ``measure_first`` of the workload's prompts (a search trial's
    #: cheaper fidelity: the baseline's first questions); None: all of them
    measure_first: int | None = None
    #: GSM8K questions this launch also answers after its workload: the final accuracy
    #: sample beside a workload that is not GSM8K (code, chat, JSONL, a mix), scored and
    #: gated with the workload's scored requests, in no speed figure; None: none
    accuracy_sample: int | None = None


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def workload_vocab(space: SearchSpace, opts: TrialOptions) -> int | None:
    """The vocabulary bound of a workload that sends token ids (None for those that send
    text)."""
    if not KINDS[opts.workload.kind].needs_vocab:
        return None
    if opts.vocab_size is not None:
        return opts.vocab_size
    model = space.spec.model
    return vocab_size(model.path, model.vocab_size)


def run_trial(space: SearchSpace, engine: Engine, config: Config, opts: TrialOptions
              ) -> TrialResult:
    """Launch ``config``, prove each setting, measure, gate, stop. Never raises for a
    failing server: the failure is the result's ``reason``."""
    t_start = time.monotonic()
    port = opts.port or free_port(opts.host)
    plan = engine.plan(space, config, host=opts.host, port=port)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    log_path = opts.workdir / f"{stamp}-{plan.config_hash}-{port}.log"
    result = TrialResult(
        tuner_version=__version__, status="ok", space=space.name,
        machine=space.spec.machine.id, config=config.as_dict(), config_hash=config.hash(),
        plan=plan, engine=engine.name, simulated=engine.simulated,
        time_scale=engine.time_scale, workload=opts.workload.model_dump(),
        started_at=_now(), host=socket.gethostname(), log_path=str(log_path))
    if opts.capabilities is not None:     # before launch: can the engine apply every value?
        bad = unsupported(plan.evidence, opts.capabilities)
        if bad:
            result.effect = bad
            detail = "; ".join(f"{b.knob}={b.value}: {', '.join(b.problems)}" for b in bad)
            return _finish(_failed(result, TrialStopped("unsupported_knob", detail)), t_start, 1.0)
    t_guard = time.monotonic()
    host, result.memory, refused = before_launch(space, engine, plan)   # unified memory
    t_start += time.monotonic() - t_guard    # reading the host is not the launch's time
    if refused is not None:
        return _finish(_failed(result, refused), t_start, result.time_scale)
    workload = make_workload(opts.workload, Context(gsm8k=opts.gsm8k,
                                                    vocab_size=workload_vocab(space, opts)))
    prepared = workload.prepare()
    sample = _accuracy_sample(opts)          # its data read before the server starts
    protocol = engine.protocol()
    server = ServerProcess(plan, log_path, protocol, extra_env=opts.server_env,
                           api_key=opts.api_key, secret_argv=engine.secret_args(opts.api_key))
    watch = (MemoryWatch(host, result.memory, server.stop, scale=lambda: result.time_scale)
             if host is not None and result.memory is not None else None)
    try:
        _launch_and_measure(result, server, protocol, workload, prepared, opts,
                            _judge(space, plan.speculative, opts), watch, sample)
        return _finish(result, t_start, result.time_scale)
    except TrialPruned as stop:
        if watch is not None and watch.tripped:
            return _finish(_failed(result, watch.failure()), t_start, result.time_scale)
        result.status = "pruned"
        result.reason = stop.reason  # type: ignore[assignment]
        result.message = stop.message
        return _finish(result, t_start, result.time_scale)
    except (TrialStopped, httpx.HTTPError) as stop:
        watched = watch.failure() if watch is not None else None   # the watch stopped it
        if watched is None and not isinstance(stop, TrialStopped):
            raise
        return _finish(_failed(result, watched or stop), t_start, result.time_scale)
    finally:
        if watch is not None:
            watch.close()
        server.stop()
        result.cleanup = server.leftovers()


def _launch_and_measure(result: TrialResult, server: ServerProcess, protocol: ServerProtocol,
                        workload: PromptWorkload, prepared: Prepared, opts: TrialOptions,
                        judge: Judge, watch: MemoryWatch | None,
                        sample: tuple[PromptWorkload, Prepared] | None = None) -> None:
    """Start the server (watched on a unified-memory host), prove, measure, answer the
    accuracy sample, gate."""
    server.start()
    if watch is not None:
        watch.start()
    startup_wall = _wait_ready(server, opts, result)
    _prove(result, server, protocol, opts, startup_wall)
    _measure(result, server, protocol, workload, prepared, opts, judge)
    if sample is not None:
        _answer_sample(result, server, protocol, *sample, opts)
    judge(result.requests, result)
    _measure_regimes(result, server, protocol, prepared, opts)
    if watch is not None:
        watch.check()          # memory that grew since the watch's last reading


def _wait_ready(server: ServerProcess, opts: TrialOptions, result: TrialResult) -> float:
    """Wall seconds to healthy; a start-up that fails records how long it took too (machine
    time at the engine's scale: the server never said its own)."""
    try:
        return server.wait_ready(opts.startup_timeout_s)
    except TrialStopped:
        result.timings.startup_s = (time.monotonic() - server.started_at) * result.time_scale
        raise


class TrialPruned(Exception):
    """The first part of the workload showed the trial is not a candidate (EarlyStop)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason, self.message = reason, message


Judge = Callable[[list[RequestRecord], TrialResult], None]


def _judge(space: SearchSpace, speculative: bool, opts: TrialOptions) -> Judge:
    """Aggregate and gate ``records`` into ``result``."""
    def judge(records: list[RequestRecord], result: TrialResult) -> None:
        agg = aggregate(records, opts.workload.shares() or None)
        if result.sample_requests:
            agg = with_accuracy_sample(agg, result.sample_requests)
        result.aggregates = agg
        result.gate = evaluate(
            agg, speculative=speculative, cfg=space.spec.gate,
            baseline_per_question=opts.baseline_per_question,
            reference_accept_length=opts.reference_accept_length,
            groups=question_groups(records, result.sample_requests))
    return judge


def _check_early(result: TrialResult, stop: EarlyStop) -> None:
    """Raise TrialPruned when the figures so far (``result``'s) rule the trial out."""
    a, gate = result.aggregates, result.gate
    if gate is not None and any(r.rule == "collapse" for r in gate.fired()):
        raise TrialPruned("collapsed", "stopped early: " + next(
            r.detail for r in gate.fired() if r.rule == "collapse"))
    if a is None or a.tpot_ci95 is None or stop.slower_than_ms is None:
        return
    ci = a.tpot_ci95
    if ci.low > stop.slower_than_ms:
        raise TrialPruned("dominated", f"stopped early: TPOT {a.tpot_ms:.2f} ms "
                          f"[{ci.low:.2f}, {ci.high:.2f}] over the first {len(result.requests)}"
                          f" requests is slower than the best so far (up to "
                          f"{stop.slower_than_ms:.2f} ms)")


def _prove(result: TrialResult, server: ServerProcess, protocol: ServerProtocol,
           opts: TrialOptions, startup_wall: float) -> None:
    """Read what the server resolved and check every expected observation."""
    t0 = time.monotonic()
    with httpx.Client(base_url=server.base_url, headers=server.headers(), timeout=60) as c:
        info = protocol.server_info(c)
        scale = protocol.time_scale(info)
        if result.plan.metrics:
            result.metrics = protocol.metrics(c)
    result.time_scale = scale
    result.twin = protocol.twin(info)
    result.engine_version = protocol.version(info)
    result.kv_tokens = protocol.kv_tokens(info)
    read = {f.split(".")[0] for ev in result.plan.evidence       # what the evidence reads:
            for f in (*ev.server_info, *ev.server_info_if_present)}  # the record re-checks
    kept = {**protocol.kept_info(info), **{k: info[k] for k in read if k in info}}
    result.server_info = redact(info if opts.keep_full_server_info else kept, opts.api_key)
    result.timings.startup_s = startup_wall * scale
    log_text = server.log_path.read_text(errors="replace")
    result.effect = effect_check(result.plan.evidence, info, log_text)
    result.timings.evidence_s = (time.monotonic() - t0) * scale
    mismatched = [c for c in result.effect if c.verdict == "mismatched"]
    if mismatched:
        detail = "; ".join(f"{c.knob}={c.value}: {', '.join(c.problems)}" for c in mismatched)
        raise TrialStopped("effect_mismatch", detail, server.log_tail())


def _measure(result: TrialResult, server: ServerProcess, protocol: ServerProtocol,
             workload: PromptWorkload, prepared: Prepared, opts: TrialOptions,
             judge: Judge) -> None:
    """Warm up, then send the measured prompts; a failed request ends the trial. With
    ``opts.early_stop``, the first part is judged before the rest is sent."""
    scale, n, timeout = result.time_scale, opts.workload.concurrency, opts.bench_timeout_s
    try:
        t1 = time.monotonic()
        run_requests(server.base_url, server.headers(), protocol, prepared.warmup,
                     scale=scale, concurrency=n, timeout_s=timeout)
        result.warmup_requests = len(prepared.warmup)
        t2 = time.monotonic()
        result.timings.warmup_s = (t2 - t1) * scale
        stop, prompts = opts.early_stop, prepared.measured[:opts.measure_first or None]
        result.planned_requests = len(prompts)
        first = stop.first(len(prompts)) if stop is not None else 0
        parts = ([prompts[:first], prompts[first:]] if 0 < first < len(prompts)
                 else [prompts])
        result.requests, sending = [], 0.0      # the judgement's own time is not the engine's
        for i, part in enumerate(parts):
            t3 = time.monotonic()
            sent = send_requests(server.base_url, server.headers(), protocol, part,
                                 scale=scale, concurrency=n, timeout_s=timeout)
            sending += time.monotonic() - t3
            result.timings.benchmark_s = sending * scale
            t4 = time.monotonic()
            result.requests += score_requests(workload, part, sent)   # not timed
            result.timings.scoring_s = (result.timings.scoring_s or 0.0) + (
                time.monotonic() - t4)
            if stop is not None and i + 1 < len(parts):
                judge(result.requests, result)
                _check_early(result, stop)
    except RequestFailed as exc:
        time.sleep(0.2)
        if not server.alive():
            raise TrialStopped("crashed", f"the server died during the benchmark: {exc}",
                        server.log_tail()) from None
        raise TrialStopped("bench_error", str(exc), server.log_tail()) from None


def _accuracy_sample(opts: TrialOptions) -> tuple[PromptWorkload, Prepared] | None:
    """The GSM8K accuracy sample of ``opts.accuracy_sample`` questions (its prompt ids
    prefixed, :data:`tuner.trial._stats.SAMPLE_PREFIX`), prepared; None without one."""
    if not opts.accuracy_sample:
        return None
    from dataclasses import replace

    settings = opts.workload.model_copy(update={
        "kind": "gsm8k", "mix": None, "questions": opts.accuracy_sample, "regimes": [],
        "concurrency": 1})
    wl = make_workload(settings, Context(gsm8k=opts.gsm8k))
    prepared = wl.prepare()
    measured = [replace(p, id=SAMPLE_PREFIX + p.id) for p in prepared.measured]
    return wl, Prepared(warmup=[], measured=measured)


def _answer_sample(result: TrialResult, server: ServerProcess, protocol: ServerProtocol,
                   workload: PromptWorkload, prepared: Prepared, opts: TrialOptions) -> None:
    """Send the accuracy sample's questions after the workload and score them; their time
    is the launch's, in no speed figure."""
    t0 = time.monotonic()
    try:
        sent = send_requests(server.base_url, server.headers(), protocol, prepared.measured,
                             scale=result.time_scale, concurrency=1,
                             timeout_s=opts.bench_timeout_s)
    except RequestFailed as exc:
        time.sleep(0.2)
        if not server.alive():
            raise TrialStopped("crashed", f"the server died during the accuracy sample: "
                               f"{exc}", server.log_tail()) from None
        raise TrialStopped("bench_error", f"the accuracy sample: {exc}",
                           server.log_tail()) from None
    result.timings.sample_s = (time.monotonic() - t0) * result.time_scale
    result.sample_requests = score_requests(workload, prepared.measured, sent)


def _measure_regimes(result: TrialResult, server: ServerProcess, protocol: ServerProtocol,
                     prepared: Prepared, opts: TrialOptions) -> None:
    """Each of the workload's regimes on this launch; one that fails stays that regime's
    failure (a server it killed fails the regimes after it too, not the trial)."""
    prompts = prepared.measured[:opts.measure_first or None]
    for regime in opts.workload.regimes:
        start = _log_size(server)
        g = measure_regime(server.base_url, server.headers(), protocol, prompts, regime,
                           scale=result.time_scale, timeout_s=opts.bench_timeout_s)
        load = protocol.batch_load(_log_since(server, start))
        if load is not None:
            g.peak_running, g.peak_queued = load
        result.regimes.append(g)


def _log_size(server: ServerProcess) -> int:
    try:
        return server.log_path.stat().st_size
    except OSError:
        return 0


def _log_since(server: ServerProcess, offset: int) -> str:
    """The server log written after byte ``offset`` (empty when it cannot be read)."""
    try:
        with open(server.log_path, "rb") as fh:
            fh.seek(offset)
            return fh.read().decode(errors="replace")
    except OSError:
        return ""


def _failed(result: TrialResult, stop: Exception | None) -> TrialResult:
    assert isinstance(stop, TrialStopped)
    result.status = "failed"
    result.reason = stop.reason  # type: ignore[assignment]
    result.message = stop.message
    result.log_tail = stop.log_tail
    return result


def _finish(result: TrialResult, t_start: float, scale: float | None) -> TrialResult:
    scoring = result.timings.scoring_s or 0.0      # the client's own time: not scaled
    result.timings.total_s = (time.monotonic() - t_start - scoring) * (scale or 1.0) + scoring
    result.finished_at = _now()
    return result
