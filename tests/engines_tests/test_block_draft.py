"""DSPARK's rules in the engine adapter: SGLang 0.5.23's resolution (docs/dspark.md), the
ReplaySSM ring (derived, refused, repaired), and the evidence a DSPARK launch must show."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import SPARK
from tests.conftest import tuner_argv
from tuner.engines import make_engine
from tuner.engines._sglang_block_draft import ring_length
from tuner.errors import ConfigError
from tuner.space import load_space
from tuner.space import parse_space


ENGINE = make_engine("sglang")
SPACE = load_space(SPARK)


def _argv(values: dict) -> dict[str, str | None]:
    plan = ENGINE.plan(SPACE, ENGINE.resolve(SPACE, values))
    flags = plan.argv[2:]
    return {f: (flags[i + 1] if i + 1 < len(flags) and not flags[i + 1].startswith("--")
                else None) for i, f in enumerate(flags) if f.startswith("--")}


@pytest.mark.parametrize(("gamma", "ring"), [(2, 16), (7, 16), (8, 32), (12, 32)])
def test_the_ring_is_derived_from_gamma_when_the_space_leaves_it(gamma: int, ring: int) -> None:
    argv = _argv({"speculative": "DSPARK", "dspark_block_size": gamma})
    assert argv["--linear-replayssm-cache-len"] == str(ring)
    assert int(argv["--linear-replayssm-cache-len"]) >= 2 * (gamma + 1)
    assert "--speculative-num-steps" not in argv and "--speculative-eagle-topk" not in argv


def test_ring_length_is_the_smallest_power_of_two_holding_twice_the_window() -> None:
    assert [ring_length(w) for w in (2, 8, 9, 16, 17)] == [16, 16, 32, 32, 64]


def test_a_dspark_plan_expects_sglangs_resolved_fields_and_the_runner_line() -> None:
    plan = ENGINE.plan(SPACE, ENGINE.resolve(SPACE, {"speculative": "DSPARK"}))
    (ev,) = [e for e in plan.evidence if e.knob == "(resolved) DSPARK"]
    assert ev.server_info == {
        "speculative_algorithm": "DSPARK", "speculative_num_steps": 1,
        "speculative_eagle_topk": 1, "speculative_num_draft_tokens": 9,
        "enable_linear_replayssm_spec": True, "linear_replayssm_cache_len": 32}
    assert "gamma=8, verify_num_draft_tokens=9" in ev.log[0].replace("\\", "")
    assert plan.speculative
    assert "inclusionAI/Ling-3.0-flash-dspark" in plan.argv      # {model.drafts.DSPARK}


def test_the_draft_checkpoints_gamma_applies_when_no_knob_sets_it() -> None:
    text = SPARK.read_text().replace("    when: {speculative: DSPARK}\n    flag: "
                                     "--speculative-dspark-block-size",
                                     "    when: {speculative: NEXTN}\n    flag: "
                                     "--speculative-dspark-block-size")
    space = parse_space(text, file="x.yaml")
    plan = ENGINE.plan(space, ENGINE.resolve(space, {"speculative": "DSPARK"}))
    assert "--speculative-dspark-block-size" not in plan.argv
    (ev,) = [e for e in plan.evidence if e.knob == "(resolved) DSPARK"]
    assert ev.server_info["speculative_num_draft_tokens"] == 9     # model.drafts: block 8
    assert ev.server_info["linear_replayssm_cache_len"] == 32


def _pinned(ring: int) -> str:
    return SPARK.read_text().replace(
        "          --enable-linear-replayssm-spec: true\n",
        f"          --enable-linear-replayssm-spec: true\n"
        f"          --linear-replayssm-cache-len: {ring}\n")


def test_a_ring_the_space_pins_is_held_to_the_rule(tmp_path: Path) -> None:
    space = parse_space(_pinned(16), file="pinned.yaml")
    ENGINE.resolve(space, {"speculative": "DSPARK", "dspark_block_size": 7})   # 16 >= 2 x 8
    with pytest.raises(ConfigError, match=r"spec-verify ring too small: 16 < 2 \* 9"):
        ENGINE.resolve(space, {"speculative": "DSPARK", "dspark_block_size": 8})
    with pytest.raises(ConfigError, match="must be a power of two, got 24"):
        ENGINE.resolve(parse_space(_pinned(24), file="p.yaml"), {"speculative": "DSPARK"})
    # a sampler's proposal is moved to the largest gamma the pinned ring holds
    values, why = ENGINE.repair(space, space.complete({"speculative": "DSPARK",
                                                        "dspark_block_size": 11}))
    assert values["dspark_block_size"] == 7 and why and "ring" in why


def test_a_ring_knob_is_repaired_to_its_smallest_valid_value() -> None:
    text = SPARK.read_text().replace("  mem_fraction:\n", (
        "  ring:\n    type: categorical\n    choices: [16, 32, 64]\n    default: 16\n"
        "    when: {speculative: DSPARK}\n    flag: --linear-replayssm-cache-len\n"
        "    evidence: {server_info: {linear_replayssm_cache_len: \"{value}\"}}\n"
        "  mem_fraction:\n"), 1)
    space = parse_space(text, file="ring-knob.yaml")
    values, why = ENGINE.repair(space, space.complete({"speculative": "DSPARK",
                                                        "dspark_block_size": 8}))
    assert values["ring"] == 32 and why is not None


def test_tuner_plan_refuses_a_ring_violation_with_the_rule_and_exit_2(tmp_path: Path) -> None:
    f = tmp_path / "pinned.yaml"
    f.write_text(_pinned(16))
    out = subprocess.run(tuner_argv("plan", str(f), "--set", "speculative=DSPARK"),
                         capture_output=True, text=True)
    assert out.returncode == 2
    assert "ReplaySSM ring rule" in out.stderr and "16 < 2 * 9" in out.stderr
    assert "Traceback" not in out.stderr


def test_a_draft_token_count_other_than_the_window_is_refused_with_sglangs_words() -> None:
    text = SPARK.read_text().replace(
        "          --enable-linear-replayssm-spec: true\n",
        "          --enable-linear-replayssm-spec: true\n"
        "          --speculative-num-draft-tokens: 5\n")
    space = parse_space(text, file="x.yaml")
    with pytest.raises(ConfigError, match=r"must equal gamma \+ 1 \(= 9 for gamma=8\)"):
        ENGINE.resolve(space, {"speculative": "DSPARK"})


def test_a_non_static_verify_mode_needs_a_ring_writing_verify_kernel() -> None:
    text = SPARK.read_text().replace(
        "  SGLANG_FP8_IGNORED_LAYERS: \"\"\n",
        "  SGLANG_FP8_IGNORED_LAYERS: \"\"\n  SGLANG_RAGGED_VERIFY_MODE: compact\n")
    space = parse_space(text, file="x.yaml")
    with pytest.raises(ConfigError, match="linear-attn-verify-backend triton or nv_cutedsl"):
        ENGINE.resolve(space, {"speculative": "DSPARK"})
    ENGINE.resolve(space, {"speculative": "NEXTN"})      # no ReplaySSM spec: not concerned


def test_the_fp8_gemm_backend_is_checked_under_sglangs_field_name() -> None:
    plan = ENGINE.plan(SPACE, ENGINE.resolve(SPACE, {}))
    (ev,) = [e for e in plan.evidence if e.knob == "(fixed) --fp8-gemm-backend"]
    assert ev.server_info_if_present == {"fp8_gemm_runner_backend": "cutlass"}


def test_a_version_without_its_own_flag_table_is_said_in_the_plan() -> None:
    space = parse_space(SPARK.read_text().replace("  version: 0.5.23", "  version: 0.5.30"),
                        file="x.yaml")
    plan = ENGINE.plan(space, ENGINE.resolve(space, {}))
    assert any("0.5.30 has no flag table" in n and "0.5.23's" in n for n in plan.notes)
    assert not any("flag table" in n for n in ENGINE.plan(
        SPACE, ENGINE.resolve(SPACE, {})).notes)
