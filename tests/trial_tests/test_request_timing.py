"""The client times requests with the garbage collector paused, and leaves it as it found it."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from tuner.engines import Completion
from tuner.engines import RequestFailed
from tuner.trial import run_requests
from tuner.trial._requests import _collector_paused
from tuner.workloads import Prompt
from tuner.workloads import Sampling


class GcWatchingProtocol:
    """A stand-in for an engine's protocol (no server): records whether the collector ran
    while each request was 'streamed', or fails the first request."""

    def __init__(self, fail: bool = False) -> None:
        self.seen: list[bool] = []
        self.fail = fail

    def stream(self, client: object, prompt: Prompt) -> Completion:
        if self.fail:
            raise RequestFailed(f"{prompt.id}: HTTP 500")
        self.seen.append(gc.isenabled())
        return Completion(text="", completion_tokens=3, prompt_tokens=1, first_s=0.1,
                          end_s=0.3)


PROMPTS = [Prompt(f"r{i}", Sampling(max_new_tokens=3), text="x") for i in range(4)]


@pytest.fixture
def collector_enabled() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    (gc.enable if was else gc.disable)()


def test_requests_are_timed_with_the_collector_paused(collector_enabled: None) -> None:
    proto = GcWatchingProtocol()
    for concurrency in (1, 2):
        got = run_requests("http://127.0.0.1:9", {}, proto, PROMPTS,  # type: ignore[arg-type]
                           concurrency=concurrency)
        assert [r.prompt_id for r in got] == ["r0", "r1", "r2", "r3"]
        assert got[0].tpot_ms == pytest.approx(100.0)      # (0.3 - 0.1) s / 2 tokens
    assert proto.seen == [False] * 8
    assert gc.isenabled()                        # restored after


def test_a_collector_the_caller_disabled_stays_disabled() -> None:
    was = gc.isenabled()
    gc.disable()
    try:
        with _collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()


def test_the_collector_comes_back_after_a_failed_request(collector_enabled: None) -> None:
    with pytest.raises(RequestFailed):
        run_requests("http://127.0.0.1:9", {}, GcWatchingProtocol(fail=True),  # type: ignore[arg-type]
                     PROMPTS[:1])
    assert gc.isenabled()
