"""The simulated scheduler: continuous batching in machine time, slept out in scaled wall time.

One thread runs the loop SGLang's scheduler runs: admit waiting requests (a prefill batch),
then decode iterations (a plain step or a speculative round) over the running batch. What
to run and what it costs is :class:`~tuner_sim.schedule.Core`'s; the thread sleeps until an
absolute deadline (machine time / time scale), so rounding never accumulates.
"""

from __future__ import annotations

import math
import os
import random
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from tuner_sim.perf import PerfModel
from tuner_sim.profiles import DERIVED
from tuner_sim.request import SimRequest
from tuner_sim.schedule import Core
from tuner_sim.schedule import Limits


__all__ = ["Engine", "SimRequest", "Stats", "crash_now"]


FIRST_CHUNK_WAIT_S = 0.05   # wall seconds the decode clock waits for first chunks at most


@dataclass
class Stats:
    prompt_tokens_total: int = 0
    generation_tokens_total: int = 0
    spec_verify_calls_total: int = 0
    num_requests_total: int = 0
    spec_accept_tokens: int = 0     # cumulative, updated at decode-log intervals (as SGLang)
    spec_forward_ct: int = 0
    last_gen_throughput: float = 0.0
    num_running_reqs: int = 0
    last_interval_accept_length: float | None = None


class Engine:
    """The scheduler thread. ``log`` prints a server log line."""

    def __init__(self, perf: PerfModel, *, limits: Limits, time_scale: float, noise: float,
                 seed: int, decode_log_interval: int, log: Callable[[str], None],
                 on_finish: Callable[[SimRequest], None], launch_factor: float = 1.0,
                 prefill_slowdown: float = 0.0) -> None:
        self.perf = perf
        self.core = Core(perf, limits, prefill_slowdown)
        self.launch_factor = launch_factor
        self.scale = time_scale
        self.noise = noise
        self.rng = random.Random(seed)
        self.interval = max(1, decode_log_interval)
        self.max_total_tokens = limits.pool_tokens
        self.log = log
        self.on_finish = on_finish
        self.stats = Stats()
        self.cond = threading.Condition()
        self._deadline = time.monotonic()
        self._iters = 0
        self._window = [0, 0, 0.0, 0]   # tokens, verify rounds, machine ms, iterations
        threading.Thread(target=self._loop, name="scheduler", daemon=True).start()

    @property
    def pending(self) -> deque[SimRequest]:
        return self.core.pending

    @property
    def running(self) -> list[SimRequest]:
        return self.core.running

    # -- API for request handlers --------------------------------------------------------------
    def submit(self, req: SimRequest) -> None:
        with self.cond:
            self.pending.append(req)
            self.cond.notify_all()

    def wait(self, req: SimRequest, seen: int, timeout: float = 30.0) -> None:
        """Block until ``req`` has more than ``seen`` tokens or is finished."""
        with self.cond:
            self.cond.wait_for(lambda: req.finished or req.emitted > seen, timeout=timeout)

    # -- the loop -----------------------------------------------------------------------------
    def _sleep(self, machine_ms: float) -> None:
        self._deadline += machine_ms / 1000.0 / self.scale
        delay = self._deadline - time.monotonic()
        if delay > 0:
            time.sleep(delay)

    def _jitter(self) -> float:
        """This launch's speed factor times a per-iteration lognormal factor; both have
        mean 1, so noise never moves the model's expected time."""
        if self.noise <= 0:
            return self.launch_factor
        return self.launch_factor * math.exp(self.rng.gauss(-0.5 * self.noise ** 2,
                                                            self.noise))

    def _loop(self) -> None:
        while True:
            with self.cond:
                if not (self.pending or self.running):
                    self.cond.wait_for(lambda: bool(self.pending or self.running))
                    self._deadline = time.monotonic()   # the clock restarts after idling
                admit = self.core.next_prefill()
                batch = list(self.running)
            if admit:
                self._prefill(admit)
            elif batch:
                self._decode(batch)

    def _prefill(self, admit: list[SimRequest]) -> None:
        with self.cond:
            ms = self.core.prefill_ms(admit)
        self._sleep(ms * self._jitter())
        now = time.monotonic()
        with self.cond:
            for r in admit:
                self.stats.prompt_tokens_total += r.prompt_tokens
                r.emitted = 1
                r.t_first = now
                if r.emitted >= r.limit:
                    self._finish(r, now)
                else:
                    self.running.append(r)
            self.stats.num_running_reqs = len(self.running)
            self.cond.notify_all()
        self._start_decode_clock([r for r in admit if r.stream], now)

    def _start_decode_clock(self, streams: list[SimRequest], emitted: float) -> None:
        """Let the first chunks out, then time decode from the first token's emission.

        A client times TPOT from the first chunk, and every wall millisecond reads as
        ``time_scale`` machine milliseconds. Racing the request handlers for the GIL right
        after a prefill held first chunks back 1-3 ms (later chunks: under 0.3 ms), and the
        next rounds' absolute deadlines then caught up, so decode read 0.5-4% fast. Waiting
        here (bounded: a stalled client does not stop the machine) lets the handlers run
        alone; the clock still starts at ``emitted``, not after a prefill's sleep overrun,
        which keeps the first chunk's and the last chunk's wall overheads alike.
        """
        end = time.monotonic() + FIRST_CHUNK_WAIT_S
        for r in streams:
            r.first_out.wait(max(0.0, end - time.monotonic()))
        self._deadline = max(self._deadline, emitted)

    def _decode(self, batch: list[SimRequest]) -> None:
        spec = self.perf.s.speculative
        ms = self.core.decode_ms(batch) * self._jitter()
        self._sleep(ms)
        now = time.monotonic()
        with self.cond:
            produced, done = self.core.advance(batch)
            if spec:
                self.stats.spec_verify_calls_total += len(batch)
            for r in done:
                self._finish(r, now)
            self.stats.num_running_reqs = len(self.running)
            self.cond.notify_all()
        w = self._window
        w[0] += produced
        w[1] += len(batch) if spec else 0
        w[2] += ms
        w[3] += 1
        self._iters += 1
        if self._iters % self.interval == 0:
            self._decode_log(batch)

    def _finish(self, r: SimRequest, now: float) -> None:
        r.finished = True
        r.t_done = now
        if r.emitted >= r.max_new_tokens:
            r.finish_reason = {"type": "length", "length": r.emitted}
        else:
            r.finish_reason = {"type": "stop", "matched": 156892}
        self.stats.generation_tokens_total += r.emitted
        self.stats.num_requests_total += 1
        self.on_finish(r)

    def _decode_log(self, batch: list[SimRequest]) -> None:
        tokens, rounds, ms, _ = self._window
        s = self.stats
        s.last_gen_throughput = tokens / (ms / 1000.0) if ms > 0 else 0.0
        used = sum(r.prompt_tokens + r.emitted for r in batch)
        usage = used / max(1, self.max_total_tokens)
        line = (f"Decode batch, #running-req: {len(batch)}, #full token: {used}, "
                f"full token usage: {usage:.2f}, mamba num: {len(batch)}, "
                f"mamba usage: {len(batch) / 64:.2f}, ")
        if self.perf.s.speculative and rounds:
            accept = tokens / rounds
            s.last_interval_accept_length = accept
            s.spec_accept_tokens += tokens
            s.spec_forward_ct += rounds
            rate = (accept - 1) / max(1, self.perf.s.drafted)
            line += f"accept len: {accept:.2f}, accept rate: {rate:.2f}, "
        line += (f"cuda graph: True, gen throughput (token/s): {s.last_gen_throughput:.2f}, "
                 f"#queue-req: {len(self.pending)}")
        if self.perf.model.twin == DERIVED:     # figures of a twin no published row checks
            line += " (simulator: DERIVED twin)"
        self.log(line)
        self._window = [0, 0, 0.0, 0]


def crash_now(log: Callable[[str], None], why: str) -> None:
    """Die the way a crashed scheduler takes the server down."""
    log(f"Scheduler hit an exception: {why}")
    log("Received sigquit from a child process. It usually means the child failed.")
    os._exit(1)
