"""The client times requests with the garbage collector paused, and leaves it as it found it."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from tuner.trial import _workload


@pytest.fixture
def collector_enabled() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    (gc.enable if was else gc.disable)()


def test_requests_are_timed_with_the_collector_paused(collector_enabled: None,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool] = []

    def one(client: object, rid: str, *_: object) -> str:
        seen.append(gc.isenabled())
        return rid

    monkeypatch.setattr(_workload, "_one", one)
    items = [(f"r{i}", {}, None) for i in range(4)]
    for concurrency in (1, 2):
        got = _workload.run_requests("http://127.0.0.1:9", {}, items, scale=1.0,
                                     concurrency=concurrency)
        assert got == ["r0", "r1", "r2", "r3"]
    assert seen == [False] * 8
    assert gc.isenabled()                        # restored after


def test_a_collector_the_caller_disabled_stays_disabled() -> None:
    was = gc.isenabled()
    gc.disable()
    try:
        with _workload._collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()


def test_the_collector_comes_back_after_a_failed_request(collector_enabled: None,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    def one(*_: object) -> None:
        raise _workload.BenchError("r0: HTTP 500")

    monkeypatch.setattr(_workload, "_one", one)
    with pytest.raises(_workload.BenchError):
        _workload.run_requests("http://127.0.0.1:9", {}, [("r0", {}, None)], scale=1.0)
    assert gc.isenabled()
