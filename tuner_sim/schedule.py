"""The scheduler's decisions in machine time, with no threads and no clock.

What SGLang's scheduler decides each iteration, as the simulator models it
(docs/simulator.md, "Load"):

* **Admission** is first come, first served. A waiting request joins the running batch
  when fewer than ``max_running`` run and the KV pool can hold what every running request
  may still need: its prompt plus ``min(max_new_tokens, 4096)`` (SGLang's
  ``CLIP_MAX_NEW_TOKENS``; no retraction is modelled, so the reservation is kept whole).
  A request that waits is queued (``#queue-req``); an empty batch always admits its head,
  so one oversized request cannot stall the queue.
* **Prefill** runs before decode, one prefill batch at a time, up to
  ``chunked_prefill_size`` new tokens per batch (the first request always fits); a request
  gets its first token when its batch ends. A prefill batch is slower by
  ``prefill_slowdown_per_running`` for each request already running (FIT).
* **Decode** is one iteration (a plain step or a speculative round) over the whole running
  batch; its cost comes from :meth:`PerfModel.decode_ms` at the rows of the smallest
  captured decode CUDA graph that holds the batch (``cuda_graph_config.decode.bs``: a batch
  of 3 among graphs of 1, 2, 4 runs 4 rows, the fourth padded; past the largest graph it
  runs its own rows, without a graph, whose launch overhead is not modelled). Only sizes
  the launch gives (``--cuda-graph-bs-decode``) pad: SGLang's default list is not in the
  facts, and the cookbook cells calibrated with it absorb its padding.

:class:`Core` holds the queue and the batch. :class:`~tuner_sim.engine.Engine` drives it in
scaled wall time for the server; :mod:`tuner_sim.load` drives it in virtual time for
``tuner sim calibrate``.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

from tuner_sim.perf import PerfModel
from tuner_sim.request import SimRequest


#: SGLang's CLIP_MAX_NEW_TOKENS: the most output tokens a request reserves in the pool
CLIP_MAX_NEW_TOKENS = 4096


@dataclass(frozen=True)
class Limits:
    """What bounds the running batch: requests, pool tokens, tokens per prefill batch."""

    max_running: int
    pool_tokens: int
    chunk_tokens: int                # chunked_prefill_size; <= 0: one batch takes all
    #: the decode batch sizes the launch captures as CUDA graphs (``--cuda-graph-bs-decode``;
    #: empty: graphs disabled, or SGLang's own list, which the calibration absorbs)
    graph_bs: tuple[int, ...] = ()

    @classmethod
    def of(cls, args: dict[str, object], pool_tokens: int) -> Limits:
        # padded only against sizes the launch gives: SGLang's own default list is not in
        # the facts here, and the cookbook cells calibrated on it absorb its padding
        graph = args.get("cuda_graph_config")
        decode = graph.get("decode", {}) if isinstance(graph, dict) else {}
        given = args.get("cuda_graph_bs_decode")
        sizes = (tuple(sorted(int(b) for b in given))  # type: ignore[attr-defined]
                 if given and decode.get("backend", "full") != "disabled" else ())
        return cls(max_running=int(args["max_running_requests"]),  # type: ignore[call-overload]
                   pool_tokens=pool_tokens,
                   chunk_tokens=int(args["chunked_prefill_size"]),  # type: ignore[call-overload]
                   graph_bs=sizes)

    def padded(self, batch: int) -> int:
        """The rows a decode of ``batch`` requests runs: the smallest captured graph that
        holds it (its rows past the batch padded), or the batch itself past the largest
        (run without a graph)."""
        return next((b for b in self.graph_bs if b >= batch), batch)


def reservation(r: SimRequest) -> int:
    """Pool tokens a running request holds: its prompt and what it may still write."""
    return r.prompt_tokens + min(r.max_new_tokens, CLIP_MAX_NEW_TOKENS)


class Core:
    """The waiting queue and the running batch, and what each iteration costs."""

    def __init__(self, perf: PerfModel, limits: Limits, slowdown: float = 0.0) -> None:
        self.perf = perf
        self.limits = limits
        self.slowdown = slowdown
        self.pending: deque[SimRequest] = deque()
        self.running: list[SimRequest] = []
        #: each decoding request's acceptance chain, by id (the request kept: ids recycle)
        self._probs: dict[int, tuple[SimRequest, list[float]]] = {}

    def reserved(self) -> int:
        return sum(reservation(r) for r in self.running)

    def next_prefill(self) -> list[SimRequest]:
        """Pop the next prefill batch from the queue (empty: decode, or nothing to do)."""
        lim = self.limits
        room = lim.pool_tokens - self.reserved()
        chunk = lim.chunk_tokens if lim.chunk_tokens > 0 else math.inf
        admit: list[SimRequest] = []
        new_tokens = 0
        while self.pending and len(self.running) + len(admit) < lim.max_running:
            r = self.pending[0]
            need = reservation(r)
            fresh = r.prompt_tokens - r.cached_tokens
            if admit and new_tokens + fresh > chunk:
                break
            if need > room and (admit or self.running):
                break
            admit.append(self.pending.popleft())
            room -= need
            new_tokens += fresh
        return admit

    def prefill_ms(self, admit: list[SimRequest]) -> float:
        """Machine time of one prefill batch, slowed by the requests already running."""
        ms = sum(self.perf.prefill_ms(r.prompt_tokens - r.cached_tokens, r.cached_tokens)
                 for r in admit)
        return ms * (1.0 + self.slowdown * len(self.running))

    def decode_ms(self, batch: list[SimRequest]) -> float:
        """Machine time of one decode iteration over ``batch``, run in the smallest captured
        CUDA graph that holds it: the padded rows cost as real ones in every per-row term
        but attention (they hold no context: the batch's context is spread over the rows)."""
        kind = batch[0].kind if all(r.kind == batch[0].kind for r in batch) else "sampled"
        rows = self.limits.padded(len(batch))
        ctx = sum(r.prompt_tokens + r.emitted for r in batch) / rows
        return self.perf.decode_ms(ctx, kind, batch=rows, content=batch[0].content)

    def accepted(self, r: SimRequest) -> int:
        """Draft tokens the verify accepts for ``r`` this round (its own random stream)."""
        held = self._probs.get(id(r))
        if held is not None and held[0] is r:
            probs = held[1]
        else:                   # fixed for a request: its rate, mode and class never change
            probs = self.perf.position_probs(r.first_rate, r.kind, r.content)
            self._probs[id(r)] = (r, probs)
        n = 0
        for p in probs:
            if r.rng.random() >= p:
                break
            n += 1
        return n

    def advance(self, batch: list[SimRequest]) -> tuple[int, list[SimRequest]]:
        """Emit one iteration's tokens for ``batch``: (tokens produced, requests finished).
        Finished requests leave the running batch."""
        spec = self.perf.s.speculative
        produced = 0
        done: list[SimRequest] = []
        for r in batch:
            n = 1
            if spec:
                acc = self.accepted(r)
                n = 1 + acc
                r.verify_ct += 1
                r.correct_drafts += acc
                r.proposed_drafts += self.perf.s.drafted
                while len(r.hist) <= acc:
                    r.hist.append(0)
                r.hist[acc] += 1
            n = min(n, r.limit - r.emitted)
            r.emitted += n
            produced += n
            if r.emitted >= r.limit:
                done.append(r)
        if done:
            gone = {id(r) for r in done}
            for key in gone:
                self._probs.pop(key, None)
            self.running = [r for r in self.running if id(r) not in gone]
        return produced, done
