from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import H200
from tests.conftest import SPARK
from tests.engines_tests import sglang_0_5_23_flags as table
from tuner.engines import make_engine
from tuner.errors import ConfigError
from tuner.errors import UserError
from tuner.space import load_space
from tuner.space import parse_space


ENGINE = make_engine("sglang")
SPACE = load_space(SPARK)

# The official ling-cookbook W4A8 command (docs/sglang-facts.md, last section), mem fraction at the
# GB10-safe 0.68 (see the space's header).
COOKBOOK_FLAGS = [
    "--moe-runner-backend", "flashinfer_mxfp4", "--flashinfer-mxfp4-moe-precision", "default",
    "--enable-fp32-lm-head", "--attention-backend", "flashinfer", "--fp8-gemm-backend",
    "cutlass", "--disable-flashinfer-autotune", "--disable-shared-experts-fusion",
    "--max-running-requests", "1", "--max-mamba-cache-size", "64", "--chunked-prefill-size",
    "8192", "--page-size", "64", "--context-length", "262144", "--cuda-graph-backend-decode",
    "full", "--cuda-graph-max-bs-decode", "1", "--cuda-graph-bs-decode", "1",
    "--cuda-graph-backend-prefill", "disabled", "--mem-fraction-static", "0.68",
    "--reasoning-parser", "ling3", "--tool-call-parser", "ling3",
]
COOKBOOK_ENV = {
    "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1", "SGLANG_JIT_DEEPGEMM_PRECOMPILE": "0",
    "SGLANG_ENABLE_JIT_DEEPGEMM": "0", "SGLANG_DSV4_FP4_DEQUANT": "0",
    "SGLANG_FP8_IGNORED_LAYERS": "",
}
MODEL = "inclusionAI/Ling-3.0-flash-fp4"


def flag_map(argv: list[str]) -> dict[str, str | None]:
    """argv after the entry command -> {flag: value or None for store_true}."""
    out: dict[str, str | None] = {}
    i = argv.index("--model-path")
    while i < len(argv):
        tok = argv[i]
        if i + 1 < len(argv) and not argv[i + 1].startswith("--"):
            out[tok] = argv[i + 1]
            i += 2
        else:
            out[tok] = None
            i += 1
    return out


def test_baseline_plan_is_the_cookbook_command() -> None:
    cfg = ENGINE.resolve(SPACE, {})
    plan = ENGINE.plan(SPACE, cfg, port=31234)
    assert plan.argv[:2] == ["sglang", "serve"]
    flags = flag_map(plan.argv)
    expected = flag_map(["--model-path", MODEL, *COOKBOOK_FLAGS, "--host", "127.0.0.1",
                         "--port", "31234"])
    assert flags == expected
    assert plan.env == COOKBOOK_ENV
    assert plan.port == 31234 and plan.engine_version == "0.5.23"


@pytest.mark.parametrize("asked_draft", [2, 4, 7, 8])
def test_fork_optimised_command_forces_four_draft_tokens(asked_draft: int) -> None:
    cfg = ENGINE.resolve(SPACE, {"moe_backend": "humming", "lm_head": "fp8",
                                 "speculative": "NEXTN", "spec_steps": 3, "spec_topk": 1,
                                 "spec_draft_tokens": asked_draft})
    plan = ENGINE.plan(SPACE, cfg)
    flags = flag_map(plan.argv)
    # The fork's launch-optimized.sh relative to the baseline (docs/sglang-facts.md, last section).
    base = flag_map(["--model-path", MODEL, *COOKBOOK_FLAGS, "--host", "127.0.0.1",
                     "--port", "30000"])
    base["--moe-runner-backend"] = "humming"
    del base["--enable-fp32-lm-head"]
    base.update({"--speculative-algorithm": "NEXTN", "--speculative-draft-model-path": MODEL,
                 "--speculative-num-steps": "3", "--speculative-eagle-topk": "1",
                 "--speculative-num-draft-tokens": "4"})
    assert flags == base
    assert plan.env == {**COOKBOOK_ENV, "SGLANG_ENABLE_FP8_LM_HEAD": "1"}
    assert "SGLANG_HUMMING_INPUT_QUANT_CONFIG" not in plan.env


# ---- one test per SGLang resolution rule ---------------------------------------------------

def test_rule_topk1_forces_draft_tokens_to_steps_plus_one() -> None:
    for steps in range(1, 6):
        cfg = ENGINE.resolve(SPACE, {"speculative": "NEXTN", "spec_steps": steps,
                                     "spec_topk": 1, "spec_draft_tokens": 8})
        assert cfg["spec_draft_tokens"] == steps + 1


def test_rule_topk_above_one_keeps_draft_tokens() -> None:
    cfg = ENGINE.resolve(SPACE, {"speculative": "NEXTN", "spec_steps": 3, "spec_topk": 2,
                                 "spec_draft_tokens": 7})
    assert cfg["spec_draft_tokens"] == 7


def test_rule_speculation_off_drops_every_speculative_knob() -> None:
    # A space that forgot the `when:` conditions still gets them dropped by the engine.
    data = yaml.safe_load(SPARK.read_text())
    for k in ("spec_steps", "spec_topk", "spec_draft_tokens"):
        del data["knobs"][k]["when"]
    data["baseline"].update({"spec_steps": 3, "spec_topk": 1, "spec_draft_tokens": 4})
    space = parse_space(yaml.safe_dump(data))
    cfg = ENGINE.resolve(space, {"speculative": "off"})
    assert not any(k.startswith("spec_") for k in cfg.values)
    plan = ENGINE.plan(space, cfg)
    assert not any(a.startswith("--speculative") for a in plan.argv)


def test_rule_fp8_lm_head_clears_fp32_lm_head() -> None:
    data = yaml.safe_load(SPARK.read_text())
    data["knobs"]["lm_head"] = {
        "type": "bool", "flag": "--enable-fp32-lm-head",
        "evidence": {"server_info": {"enable_fp32_lm_head": "{value}"}}}
    data["knobs"]["fp8_lm_head"] = {
        "type": "bool", "values": {"true": {"env": {"SGLANG_ENABLE_FP8_LM_HEAD": "1"}},
                                   "false": {}},
        "evidence": {"none": "no field"}}
    data["baseline"].update({"lm_head": True, "fp8_lm_head": False})
    space = parse_space(yaml.safe_dump(data))
    both = ENGINE.resolve(space, {"fp8_lm_head": True})
    assert both["lm_head"] is False and both["fp8_lm_head"] is True
    assert "--enable-fp32-lm-head" not in ENGINE.plan(space, both).argv
    fp32 = ENGINE.resolve(space, {})
    assert fp32["lm_head"] is True
    assert "--enable-fp32-lm-head" in ENGINE.plan(space, fp32).argv


def test_rule_fp8_env_beats_a_fixed_fp32_flag_in_the_plan() -> None:
    data = yaml.safe_load(SPARK.read_text())
    data["fixed_flags"]["--enable-fp32-lm-head"] = True
    data["knobs"]["lm_head"]["values"]["fp32"] = {}
    space = parse_space(yaml.safe_dump(data))
    plan = ENGINE.plan(space, ENGINE.resolve(space, {"lm_head": "fp8"}))
    assert "--enable-fp32-lm-head" not in plan.argv
    assert any("FP8 LM head takes precedence" in n for n in plan.notes)


def test_rule_humming_only_knobs_vanish_with_another_backend() -> None:
    data = yaml.safe_load(SPARK.read_text())
    del data["knobs"]["humming_activation"]["when"]
    data["baseline"]["humming_activation"] = "fp8"
    space = parse_space(yaml.safe_dump(data))
    other = ENGINE.resolve(space, {"moe_backend": "marlin"})
    assert "humming_activation" not in other
    assert "SGLANG_HUMMING_INPUT_QUANT_CONFIG" not in ENGINE.plan(space, other).env
    humming = ENGINE.resolve(space, {"moe_backend": "humming"})
    assert humming["humming_activation"] == "fp8"
    env = ENGINE.plan(space, humming).env
    assert env["SGLANG_HUMMING_INPUT_QUANT_CONFIG"] == (
        '{"a_dtype":"float8e4m3","input_scale_group_size":128}')


def test_rule_topk_without_steps_is_refused_like_sglang() -> None:
    data = yaml.safe_load(SPARK.read_text())
    del data["knobs"]["spec_steps"]
    space = parse_space(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match="without --speculative-num-steps"):
        ENGINE.resolve(space, {"speculative": "NEXTN"})


# ---- canonical identity --------------------------------------------------------------------

def test_same_canonical_form_same_hash_and_idempotent() -> None:
    a = ENGINE.resolve(SPACE, {"speculative": "NEXTN", "spec_steps": 2, "spec_topk": 1,
                               "spec_draft_tokens": 8})
    b = ENGINE.resolve(SPACE, {"speculative": "NEXTN", "spec_steps": 2, "spec_topk": 1,
                               "spec_draft_tokens": 5})
    assert a == b and a.hash() == b.hash()
    assert ENGINE.canonicalize(SPACE, a.as_dict()) == a
    c = ENGINE.resolve(SPACE, {"speculative": "NEXTN", "spec_steps": 3, "spec_topk": 1})
    assert c.hash() != a.hash()
    off1 = ENGINE.resolve(SPACE, {"spec_steps": 5})  # inactive: ignored
    assert off1.hash() == ENGINE.resolve(SPACE, {}).hash()


def test_hash_ignores_insertion_order() -> None:
    cfg = ENGINE.resolve(SPACE, {"lm_head": "bf16"})
    reordered = type(cfg)(dict(reversed(list(cfg.values.items()))))
    assert reordered.hash() == cfg.hash()


# ---- every plan uses only real SGLang 0.5.23 flags and choices --------------------------------

@pytest.mark.parametrize("path", [SPARK, H200])
def test_every_generated_plan_passes_the_flag_table(path: Any) -> None:
    space = load_space(path)
    configs = list(space.iter_configs())
    rng = random.Random(0)
    dspark = [c for c in configs if c.get("speculative") == "DSPARK"]   # every one
    assert dspark
    for values in [*rng.sample(configs, 400), *dspark, space.complete({})]:
        values, _ = ENGINE.repair(space, values)          # as a sweep launches them
        plan = ENGINE.plan(space, ENGINE.canonicalize(space, values), port=30123)
        table.check_argv(plan.argv[2:])
        table.check_ring(plan.argv[2:])
        for var in plan.env:
            assert var in table.ENV_VARS_STOCK | table.ENV_VARS_FORK_ONLY, var


def test_flag_table_catches_a_misspelling() -> None:
    with pytest.raises(AssertionError, match=r"not an SGLang 0\.5\.23 flag"):
        table.check_argv(["--moe-runner-backnd", "humming"])
    with pytest.raises(AssertionError, match="not a choice"):
        table.check_argv(["--moe-runner-backend", "hummingbird"])


def test_launch_command_is_configurable() -> None:
    cfg = ENGINE.resolve(SPACE, {})
    eng = make_engine("sglang", command=["python3", "-m", "sglang.launch_server"])
    plan = eng.plan(SPACE, cfg)
    assert plan.argv[:3] == ["python3", "-m", "sglang.launch_server"]
    assert plan.argv[3:] == ENGINE.plan(SPACE, cfg).argv[2:]


def test_sim_engine_runs_the_simulator_with_the_same_flags() -> None:
    cfg = ENGINE.resolve(SPACE, {})
    sim = make_engine("sim:stock", sim_env={"TUNER_SIM_TIME_SCALE": "100"})
    plan = sim.plan(SPACE, cfg)
    assert plan.argv[:4] == [sys.executable, "-m", "tuner_sim.stock", "serve"]
    assert plan.argv[4:] == ENGINE.plan(SPACE, cfg).argv[2:]
    assert plan.env["TUNER_SIM_MACHINE"] == "dgx-spark"
    assert plan.env["TUNER_SIM_TIME_SCALE"] == "100"
    assert plan.engine == "sim:stock"
    with pytest.raises(UserError, match="unknown simulator variant"):
        make_engine("sim:nope")


def test_evidence_expects_resolved_values() -> None:
    cfg = ENGINE.resolve(SPACE, {"speculative": "NEXTN", "spec_steps": 4, "spec_topk": 1})
    ev = {e.knob: e for e in ENGINE.plan(SPACE, cfg).evidence}
    assert ev["speculative"].server_info == {"speculative_algorithm": "EAGLE"}
    assert ev["spec_draft_tokens"].server_info == {"speculative_num_draft_tokens": 5}
    assert ev["mem_fraction"].server_info == {"mem_fraction_static": 0.68}
    assert ev["lm_head"].server_info == {"enable_fp32_lm_head": True}


def test_plan_says_what_it_turns_on_without_flag_names_downstream() -> None:
    spec = ENGINE.plan(SPACE, ENGINE.resolve(SPACE, {"speculative": "NEXTN"}))
    base = ENGINE.plan(SPACE, ENGINE.resolve(SPACE, {}))
    assert spec.speculative and not base.speculative
    assert not base.metrics


def test_launch_sh_names_the_measuring_environment_and_lets_it_be_replaced(
        tmp_path: Path) -> None:
    """launch.sh once hard-coded the absolute interpreter of the venv that measured it."""
    import subprocess

    plan = ENGINE.plan(SPACE, ENGINE.resolve(SPACE, {}))
    venv = ENGINE.profile_files(plan, entry=["/opt/venv/bin/python3", "-m", "sglang.launch"],
                                model_path="m", header="h")["launch.sh"]
    assert '"${ENGINE:-/opt/venv/bin/python3}" -m sglang.launch' in venv
    assert "# The engine ran as /opt/venv/bin/python3" in venv
    plain = ENGINE.profile_files(plan, entry=["sglang", "serve"], model_path="m",
                                 header="h")["launch.sh"]
    assert "ENGINE" not in plain and "exec sglang serve" in plain
    odd = ENGINE.profile_files(plan, entry=["/opt/my venv/$x/python3"], model_path="m",
                               header="h")["launch.sh"]
    assert "ENGINE" not in odd and "exec '/opt/my venv/$x/python3'" in odd
    script = tmp_path / "launch.sh"                   # what bash would exec, with ENGINE set
    script.write_text(venv.replace("exec ", "echo ").replace(
        'set -a; . "$here/sglang.env"; set +a\n', ""))
    out = subprocess.run(["bash", str(script)], env={"ENGINE": "python3", "PATH": "/usr/bin"},
                         capture_output=True, text=True, check=True).stdout
    assert out.startswith("python3 -m sglang.launch --model-path m")
