"""Replays of what real SGLang 0.5.17 answered on an H200 (docs/real-sglang-h200.md).

The fixtures are the TrialResults ``tuner trial`` wrote there and the servers' own logs;
each test feeds the recorded ``/server_info``, per-request ``meta_info`` figures and log text
through today's plan, evidence, aggregation, gate and failure-classification code.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tuner.engines import make_engine
from tuner.space import load_space
from tuner.trial import TrialResult
from tuner.trial._evidence import effect_check
from tuner.trial._gate import evaluate
from tuner.trial._stats import aggregate


HERE = Path(__file__).resolve().parents[1] / "fixtures" / "real_sglang_h200"
SPACES = Path(__file__).resolve().parents[2] / "search_spaces"
TRIALS = sorted(HERE.glob("trial-*.json"))


def _load(path: Path) -> TrialResult:
    return TrialResult.model_validate_json(path.read_text())


def _space(result: TrialResult):  # type: ignore[no-untyped-def]
    return load_space(SPACES / f"{result.space}.yaml")


def _observed(path: Path, result: TrialResult) -> tuple[dict, str]:
    """What the trial's evidence was checked against: the full ``/server_info`` when one was
    kept beside it (``server-info-<name>.json``: a TrialResult records a subset, which drops
    DSPARK's own fields), else the recorded subset; the server log when it is a fixture."""
    name = path.stem.removeprefix("trial-")
    info = HERE / f"server-info-{name}.json"
    log = HERE / f"server-{name}.log"
    return (json.loads(info.read_text()) if info.exists() else result.server_info,
            log.read_text() if log.exists() else "")


def test_the_fixtures_are_real_measurements() -> None:
    assert len(TRIALS) == 6
    for path in TRIALS:
        r = _load(path)
        assert r.status == "ok" and not r.simulated and r.engine == "sglang"
        assert r.engine_version == "0.5.17" and r.time_scale == 1.0
        assert r.aggregates is not None and r.aggregates.tpot_ms and r.requests


@pytest.mark.parametrize("path", TRIALS, ids=lambda p: p.stem)
def test_todays_adapter_plans_the_launch_that_ran(path: Path) -> None:
    r = _load(path)
    space = _space(r)
    engine = make_engine("sglang")
    config = engine.resolve(space, r.config)
    plan = engine.plan(space, config, host=r.plan.host, port=r.plan.port)
    assert plan.argv == r.plan.argv and plan.env == r.plan.env
    assert config.hash() == r.config_hash


@pytest.mark.parametrize("path", TRIALS, ids=lambda p: p.stem)
def test_recorded_server_info_confirms_every_knob(path: Path) -> None:
    r = _load(path)
    checks = effect_check(r.plan.evidence, *_observed(path, r))
    assert [(c.knob, c.verdict) for c in checks] == [(c.knob, c.verdict) for c in r.effect]
    assert {c.verdict for c in checks} == {"confirmed"}


@pytest.mark.parametrize("path", TRIALS, ids=lambda p: p.stem)
def test_todays_fixed_flag_evidence_holds_on_the_real_server_info(path: Path) -> None:
    # The recorded /server_info keeps a subset of fields; whatever of the fixed flags it
    # shows must agree (0.5.17 folds the CUDA-graph flags into cuda_graph_config too).
    r = _load(path)
    space = _space(r)
    engine = make_engine("sglang")
    plan = engine.plan(space, engine.resolve(space, r.config), port=r.plan.port)
    fixed = [ev for ev in plan.evidence if ev.knob.startswith("(fixed) ")]
    verdicts = {c.knob: c.verdict for c in effect_check(fixed, r.server_info, "")}
    assert "mismatched" not in verdicts.values()
    for flag in ("--attention-backend", "--context-length", "--max-running-requests",
                 "--cuda-graph-backend-decode", "--cuda-graph-backend-prefill"):
        assert verdicts[f"(fixed) {flag}"] == "confirmed"
    dropped = {**r.server_info, "attention_backend": "flashinfer"}
    again = {c.knob: c.verdict for c in effect_check(fixed, dropped, "")}
    assert again["(fixed) --attention-backend"] == "mismatched"


def test_a_real_server_info_that_disagrees_is_a_mismatch() -> None:
    r = _load(HERE / "trial-dsv3-nextn.json")
    info = {**r.server_info, "speculative_num_steps": 3}     # as if SGLang had overridden it
    by_knob = {c.knob: c.verdict for c in effect_check(r.plan.evidence, info, "")}
    assert by_knob["spec_steps"] == "mismatched" and by_knob["speculative"] == "confirmed"


def test_nextn_resolves_to_eagle_on_the_real_server() -> None:
    # SGLang reports NEXTN as EAGLE: the space's evidence says so, and the server agreed.
    r = _load(HERE / "trial-dsv3-nextn.json")
    assert r.server_info["speculative_algorithm"] == "EAGLE"
    assert r.server_info["speculative_num_draft_tokens"] == 3      # topk 1: steps + 1


@pytest.mark.parametrize("path", TRIALS, ids=lambda p: p.stem)
def test_aggregation_of_the_recorded_requests_reproduces_the_figures(path: Path) -> None:
    r = _load(path)
    again = aggregate(r.requests)
    assert r.aggregates is not None
    assert again.tpot_ms == pytest.approx(r.aggregates.tpot_ms, rel=1e-12)
    assert again.tpot_ci95 is not None and r.aggregates.tpot_ci95 is not None
    assert again.tpot_ci95.low == pytest.approx(r.aggregates.tpot_ci95.low, rel=1e-12)
    assert again.accept_length == r.aggregates.accept_length


def test_accept_length_comes_from_the_real_spec_verify_ct() -> None:
    r = _load(HERE / "trial-dsv3-nextn.json")
    tokens = sum(q.completion_tokens for q in r.requests)
    rounds = sum(q.verify_rounds or 0 for q in r.requests)
    assert rounds > 0 and r.aggregates is not None
    assert r.aggregates.accept_length == pytest.approx(tokens / rounds)
    # random weights: the draft is almost never right (63 rounds for 64 tokens)
    assert 1.0 <= r.aggregates.accept_length < 1.05
    base = _load(HERE / "trial-dsv3-baseline.json")
    assert all(q.verify_rounds is None for q in base.requests)
    assert base.aggregates is not None and base.aggregates.accept_length is None


def test_the_gate_on_real_figures() -> None:
    r = _load(HERE / "trial-dsv3-nextn.json")
    space = _space(r)
    assert r.aggregates is not None
    ok = evaluate(r.aggregates, speculative=True, cfg=space.spec.gate)
    assert ok.passed       # the tiny spaces' floor is 0.5: random weights cannot collapse
    strict = space.spec.gate.model_copy(update={"accept_length_floor": 1.2})
    collapsed = evaluate(r.aggregates, speculative=True, cfg=strict)
    assert not collapsed.passed
    assert [g.rule for g in collapsed.fired()] == ["collapse"]


def test_the_real_log_carries_sglangs_cumulative_accept_length() -> None:
    # Why the tool never reads it: the server's "accept len" is per decode batch/cumulative;
    # the trial's own figure comes from per-request spec_verify_ct.
    log = (HERE / "server-dsv3-nextn.log").read_text()
    assert "The server is fired up and ready to roll!" in log
    assert "accept len: 1.00" in log and "accept len: 1.05" in log


def test_a_real_config_file_refusal_is_a_launch_error_with_its_line() -> None:
    tail = (HERE / "server-config-refused-tail.log").read_text()
    protocol = make_engine("sglang").protocol()
    assert protocol.classify_exit(tail) == "launch_error"
    assert protocol.last_error_line(tail).startswith(
        "ValueError: Unsupported config option 'cuda_graph_backend_prefill'")


def test_a_real_out_of_memory_start_is_classified_oom_with_the_exception_line() -> None:
    r = _load(HERE / "failed-qwen3moe-oom.json")
    assert r.status == "failed" and r.reason == "oom" and r.plan.engine_version == "0.5.17"
    tail = (HERE / "server-oom-tail.log").read_text()
    protocol = make_engine("sglang").protocol()
    assert protocol.classify_exit(tail) == "oom"
    # the exception, not CUDA's "Search for `cudaErrorMemoryAllocation'" advice after it
    assert protocol.last_error_line(tail) == "torch.AcceleratorError: CUDA error: out of memory"
    space = _space(r)
    engine = make_engine("sglang")
    plan = engine.plan(space, engine.resolve(space, r.config), host=r.plan.host,
                       port=r.plan.port)
    assert plan.argv == r.plan.argv
