"""A benchmark client against the scheduler model, in virtual time: what ``tuner sim
calibrate`` compares with the published concurrency cells.

:func:`closed_loop` is ``sglang.bench_serving`` with ``--max-concurrency C`` and an
infinite request rate: ``C`` clients each send a request, and send the next when it ends,
until ``prompts`` have been sent. It drives :class:`~tuner_sim.schedule.Core`, the same
admission, prefill and decode decisions the simulated server makes, with no noise and no
sleeping, so a cell costs milliseconds. Figures are bench_serving's: mean TTFT, mean and
median TPOT (``(latency - TTFT) / (output - 1)`` per request) and total (input + output)
tokens over the run's duration.
"""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass

from tuner_sim.args import build_parser
from tuner_sim.args import resolve
from tuner_sim.memory import plan_memory
from tuner_sim.perf import PerfModel
from tuner_sim.perf import settings_from
from tuner_sim.profiles import Machine
from tuner_sim.profiles import Model
from tuner_sim.request import SimRequest
from tuner_sim.schedule import Core
from tuner_sim.schedule import Limits
from tuner_sim.speculative import block_of


@dataclass(frozen=True)
class LoadResult:
    mean_ttft_ms: float
    mean_tpot_ms: float
    tokens_per_s: float             # input + output tokens over the run's duration
    most_running: int               # the largest running batch seen
    pool_tokens: int
    duration_ms: float = 0.0
    #: bench_serving's median TPOT (its per-request TPOTs' median)
    median_tpot_ms: float = 0.0
    #: per request, in completion order: TTFT and TPOT (machine ms), output tokens
    ttft_ms: tuple[float, ...] = ()
    tpot_ms: tuple[float, ...] = ()
    outputs: tuple[int, ...] = ()


def core_for(argv: list[str], machine: Machine, model: Model) -> Core:
    """The scheduler a simulated server launched with ``argv`` would run (its memory
    plan's pool; a fraction that would hang the machine is not refused here)."""
    ns = build_parser().parse_args(argv)
    draft = block_of(model, ns.speculative_algorithm)
    res = resolve(ns, architecture=model.architecture, capability=machine.compute_capability,
                  model_context=model.context_length, env={}, memory_gb=machine.memory_gib,
                  draft_block=draft)
    a = res.args
    mem = plan_memory(machine, model, a)
    settings = settings_from(a, lambda _name: None, lm_head_module_shared=True)
    return Core(PerfModel(machine, model, settings), Limits.of(a, mem.max_total_num_tokens),
                machine.prefill_slowdown_per_running)


def lottery_rates(core: Core, n: int, kind: str, content: str) -> list[float]:
    """``n`` first-position rates at the class's per-prompt Beta's evenly spaced quantiles
    ``(j + 0.5) / n``: the prompt lottery's shape at ``n`` prompts."""
    from scipy import stats

    c = core.perf.acceptance_class(kind, content)
    dist = stats.beta(c.first * c.concentration, (1 - c.first) * c.concentration)
    return [float(dist.ppf((j + 0.5) / n)) for j in range(n)]


def _request(core: Core, i: int, prompt: int, output: int, kind: str, content: str,
             rng: random.Random, t: float, first: float | None = None) -> SimRequest:
    c = core.perf.acceptance_class(kind, content)
    if first is None:
        first = rng.betavariate(c.first * c.concentration, (1 - c.first) * c.concentration)
    return SimRequest(rid=str(i), prompt_tokens=prompt, cached_tokens=0, max_new_tokens=output,
                      kind=kind, tokens=[], ignore_eos=True, first_rate=first,
                      rng=random.Random(f"{i}|{rng.random()}"), content=content, t_submit=t)


def closed_loop(core: Core, *, prompts: int, concurrency: int, input_tokens: int,
                output_tokens: int | list[int], kind: str = "greedy",
                content: str = "random", seed: int = 0, cached_tokens: int = 0,
                max_new_tokens: int | None = None, stratified: bool = False) -> LoadResult:
    """Run ``prompts`` requests through ``core`` at ``concurrency``: ``input_tokens`` each
    (``cached_tokens`` of them served from the prefix cache), ``output_tokens`` each or,
    given a list, the i-th request's (cycled). ``max_new_tokens``: the cap each request
    asks for (what it reserves in the pool), its output then ending naturally; None: the
    output is the cap (``ignore_eos``, bench_serving's random dataset). ``stratified``: the
    prompts' acceptance rates are the class's per-prompt distribution read at ``prompts``
    evenly spaced quantiles, in a seeded random order (a prompt set that draws the lottery's
    shape, not one sample's luck); otherwise each request draws its own rate at random."""
    outs = output_tokens if isinstance(output_tokens, list) else [output_tokens]
    rng = random.Random(seed)
    rates: list[float] | None = None
    if stratified:
        rates = lottery_rates(core, prompts, kind, content)
        random.Random(f"order|{seed}").shuffle(rates)
    t = 0.0                                      # machine milliseconds
    sent = 0
    ttft: list[float] = []
    tpot: list[float] = []
    most = 0

    done_out: list[int] = []

    def send(now: float) -> None:
        nonlocal sent
        length = outs[sent % len(outs)]
        r = _request(core, sent, input_tokens, length, kind, content, rng, now,
                     None if rates is None else rates[sent])
        r.cached_tokens = min(cached_tokens, max(0, input_tokens - 1))
        if max_new_tokens is not None:
            r.max_new_tokens, r.ignore_eos = max_new_tokens, False
            r.tokens = ["x"] * min(length, max_new_tokens)
        core.pending.append(r)
        sent += 1

    for _ in range(min(concurrency, prompts)):
        send(0.0)
    while core.pending or core.running:
        admit = core.next_prefill()
        if admit:
            t += core.prefill_ms(admit)
            for r in admit:
                r.emitted, r.t_first = 1, t
            core.running.extend(admit)
            continue
        batch = list(core.running)
        most = max(most, len(batch))
        t += core.decode_ms(batch)
        _, done = core.advance(batch)
        for r in done:
            assert r.t_first is not None
            ttft.append(r.t_first - r.t_submit)
            tpot.append((t - r.t_first) / max(1, r.emitted - 1))
            done_out.append(r.emitted)
            if sent < prompts:
                send(t)
    total = prompts * input_tokens + sum(done_out)
    return LoadResult(mean_ttft_ms=sum(ttft) / len(ttft), mean_tpot_ms=sum(tpot) / len(tpot),
                      median_tpot_ms=statistics.median(tpot),
                      tokens_per_s=total / (t / 1000.0), most_running=most,
                      pool_tokens=core.limits.pool_tokens, duration_ms=t,
                      ttft_ms=tuple(ttft), tpot_ms=tuple(tpot), outputs=tuple(done_out))
