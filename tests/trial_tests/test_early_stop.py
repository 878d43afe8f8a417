"""A trial judged after the first part of its workload stops there when it is clearly not
a candidate (real simulator servers)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.trial_tests.test_run_trial import OPTIMISED
from tests.trial_tests.test_run_trial import assert_clean
from tests.trial_tests.test_run_trial import trial
from tuner.trial import EarlyStop


pytestmark = pytest.mark.slow
QUESTIONS = {"questions": 12}


def test_a_trial_slower_than_the_best_stops_after_the_first_part(tmp_path: Path) -> None:
    # the baseline (~26 ms on the simulated Spark) against a best of 15 ms: dominated
    r = trial(tmp_path, {}, workload=QUESTIONS,
              early_stop=EarlyStop(0.25, slower_than_ms=15.0))
    assert r.status == "pruned" and r.reason == "dominated", (r.status, r.message)
    assert len(r.requests) == 3 and r.aggregates is not None      # ceil(0.25 x 12)
    assert r.aggregates.tpot_ci95 is not None and r.aggregates.tpot_ci95.low > 15.0
    assert "stopped early" in (r.message or "")
    assert_clean(r)


def test_a_trial_that_may_be_faster_runs_its_whole_workload(tmp_path: Path) -> None:
    r = trial(tmp_path, OPTIMISED, workload=QUESTIONS,
              early_stop=EarlyStop(0.25, slower_than_ms=40.0))
    assert r.ok and len(r.requests) == 12
    assert r.feasible


def test_a_collapsed_speculation_stops_after_the_first_part(tmp_path: Path) -> None:
    # the published trap: FP8 LM head + MTP without the shared module, accept length 1.00
    r = trial(tmp_path, OPTIMISED, variant="fork-unshared", workload=QUESTIONS,
              early_stop=EarlyStop(0.25))
    assert r.status == "pruned" and r.reason == "collapsed", (r.status, r.message)
    assert len(r.requests) == 3
    assert r.gate is not None and [x.rule for x in r.gate.fired()] == ["collapse"]
