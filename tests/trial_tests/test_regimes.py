"""Load regimes: the same launch measured at other concurrencies, against real simulator
processes (the Spark space runs one request at a time, so a regime of 4 users queues)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import SPARK
from tests.trial_tests.test_run_trial import assert_clean
from tests.trial_tests.test_run_trial import trial
from tuner.space import Regime
from tuner.space import Workload


pytestmark = pytest.mark.slow


def test_a_regime_above_what_the_server_runs_at_once_queues_and_misses_its_sla(
        tmp_path: Path) -> None:
    regimes = [Regime(name="one", concurrency=1, requests=3),
               Regime.model_validate({"name": "four", "concurrency": 4, "requests": 8,
                                      "sla": {"p95_ttft_s": 1.0}})]
    r = trial(tmp_path, workload={"questions": 6, "max_tokens": 256, "regimes": regimes})
    assert r.ok and [g.name for g in r.regimes] == ["one", "four"]
    one, four = r.regimes
    assert one.status == four.status == "ok" and (one.requests, four.requests) == (3, 8)
    assert one.sla_met == 1.0 and one.within_sla is None        # no SLA: every request counts
    assert one.goodput_rps == pytest.approx(3 / one.duration_s)
    # --max-running-requests 1: a queued request's first token waits for whole requests
    # before it, so the last ones miss a 1 s TTFT bound
    shortest = min(x.e2e_s for x in r.requests)
    assert four.ttft_p95_s > shortest > 1.0
    assert four.within_sla is False and four.sla_met < 1.0
    assert four.goodput_rps == pytest.approx(four.sla_met * 8 / four.duration_s)
    # the server's batch lines say so: one running, the others waiting
    assert four.peak_running == 1 and four.peak_queued is not None and four.peak_queued >= 1
    assert one.peak_running == 1 and one.peak_queued == 0
    assert_clean(r)


def test_a_regime_that_kills_the_server_fails_alone(tmp_path: Path) -> None:
    """An out-of-memory at load is that regime's failure: the trial's own figures stand."""
    regimes = [Regime(name="many", concurrency=2, requests=4)]
    r = trial(tmp_path, workload={"questions": 4, "max_tokens": 64, "regimes": regimes},
              faults=[{"kind": "crash_after", "after": 7}])     # 2 warm-up + 4 + 1
    assert r.ok and r.aggregates is not None and r.aggregates.requests == 4
    assert r.gate is not None and r.gate.passed
    (g,) = r.regimes
    assert g.status == "failed" and g.message and g.tpot_mean_ms is None
    assert_clean(r)


@pytest.mark.parametrize(("regimes", "says"), [
    ([{"name": "a", "concurrency": 2}, {"name": "a", "concurrency": 4}], "must differ"),
    ([{"name": "a", "concurrency": 8, "requests": 4}], "at least its concurrency"),
    ([{"name": "a", "concurrency": 2, "sla": {"p95_tpot_ms": 0}}], "greater than 0"),
    ([{"name": "a", "concurrency": 0}], "greater than or equal to 1"),
])
def test_an_impossible_regime_is_refused(regimes: list[dict], says: str) -> None:
    with pytest.raises(ValueError, match=says):
        Workload.model_validate({"regimes": regimes})


def test_a_regime_sends_four_requests_per_user_by_default() -> None:
    assert Regime(name="x", concurrency=16).total == 64


def test_a_regime_larger_than_what_a_launch_serves_at_once_is_said() -> None:
    from tuner.trial import queue_notes

    regimes = [Regime(name="one", concurrency=1), Regime(name="sixteen", concurrency=16)]
    (line,) = queue_notes(regimes, 4)
    assert "'sixteen' has 16 users" in line and "at most 4 at once: 12 wait" in line
    assert queue_notes(regimes, 16) == [] and queue_notes(regimes, None) == []


def test_the_plan_says_how_many_requests_a_launch_serves_at_once() -> None:
    from tuner.engines import make_engine
    from tuner.space import load_space

    space = load_space(SPARK)
    engine = make_engine("sim")
    assert engine.plan(space, engine.resolve(space, {})).max_running == 1


def test_the_batch_load_is_read_from_a_real_sglang_log() -> None:
    """The line format of SGLang 0.5.17 on an H200 (a recorded server log)."""
    from tests.conftest import REPO
    from tuner.engines import make_engine

    log = (REPO / "tests/fixtures/real_sglang_h200/server-qwen3-dspark.log").read_text()
    protocol = make_engine("sglang").protocol()
    assert protocol.batch_load(log) == (1, 0)
    busy = ("[t] Decode batch, #running-req: 9, #token: 9000, token usage: 0.40, cuda graph: "
            "True, gen throughput (token/s): 300.0, #queue-req: 7\n"
            "[t] Prefill batch, #new-seq: 2, #new-token: 3200, #cached-token: 0, token usage: "
            "0.41, #running-req: 11, #queue-req: 5, #pending-token: 0\n")
    assert protocol.batch_load(busy) == (11, 7)
    assert protocol.batch_load("no batch lines here") is None
