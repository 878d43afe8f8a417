"""Replays of what real SGLang 0.5.17 answered to DSPARK on an H200 (issue 26;
docs/real-sglang-h200.md, "DSPARK on the real engine").

A tiny random-weight dense Qwen3 target with a tiny DSpark draft, both built on the machine by
``benchmarks/real_sglang/make_tiny.py``; ``search_spaces/tiny-qwen3-dspark-h200.yaml``. The
fixtures are the TrialResults ``tuner trial`` wrote, the full ``/server_info`` the server
answered (kept by ``benchmarks/real_sglang/info_tap.py``: a TrialResult keeps a subset that
drops DSPARK's own fields), the server logs, SGLang's own DSPARK resolution outside the tool
(``h200.sh dspark-rules``), the sweep and the verify of an exported DSPARK profile.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tuner.engines import make_engine
from tuner.engines._sglang_block_draft import BLOCK_DRAFTS
from tuner.engines._sglang_block_draft import block_draft_evidence
from tuner.engines._sglang_block_draft import block_size
from tuner.engines._sglang_rules import View
from tuner.errors import ConfigError
from tuner.space import load_space
from tuner.space import parse_space
from tuner.trial import TrialResult
from tuner.trial._evidence import effect_check
from tuner.trial._gate import evaluate
from tuner_sim.args import LaunchError
from tuner_sim.args import build_parser
from tuner_sim.args import resolve


HERE = Path(__file__).resolve().parents[1] / "fixtures" / "real_sglang_h200"
SPACE = Path(__file__).resolve().parents[2] / "search_spaces" / "tiny-qwen3-dspark-h200.yaml"
ENGINE = make_engine("sglang")


def _load(name: str) -> TrialResult:
    return TrialResult.model_validate_json((HERE / name).read_text())


def _info(name: str) -> dict:
    return json.loads((HERE / name).read_text())


def _plan(r: TrialResult):  # type: ignore[no-untyped-def]
    space = load_space(SPACE)
    return ENGINE.plan(space, ENGINE.resolve(space, r.config), host=r.plan.host,
                       port=r.plan.port)


def test_the_dspark_trial_is_real_and_every_evidence_was_confirmed_by_the_server() -> None:
    r = _load("trial-qwen3-dspark.json")
    assert r.status == "ok" and not r.simulated and r.engine == "sglang"
    assert r.engine_version == "0.5.17" and r.time_scale == 1.0
    assert r.config == {"speculative": "DSPARK", "dspark_block_size": 4, "mem_fraction": 0.4}
    verdicts = {c.knob: c.verdict for c in r.effect}
    assert set(verdicts.values()) == {"confirmed"}
    assert {"speculative", "dspark_block_size", "(resolved) DSPARK"} <= set(verdicts)
    resolved = next(c for c in r.effect if c.knob == "(resolved) DSPARK")
    assert "server_info speculative_num_draft_tokens=5" in resolved.observations
    assert any(o.startswith("log: Initialized DSpark draft runner. attention_backend=triton, "
                            "model=Qwen3DSparkModel, gamma=4, verify_num_draft_tokens=5")
               for o in resolved.observations)


def test_todays_plan_and_evidence_confirm_it_from_the_real_server_info_and_log() -> None:
    r = _load("trial-qwen3-dspark.json")
    plan = _plan(r)
    assert plan.argv == r.plan.argv and plan.env == r.plan.env
    info = _info("server-info-qwen3-dspark.json")
    log = (HERE / "server-qwen3-dspark.log").read_text()
    checks = effect_check(plan.evidence, info, log)
    assert [(c.knob, c.verdict) for c in checks] == [(c.knob, c.verdict) for c in r.effect]
    assert {c.verdict for c in checks} == {"confirmed"}
    # what SGLang 0.5.17 resolved, as docs/dspark.md says 0.5.23 does
    assert info["version"] == "0.5.17" and info["speculative_algorithm"] == "DSPARK"
    assert info["speculative_dspark_block_size"] == 4
    assert info["speculative_num_draft_tokens"] == 5                         # gamma + 1
    assert info["speculative_num_steps"] == 1 and info["speculative_eagle_topk"] == 1
    assert info["speculative_draft_model_path"] == "/tmp/tuner-tiny/qwen3-dspark"
    assert info["enable_linear_replayssm_spec"] is False                    # dense target
    assert info["linear_replayssm_cache_len"] == 16                         # the default
    # the recorded subset agrees where it has the field
    for key in ("speculative_algorithm", "speculative_num_steps", "speculative_eagle_topk",
                "speculative_num_draft_tokens", "mem_fraction_static", "max_total_num_tokens"):
        assert r.server_info[key] == info[key]


def test_a_dspark_server_info_that_disagrees_is_a_mismatch() -> None:
    r = _load("trial-qwen3-dspark.json")
    plan = _plan(r)
    log = (HERE / "server-qwen3-dspark.log").read_text()
    info = {**_info("server-info-qwen3-dspark.json"), "speculative_num_draft_tokens": 8}
    by_knob = {c.knob: c.verdict for c in effect_check(plan.evidence, info, log)}
    assert by_knob["(resolved) DSPARK"] == "mismatched" and by_knob["speculative"] == "confirmed"
    # a server whose draft runner logged another gamma
    other = log.replace("gamma=4, verify_num_draft_tokens=5", "gamma=7, verify_num_draft_tokens=8")
    again = {c.knob: c.verdict for c in effect_check(plan.evidence,
                                                     _info("server-info-qwen3-dspark.json"),
                                                     other)}
    assert again["(resolved) DSPARK"] == "mismatched"


def test_the_accept_length_is_the_trials_own_verify_rounds() -> None:
    r = _load("trial-qwen3-dspark.json")
    assert r.aggregates is not None and r.requests
    tokens = sum(q.completion_tokens for q in r.requests)
    rounds = sum(q.verify_rounds or 0 for q in r.requests)
    assert rounds > 0 and r.aggregates.accept_length == pytest.approx(tokens / rounds)
    # random weights: the target accepts nothing the draft proposes, 63 rounds per 64 tokens
    assert [(q.completion_tokens, q.verify_rounds) for q in r.requests] == [(64, 63)] * 6
    assert r.aggregates.accept_length == pytest.approx(64 / 63)
    # the server's own "accept len" is per decode batch, never read
    assert "accept len: 1.00, accept rate: 0.00" in (HERE / "server-qwen3-dspark.log").read_text()
    base = _load("trial-qwen3-baseline.json")
    assert base.status == "ok" and base.aggregates is not None
    assert all(q.verify_rounds is None for q in base.requests)
    assert base.aggregates.accept_length is None
    # the gate: the tiny space's floor (0.5) lets random weights through; a real floor not
    gate = load_space(SPACE).spec.gate
    assert evaluate(r.aggregates, speculative=True, cfg=gate).passed
    strict = gate.model_copy(update={"accept_length_floor": 1.2})
    assert [g.rule for g in evaluate(r.aggregates, speculative=True, cfg=strict).fired()] == [
        "collapse"]


def test_the_draft_runner_line_matches_the_evidence_for_every_gamma_the_sweep_ran() -> None:
    # 0.5.17's line lacks 0.5.23's query_token_num and sample_from_anchor; the evidence
    # pattern reads gamma and the verify window only, so it holds for both
    lines = [ln for ln in (HERE / "sweep-dspark.log").read_text().splitlines()
             if "Initialized DSpark draft runner" in ln]
    space = load_space(SPACE)
    gammas = sorted(int(re.search(r"gamma=(\d+),", ln).group(1)) for ln in lines)
    assert gammas == [3, 4, 7]
    for gamma in gammas:
        ev = block_draft_evidence(space, {"speculative": "DSPARK", "dspark_block_size": gamma})
        (pattern,) = ev[0].log
        assert sum(bool(re.search(pattern, ln)) for ln in lines) == 1
    # a gamma other than the checkpoint's block_size (4) is used, with a warning only
    text = (HERE / "sweep-dspark.log").read_text()
    for gamma in (3, 7):
        assert (f"DSpark gamma mismatch: using gamma={gamma} (from speculative_num_draft_tokens="
                f"{gamma + 1}) but draft config block_size=4.") in text
    assert "trials 5/5 done" in text and "0 failed" in text


def _rules() -> list[str]:
    """The three launches of ``h200.sh dspark-rules``, each its own text."""
    return re.split(r"^# \d\. .*\n", (HERE / "dspark-rules.log").read_text(), flags=re.M)[1:]


def test_sglangs_own_refusals_are_the_tools_words_and_classified_as_launch_errors() -> None:
    mismatch, no_draft, _ = _rules()
    protocol = ENGINE.protocol()
    assert protocol.classify_exit(mismatch) == protocol.classify_exit(no_draft) == "launch_error"
    real = protocol.last_error_line(mismatch)
    assert real == ("ValueError: " + BLOCK_DRAFTS["DSPARK"].mismatch.format(
        window=5, block=4, given=3) + ".")
    assert "speculative_hook.py\", line 378, in _handle_dspark" in mismatch
    assert protocol.last_error_line(no_draft) == (
        "ValueError: DSpark dense speculative decoding requires setting "
        "--speculative-draft-model-path.")
    # the tool refuses both launches at plan time, with SGLang's words
    text = SPACE.read_text()
    fixed = parse_space(text.replace("  --max-running-requests: 1\n",
                                     "  --max-running-requests: 1\n"
                                     "  --speculative-num-draft-tokens: 3\n"))
    with pytest.raises(ConfigError) as e:
        ENGINE.resolve(fixed, {"speculative": "DSPARK", "dspark_block_size": 4})
    assert str(e.value) in real
    pathless = parse_space(text.replace(
        '          --speculative-draft-model-path: "{model.drafts.DSPARK}"\n', ""))
    with pytest.raises(ConfigError, match="DSpark dense speculative decoding requires setting "
                                          "--speculative-draft-model-path"):
        ENGINE.resolve(pathless, {"speculative": "DSPARK", "dspark_block_size": 4})


def test_steps_and_topk_forced_and_gamma_from_the_checkpoint_as_rules_and_simulator_say() -> None:
    *_, forced_log = _rules()
    info = _info("server-info-dspark-forced.json")
    # the real server: launched with steps 3, top-k 2, no block size, no max running requests
    real = {k: info[k] for k in ("speculative_algorithm", "speculative_num_steps",
                                 "speculative_eagle_topk", "speculative_num_draft_tokens",
                                 "speculative_dspark_block_size", "max_running_requests")}
    assert real == {"speculative_algorithm": "DSPARK", "speculative_num_steps": 1,
                    "speculative_eagle_topk": 1, "speculative_num_draft_tokens": 5,
                    "speculative_dspark_block_size": None, "max_running_requests": 48}
    # the tool: gamma from model.drafts.DSPARK.block_size when no flag sends one
    space = load_space(SPACE)
    view = View(space, {"speculative": "DSPARK"})
    algo = BLOCK_DRAFTS["DSPARK"]
    assert algo.window(block_size(space, view, algo)) == real["speculative_num_draft_tokens"]
    # the simulator's _handle_dspark: the same values and the same warnings, word for word
    argv = ["--model-path", "/tmp/tuner-tiny/qwen3", "--speculative-algorithm", "DSPARK",
            "--speculative-draft-model-path", "/tmp/tuner-tiny/qwen3-dspark",
            "--speculative-num-steps", "3", "--speculative-eagle-topk", "2",
            "--mem-fraction-static", "0.4", "--context-length", "2048"]
    sim = resolve(build_parser().parse_args(argv), architecture="Qwen3ForCausalLM",
                  capability=(9, 0), model_context=4096, env={}, memory_gb=139.8,
                  draft_block=4)
    assert {k: sim.args[k] for k in real} == real
    assert sim.warnings and all(w in forced_log for w in sim.warnings)
    # and the simulator refuses what the real server refused
    mismatch, no_draft, _ = _rules()
    refused = (([*argv[:6], "--speculative-dspark-block-size", "4",
                 "--speculative-num-draft-tokens", "3"], mismatch),
               (argv[:4], no_draft))                             # no draft path
    for args, log in refused:
        with pytest.raises(LaunchError) as e:
            resolve(build_parser().parse_args(args), architecture="Qwen3ForCausalLM",
                    capability=(9, 0), model_context=4096, env={}, memory_gb=139.8,
                    draft_block=4)
        assert ENGINE.protocol().last_error_line(log) == f"{e.value.exc_type}: {e.value.message}"


def test_the_exported_dspark_profile_passed_verify_on_the_real_server() -> None:
    import yaml

    profile = yaml.safe_load((HERE / "profile-dspark.yaml").read_text())
    assert profile["config"] == {"speculative": "DSPARK", "dspark_block_size": 4,
                                 "mem_fraction": 0.4}
    info = _info("server-info-qwen3-dspark.json")        # the same launch, trial 1 of call 2
    for field, value in profile["expect"]["server_info"].items():
        assert info[field] == value, field
    log = (HERE / "server-qwen3-dspark.log").read_text()
    assert all(re.search(p, log) for p in profile["expect"]["log"])
    out = (HERE / "verify-dspark-profile.log").read_text()
    assert "checked 20, passed 20; not checked: nothing" in out
    assert "PASS: the server is the profile" in out and "verify exit 0" in out
