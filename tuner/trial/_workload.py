"""Running a workload against a server through SGLang's native streaming ``/generate``.

Every request is timed by the client from the stream: TTFT is the arrival of the first
chunk, end-to-end the arrival of the last, and the per-request ``meta_info`` gives the
completion tokens and verify rounds. Wall times are multiplied by the server's
``time_scale`` (1 for a real server) so every figure is machine time.
"""

from __future__ import annotations

import contextlib
import gc
import json
import random
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import httpx
from pydantic import BaseModel

from tuner.space import Workload
from tuner.workloads import gsm8k
from tuner.workloads.vocab import synthetic_id_range


class RequestRecord(BaseModel):
    """One measured request. Times are machine time."""

    prompt_id: str
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int | None = None
    ttft_s: float
    e2e_s: float
    tpot_ms: float | None = None
    spec_verify_ct: int | None = None
    accept_length: float | None = None
    finish_reason: str | None = None
    correct: bool | None = None
    answer: str | None = None


class BenchError(Exception):
    """A request failed (connection lost, HTTP error, malformed stream)."""


@dataclass(frozen=True)
class Prepared:
    """The requests of a workload: (id, /generate body, problem for scoring or None)."""

    warmup: list[tuple[str, dict[str, Any], gsm8k.Problem | None]]
    measured: list[tuple[str, dict[str, Any], gsm8k.Problem | None]]


def prepare(w: Workload, *, gsm8k_source: str | None, vocab_size: int | None = None
            ) -> Prepared:
    """Build the warm-up and measured requests of workload ``w``.

    A synthetic workload needs ``vocab_size`` (see :mod:`tuner.workloads.vocab`): its
    prompt ids are drawn from the model's own vocabulary.
    """
    if w.kind == "gsm8k":
        if gsm8k_source is None:
            from tuner.errors import UserError

            raise UserError("the GSM8K workload needs its data: pass --gsm8k DIR (a folder "
                            "with test.jsonl and train.jsonl) or --gsm8k online")
        test = gsm8k.load_split(gsm8k_source, "test")
        train = gsm8k.load_split(gsm8k_source, "train")
        prefix = gsm8k.few_shot_prefix(train, w.num_shots, w.seed)
        sp = {"max_new_tokens": w.max_tokens, "temperature": w.temperature, "top_p": w.top_p,
              "top_k": w.top_k, "stop": ["Question:"]}
        scored = gsm8k.subset(test, w.questions, w.seed)
        shot_questions = {q.question for q in train if q.question in prefix}
        warm_pool = [p for p in train if p.question not in shot_questions]
        rng = random.Random(f"warmup-{w.seed}")
        warm = rng.sample(warm_pool, min(w.warmup_requests, len(warm_pool)))
        return Prepared(
            warmup=[(f"warmup-{p.index}", {"text": gsm8k.prompt(prefix, p),
                                           "sampling_params": sp}, None) for p in warm],
            measured=[(p.id, {"text": gsm8k.prompt(prefix, p), "sampling_params": sp}, p)
                      for p in scored])
    if vocab_size is None:
        raise ValueError("the synthetic workload needs the model's vocabulary size")
    low, high = synthetic_id_range(vocab_size)
    rng = random.Random(f"synthetic-{w.seed}")
    sp = {"max_new_tokens": w.output_len, "temperature": 0.0, "ignore_eos": True}

    def body() -> dict[str, Any]:
        return {"input_ids": [rng.randrange(low, high) for _ in range(w.input_len)],
                "sampling_params": sp}

    return Prepared(warmup=[(f"warmup-{i}", body(), None) for i in range(w.warmup_requests)],
                    measured=[(f"synthetic-{i}", body(), None) for i in range(w.questions)])


def _one(client: httpx.Client, rid: str, body: dict[str, Any], problem: gsm8k.Problem | None,
         scale: float) -> RequestRecord:
    t0 = time.perf_counter()
    first: float | None = None
    end = t0
    last: dict[str, Any] | None = None
    try:
        with client.stream("POST", "/generate", json={**body, "stream": True}) as resp:
            if resp.status_code != 200:
                resp.read()
                raise BenchError(f"{rid}: HTTP {resp.status_code}: {resp.text[:200]}")
            for line in resp.iter_lines():
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    break
                end = time.perf_counter()      # arrival of the latest chunk
                if first is None:
                    first = end
                last = json.loads(data)
    except httpx.HTTPError as exc:
        raise BenchError(f"{rid}: {exc.__class__.__name__}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise BenchError(f"{rid}: malformed stream chunk ({exc})") from None
    if last is None or first is None:
        raise BenchError(f"{rid}: the stream ended without output")
    meta = last.get("meta_info") or {}
    n = int(meta.get("completion_tokens", 0))
    ttft, e2e = (first - t0) * scale, (end - t0) * scale
    verify = meta.get("spec_verify_ct")
    text = last.get("text", "")
    answer = gsm8k.extract_final_number(text) if problem is not None else None
    reason = meta.get("finish_reason")
    return RequestRecord(
        prompt_id=rid, prompt_tokens=int(meta.get("prompt_tokens", 0)), completion_tokens=n,
        cached_tokens=meta.get("cached_tokens"), ttft_s=ttft, e2e_s=e2e,
        tpot_ms=(e2e - ttft) / (n - 1) * 1000 if n > 1 else None,
        spec_verify_ct=int(verify) if verify else None,
        accept_length=n / verify if verify else None,
        finish_reason=reason.get("type") if isinstance(reason, dict) else reason,
        correct=(answer is not None and answer == problem.answer) if problem else None,
        answer=answer)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause cyclic garbage collection while requests are timed, as ``timeit`` does.

    A collection takes up to ~10 ms in this process; one that lands between a stream's first
    or last chunk and its timestamp moves that request's TPOT (x ``time_scale`` against the
    simulator). Collected once before, re-enabled after; one at a time, the young
    generations are also collected between requests, so a long run does not grow.
    """
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def run_requests(base_url: str, headers: dict[str, str],
                 items: list[tuple[str, dict[str, Any], gsm8k.Problem | None]], *,
                 scale: float, concurrency: int = 1, timeout_s: float = 3600.0
                 ) -> list[RequestRecord]:
    """Send ``items`` (``concurrency`` at a time) and return their records in order."""
    limits = httpx.Limits(max_connections=max(1, concurrency) + 1)
    with _collector_paused(), httpx.Client(base_url=base_url, headers=headers,
                                           timeout=timeout_s, limits=limits) as client:
        if concurrency <= 1:
            records = []
            for rid, body, p in items:
                records.append(_one(client, rid, body, p, scale))
                gc.collect(1)       # young cycles, between requests: no timestamp is taken
            return records
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            futures = [pool.submit(_one, client, rid, body, p, scale) for rid, body, p in items]
            return [f.result() for f in futures]
