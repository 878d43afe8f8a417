"""Sending a workload's prompts to a server and timing them.

Every request is timed by the client from the stream (the engine's
:meth:`~tuner.engines.ServerProtocol.stream`): TTFT is the arrival of the first chunk,
end-to-end the arrival of the last; the engine's per-request report gives the completion
tokens and verify rounds. Wall times are multiplied by the server's time scale (1 for a
real server) so every figure is machine time. The workload scores the texts once every
request of a batch is sent (:func:`score_requests`), never while one is being timed: a
code completion's tests run in a sandboxed process.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
from pydantic import AliasChoices
from pydantic import BaseModel
from pydantic import Field

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
    #: speculative verify rounds, as the engine's :class:`~tuner.engines.Completion` reports
    #: them (results written before this name read theirs from SGLang's ``spec_verify_ct``)
    verify_rounds: int | None = Field(
        default=None, validation_alias=AliasChoices("verify_rounds", "spec_verify_ct"))
    accept_length: float | None = None
    finish_reason: str | None = None
    correct: bool | None = None
    answer: str | None = None
    #: the prompt's content class (math, code, chat, random, or a user's label)
    content: str | None = None


#: a sent request's record and its completion's text (not kept in the record)
Sent = tuple[RequestRecord, str]


def _one(client: httpx.Client, protocol: ServerProtocol, prompt: Prompt, scale: float
         ) -> Sent:
    c = protocol.stream(client, prompt)
    n = c.completion_tokens
    ttft, e2e = c.first_s * scale, c.end_s * scale
    return RequestRecord(
        prompt_id=prompt.id, prompt_tokens=c.prompt_tokens, completion_tokens=n,
        cached_tokens=c.cached_tokens, ttft_s=ttft, e2e_s=e2e,
        tpot_ms=(e2e - ttft) / (n - 1) * 1000 if n > 1 else None,
        verify_rounds=c.verify_rounds, accept_length=c.accept_length,
        finish_reason=c.finish_reason, content=prompt.content), c.text


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


def send_requests(base_url: str, headers: dict[str, str], protocol: ServerProtocol,
                  prompts: list[Prompt], *, scale: float = 1.0, concurrency: int = 1,
                  timeout_s: float = 3600.0) -> list[Sent]:
    """Send ``prompts`` (``concurrency`` at a time); their records and texts in order,
    unscored. Raises :class:`~tuner.engines.RequestFailed` on the first failed request."""
    limits = httpx.Limits(max_connections=max(1, concurrency) + 1)
    with _collector_paused(), httpx.Client(base_url=base_url, headers=headers,
                                           timeout=timeout_s, limits=limits) as client:
        if concurrency <= 1:
            sent = []
            for p in prompts:
                sent.append(_one(client, protocol, p, scale))
                gc.collect(1)       # young cycles, between requests: no timestamp is taken
            return sent
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            futures = [pool.submit(_one, client, protocol, p, scale) for p in prompts]
            return [f.result() for f in futures]


def score_requests(workload: Workload | None, prompts: list[Prompt], sent: list[Sent]
                   ) -> list[RequestRecord]:
    """The records of ``sent`` (``prompts``' requests, in order), each prompt that carries
    a reference answer scored by ``workload`` (:meth:`~tuner.workloads.Workload.score_all`)."""
    records = [r for r, _ in sent]
    if workload is None:
        return records
    todo = [i for i, p in enumerate(prompts[:len(sent)]) if p.answer is not None]
    got = workload.score_all([(prompts[i], sent[i][1]) for i in todo])
    for i, (correct, answer) in zip(todo, got, strict=True):
        records[i] = records[i].model_copy(update={"correct": correct, "answer": answer})
    return records


def run_requests(base_url: str, headers: dict[str, str], protocol: ServerProtocol,
                 prompts: list[Prompt], *, workload: Workload | None = None,
                 scale: float = 1.0, concurrency: int = 1, timeout_s: float = 3600.0
                 ) -> list[RequestRecord]:
    """Send ``prompts`` (``concurrency`` at a time), then score them with ``workload``
    (those that carry a reference answer); their records in order. Raises
    :class:`~tuner.engines.RequestFailed` on the first failed request."""
    sent = send_requests(base_url, headers, protocol, prompts, scale=scale,
                         concurrency=concurrency, timeout_s=timeout_s)
    return score_requests(workload, prompts, sent)
