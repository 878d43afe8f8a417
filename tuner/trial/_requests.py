"""Sending a workload's prompts to a server and timing them.

Every request is timed by the client from the stream (the engine's
:meth:`~tuner.engines.ServerProtocol.stream`): TTFT is the arrival of the first chunk,
end-to-end the arrival of the last; the engine's per-request report gives the completion
tokens and verify rounds, and the workload scores the text. Wall times are multiplied by
the server's time scale (1 for a real server) so every figure is machine time.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
from pydantic import BaseModel

from tuner.engines import ServerProtocol
from tuner.workloads import Prompt
from tuner.workloads import Workload


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
    #: the prompt's content class (math, code, chat, random, or a user's label)
    content: str | None = None


def _one(client: httpx.Client, protocol: ServerProtocol, workload: Workload | None,
         prompt: Prompt, scale: float) -> RequestRecord:
    c = protocol.stream(client, prompt)
    n = c.completion_tokens
    ttft, e2e = c.first_s * scale, c.end_s * scale
    verify = c.verify_rounds
    correct, answer = (workload.score(prompt, c.text) if workload is not None
                       and prompt.answer is not None else (None, None))
    return RequestRecord(
        prompt_id=prompt.id, prompt_tokens=c.prompt_tokens, completion_tokens=n,
        cached_tokens=c.cached_tokens, ttft_s=ttft, e2e_s=e2e,
        tpot_ms=(e2e - ttft) / (n - 1) * 1000 if n > 1 else None,
        spec_verify_ct=verify, accept_length=n / verify if verify else None,
        finish_reason=c.finish_reason, correct=correct, answer=answer, content=prompt.content)


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


def run_requests(base_url: str, headers: dict[str, str], protocol: ServerProtocol,
                 prompts: list[Prompt], *, workload: Workload | None = None,
                 scale: float = 1.0, concurrency: int = 1, timeout_s: float = 3600.0
                 ) -> list[RequestRecord]:
    """Send ``prompts`` (``concurrency`` at a time); their records in order. ``workload``
    scores the prompts that carry a reference answer. Raises
    :class:`~tuner.engines.RequestFailed` on the first failed request."""
    limits = httpx.Limits(max_connections=max(1, concurrency) + 1)
    with _collector_paused(), httpx.Client(base_url=base_url, headers=headers,
                                           timeout=timeout_s, limits=limits) as client:
        if concurrency <= 1:
            records = []
            for p in prompts:
                records.append(_one(client, protocol, workload, p, scale))
                gc.collect(1)       # young cycles, between requests: no timestamp is taken
            return records
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            futures = [pool.submit(_one, client, protocol, workload, p, scale)
                       for p in prompts]
            return [f.result() for f in futures]
