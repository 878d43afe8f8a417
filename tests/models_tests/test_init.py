"""``tuner init`` on the public configs of real MoE architectures (tests/fixtures/
model_configs, sources in its README): the space it writes validates, plans for its
baseline and for every canonical configuration, holds the knobs that apply to the model
and machine, and reproduces the shipped Spark space for Ling; what it does not understand
it refuses in one located line, writing nothing."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import GSM8K_DIR
from tests.conftest import REPO
from tests.conftest import SPARK
from tests.conftest import run_tuner
from tests.conftest import tuner_argv
from tests.space_tests.test_lossy import lossy_of
from tuner.engines import Capabilities
from tuner.engines import make_engine
from tuner.engines import table_capabilities
from tuner.errors import UserError
from tuner.models import machine
from tuner.models import plan_memory
from tuner.models import read_draft
from tuner.models import read_model
from tuner.models import write_space
from tuner.models._machines import sglang_auto_fraction
from tuner.space import SearchSpace
from tuner.space import load_space
from tuner.space import parse_space


FIXTURES = REPO / "tests" / "fixtures" / "model_configs"
LING = FIXTURES / "ling-3.0-flash-fp4"
DSPARK = FIXTURES / "ling-3.0-flash-dspark"
QWEN38 = FIXTURES / "qwen3.8-flash-next-nvfp4"
QWEN38_SPARK = REPO / "search_spaces" / "qwen3.8-flash-next-nvfp4-dgx-spark.yaml"
GIB = 1024**3


def init(tmp: Path, model: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    out = tmp / "space.yaml"
    return run_tuner(tmp, "init", str(model), "--out", str(out), *args), out


def every_plan(space: SearchSpace) -> int:
    """Plan the baseline and every canonical configuration as a sweep would (SGLang's
    resolution refusing a draft tree it cannot build is a refusal, not a failure)."""
    from tuner.errors import ConfigError

    engine = make_engine("sglang")
    engine.plan(space, engine.canonicalize(space, space.complete({})))
    seen: set[str] = set()
    for values in space.iter_configs():
        try:
            config = engine.canonicalize(space, values)
        except ConfigError:
            continue
        if config.hash() not in seen:
            seen.add(config.hash())
            engine.plan(space, config)
    return len(seen)


def knob(space: SearchSpace, name: str) -> Any:
    return space.spec.knobs[name]


# (fixture, init options, what its space must hold)
CASES = [
    ("qwen3-30b-a3b", ["--machine", "h200"], {
        "moe_backend": ["auto", "triton_kernel"], "speculative": None, "tp": None}),
    ("qwen3-30b-a3b", ["--machine", "h100"], {
        "moe_backend": ["auto", "triton_kernel"], "speculative": None, "tp": None}),
    ("qwen3-30b-a3b", ["--machine", "dgx-spark"], {
        "moe_backend": None, "speculative": None, "tp": None}),
    ("qwen3-next-80b-a3b-instruct", ["--machine", "h200", "--gpus", "2"], {
        "moe_backend": ["auto", "triton_kernel"], "speculative": ["off", "NEXTN"], "tp": 2}),
    ("deepseek-v3", ["--machine", "h200", "--gpus", "8"], {
        "moe_backend": ["auto", "deep_gemm", "cutlass"], "speculative": ["off", "NEXTN"],
        "tp": 8}),
    ("gpt-oss-120b", ["--machine", "h200"], {
        "moe_backend": ["triton_kernel", "flashinfer_mxfp4", "marlin"], "speculative": None,
        "tp": None}),
    ("gpt-oss-120b", ["--machine", "dgx-spark"], {
        "moe_backend": ["flashinfer_mxfp4", "marlin"], "speculative": None, "tp": None}),
    ("ling-3.0-flash-fp4", ["--machine", "h200"], {
        "moe_backend": ["flashinfer_mxfp4", "humming", "marlin"],
        "speculative": ["off", "NEXTN"], "tp": None}),
    ("qwen3.8-flash-next-nvfp4", ["--machine", "dgx-spark"], {
        "moe_backend": ["flashinfer_cutlass", "marlin"], "speculative": ["off", "NEXTN"],
        "tp": None}),
]


@pytest.mark.parametrize(("name", "args", "expect"), CASES,
                         ids=[f"{c[0]}-{c[1][1]}" for c in CASES])
def test_init_writes_a_space_that_validates_and_plans(tmp_path: Path, name: str,
                                                      args: list[str],
                                                      expect: dict[str, Any]) -> None:
    proc, out = init(tmp_path, FIXTURES / name, *args)
    assert proc.returncode == 0, proc.stderr
    check = run_tuner(tmp_path, "space", "validate", str(out))
    assert check.returncode == 0 and ": ok (" in check.stdout, check.stderr
    plan = run_tuner(tmp_path, "plan", str(out))
    assert plan.returncode == 0, plan.stderr
    space = load_space(out)
    assert space.spec.model.architecture == read_model(FIXTURES / name).architecture
    assert every_plan(space) >= 1
    knobs = space.spec.knobs
    for key in ("moe_backend", "speculative"):
        assert (knobs[key].choices if key in knobs else None) == expect[key]
    assert space.spec.fixed_flags.get("--tp-size") == expect["tp"]
    assert "lm_head" in knobs and "mem_fraction" in knobs
    assert knobs["mem_fraction"].role == "capacity"
    assert "fp8" not in (knobs["lm_head"].choices or []) or name.startswith("ling")


def test_init_reproduces_the_shipped_spark_space_for_ling(tmp_path: Path) -> None:
    proc, out = init(tmp_path, LING, "--machine", "dgx-spark", "--draft", str(DSPARK))
    assert proc.returncode == 0, proc.stderr
    mine, shipped = load_space(out).spec, load_space(SPARK).spec
    assert list(mine.knobs) == list(shipped.knobs)
    fields = ("type", "choices", "low", "high", "step", "default", "when", "role", "lossless")
    for name, k in shipped.knobs.items():
        assert {f: getattr(mine.knobs[name], f) for f in fields} == {
            f: getattr(k, f) for f in fields}, name
        assert (mine.knobs[name].flag, mine.knobs[name].env) == (k.flag, k.env), name
    assert mine.baseline == shipped.baseline
    assert dict(mine.fixed_flags) == dict(shipped.fixed_flags)
    assert dict(mine.fixed_env) == dict(shipped.fixed_env)
    assert mine.limits["--mem-fraction-static"].max == shipped.limits[
        "--mem-fraction-static"].max
    assert mine.model.drafts["DSPARK"].block_size == 8
    assert every_plan(load_space(out)) > 100


def test_speculation_follows_the_drafts_that_exist(tmp_path: Path) -> None:
    """No --draft: no DSPARK; a checkpoint without MTP layers: no NEXTN, said so."""
    proc, out = init(tmp_path, LING, "--machine", "dgx-spark")
    assert proc.returncode == 0, proc.stderr
    assert knob(load_space(out), "speculative").choices == ["off", "NEXTN"]
    assert "dspark_block_size" not in load_space(out).spec.knobs
    proc, out = init(tmp_path, FIXTURES / "qwen3-30b-a3b", "--machine", "h200", "--force")
    assert proc.returncode == 0, proc.stderr
    assert "speculative" not in load_space(out).spec.knobs
    assert "NEXTN: the checkpoint has no MTP layer" in out.read_text()


def test_the_installed_engine_decides_the_fork_only_knobs(tmp_path: Path) -> None:
    """An engine whose source never reads the fork's FP8 LM-head variable (stock SGLang)
    gets no fp8 head and a comment saying why; one that reads it (the fork) gets it."""
    shape, spark = read_model(LING), machine("dgx-spark")
    drafts = [read_draft(DSPARK)]
    table = table_capabilities("0.5.23")
    for reads, expect in ((False, ["fp32", "bf16"]), (True, ["fp32", "bf16", "fp8"])):
        root = tmp_path / f"engine-{reads}"
        root.mkdir()
        (root / "environ.py").write_text(
            "SGLANG_HUMMING_INPUT_QUANT_CONFIG = 1\n"
            + ("SGLANG_ENABLE_FP8_LM_HEAD = 1\n" if reads else ""))
        caps = Capabilities(command=["sglang", "serve"], found=True, version="0.5.23",
                            source_root=root, flags=table.flags, flags_source="test")
        text = write_space(shape, spark, caps, drafts=drafts)
        space = parse_space(text)
        assert knob(space, "lm_head").choices == expect
        assert ("never reads SGLANG_ENABLE_FP8_LM_HEAD" in text) is not reads
        # only what is quantized online counts against a finalist (docs/search-spaces.md):
        # the FP8 head and W4A8 activations, never the FP32 head; the kernel is unlisted
        assert lossy_of(space, lm_head="fp32") == lossy_of(space, lm_head="bf16") == ()
        assert lossy_of(space, moe_backend="humming", humming_activation="fp8") == (
            "moe_backend", "humming_activation")
        if reads:
            assert lossy_of(space, lm_head="fp8") == ("lm_head",)


def test_a_backend_the_engine_does_not_offer_is_left_out() -> None:
    """The MoE choices are the intersection of what the layout dispatches to and what
    the engine's --moe-runner-backend accepts."""
    table = table_capabilities("0.5.23")
    assert table.flags is not None
    flags = dict(table.flags)
    flags["--moe-runner-backend"] = tuple(c for c in flags["--moe-runner-backend"] or ()
                                          if c != "humming")
    caps = Capabilities(command=["sglang", "serve"], found=True, flags=flags)
    text = write_space(read_model(LING), machine("dgx-spark"), caps, drafts=[])
    space = parse_space(text)
    assert knob(space, "moe_backend").choices == ["flashinfer_mxfp4", "marlin"]
    assert "humming_activation" not in space.spec.knobs
    assert "--moe-runner-backend humming: not a choice of this engine" in text


def test_the_memory_plan_matches_published_sizes() -> None:
    """Weights estimated from the shape, against published figures: Ling's 69.7 GB
    (docs/simulator.md), Qwen3-30B-A3B's 30.5 B BF16 parameters (its model card),
    gpt-oss-120b's 60.8 GiB MXFP4 checkpoint (its model card: fits one 80 GB GPU)."""
    spark = machine("dgx-spark")
    for name, published_gib in (("ling-3.0-flash-fp4", 69.7e9 / GIB),
                                ("qwen3-30b-a3b", 30.5e9 * 2 / GIB),
                                ("gpt-oss-120b", 60.8)):
        plan = plan_memory(read_model(FIXTURES / name), spark.memory_gib)
        assert abs(plan.weights_gib - published_gib) / published_gib < 0.05, name
    ling = plan_memory(read_model(LING), spark.memory_gib)
    assert ling.low == 0.55 and ling.nextn_gib > 0
    assert ling.low * spark.memory_gib > ling.weights_gib       # the lowest bound holds them


def test_the_pools_bookkeeping_caps_the_fraction_only_where_kv_is_tiny(tmp_path: Path) -> None:
    """The KV pool's per-token index arrays live outside the fraction: for a real
    checkpoint (KBs of KV a token) they never bind the H200's 0.92 cap; for the kit's
    tiny Qwen3-Next (one attending layer: 512 bytes a token) they hold the bound at 0.87,
    below the 0.91 at which it died on the H200 (docs/real-sglang-h200.md)."""
    from tuner.models._memory import BOOKKEEPING_BYTES_PER_TOKEN
    from tuner.models._memory import OUTSIDE_GIB
    from tuner.models._memory import bookkeeping_cap
    from tuner.models._memory import kv_bytes_per_token

    h200 = machine("h200")
    for name in ("qwen3-next-80b-a3b-instruct", "qwen3-30b-a3b", "deepseek-v3",
                 "gpt-oss-120b"):
        plan = plan_memory(read_model(FIXTURES / name), h200.memory_gib)
        assert plan.kv_bytes_per_token > 4096 and plan.high > h200.fraction_cap, name
    next80 = read_model(FIXTURES / "qwen3-next-80b-a3b-instruct")
    # 12 of 48 layers attend in full, 2 KV heads of 256: K and V in BF16
    assert kv_bytes_per_token(next80) == 12 * 2 * 2 * 256 * 2
    tiny = REPO / "tests" / "fixtures" / "real_sglang_h200" / "init"
    for model, kv, high in (("qwen3next", 512, 0.87), ("qwen3moe", 1024, 0.92)):
        folder = tmp_path / model
        folder.mkdir()
        (folder / "config.json").write_text((tiny / f"{model}-config.json").read_text())
        plan = plan_memory(read_model(folder), h200.memory_gib)
        assert plan.kv_bytes_per_token == kv and plan.high == high, model
        f = plan.high       # at the bound the arrays and the rest fit what is left
        pool_tokens = (f * h200.memory_gib - plan.weights_gib) * GIB / kv
        left = (1 - f) * h200.memory_gib - OUTSIDE_GIB
        assert pool_tokens * BOOKKEEPING_BYTES_PER_TOKEN / GIB <= left
        f += 0.01           # and one step above they do not
        pool_tokens = (f * h200.memory_gib - plan.weights_gib) * GIB / kv
        assert pool_tokens * BOOKKEEPING_BYTES_PER_TOKEN / GIB > (
            (1 - f) * h200.memory_gib - OUTSIDE_GIB)
    assert bookkeeping_cap(0.0, h200.memory_gib, 1.0) == 1.0     # no KV: no bound


@pytest.mark.parametrize(("edit", "located"), [
    ({"architectures": ["LlamaForCausalLM"]}, "architectures: 'LlamaForCausalLM' is not"),
    ({"architectures": ["Qwen4ExpForConditionalGeneration"], "model_type": "qwen4_exp",
      "quantization_config": {"quant_method": "modelopt", "quant_algo": "NVFP4"}},
     "text_config: missing or not a mapping"),   # Qwen3.8-Flash-Next's layout, flat
    ({"architectures": None}, "architectures: missing"),
    ({"hidden_size": None}, "hidden_size: missing"),
    ({"num_experts": "many"}, "num_experts: expected an integer"),
    ({"quantization_config": {"quant_method": "awq"}}, "quantization_config.quant_method: "
                                                       "'awq' is not understood"),
])
def test_what_is_not_understood_is_refused_in_one_located_line(
        tmp_path: Path, edit: dict[str, Any], located: str) -> None:
    import json

    folder = tmp_path / "model"
    folder.mkdir()
    config = json.loads((FIXTURES / "qwen3-30b-a3b" / "config.json").read_text())
    config.update(edit)
    config = {k: v for k, v in config.items() if v is not None}
    (folder / "config.json").write_text(json.dumps(config))
    proc, out = init(tmp_path, folder, "--machine", "h200")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert lines[0].startswith(f"error: {folder / 'config.json'}: {located}"), lines[0]
    assert not out.exists()


@pytest.mark.parametrize(("args", "says"), [
    (["--machine", "dgx-spark"], "do not fit 1 x 119 GiB on dgx-spark"),
    (["--machine", "h200"], "try --gpus (up to 8)"),
    (["--machine", "b200"],
     "--machine 'b200': unknown machine; expected one of dgx-spark, h100, h200"),
    (["--machine", "h200", "--gpus", "9"], "--gpus 9: h200 holds 1 to 8 GPUs"),
    (["--machine", "h200", "--gpus", "8", "--draft", str(FIXTURES / "deepseek-v3")],
     "'DeepseekV3ForCausalLM' is not a draft tuner init understands"),
])
def test_bad_options_and_models_that_do_not_fit_write_nothing(
        tmp_path: Path, args: list[str], says: str) -> None:
    proc, out = init(tmp_path, FIXTURES / "deepseek-v3", *args)
    assert proc.returncode == 2, proc.stdout
    assert len(proc.stderr.strip().splitlines()) == 1 and says in proc.stderr, proc.stderr
    assert not out.exists()


def test_an_existing_file_is_kept_unless_forced(tmp_path: Path) -> None:
    out = tmp_path / "space.yaml"
    out.write_text("mine\n")
    proc, _ = init(tmp_path, FIXTURES / "gpt-oss-120b", "--machine", "h200")
    assert proc.returncode == 2 and "exists (pass --force" in proc.stderr
    assert out.read_text() == "mine\n"
    proc, _ = init(tmp_path, FIXTURES / "gpt-oss-120b", "--machine", "h200", "--force")
    assert proc.returncode == 0 and out.read_text().startswith("# GptOssForCausalLM")


def test_a_config_json_path_is_the_same_as_its_folder(tmp_path: Path) -> None:
    a = write_space(read_model(LING), machine("h200"), table_capabilities("0.5.23"),
                    drafts=[])
    b = write_space(read_model(LING / "config.json"), machine("h200"),
                    table_capabilities("0.5.23"), drafts=[])
    assert a.replace("/config.json", "") == b.replace("/config.json", "")
    with pytest.raises(UserError, match="no such file"):
        read_model(tmp_path / "nothing")


def _sim_sweep(tmp_path: Path, space: Path, trials: int) -> subprocess.CompletedProcess[str]:
    """A short sweep of ``space`` on the simulator (time scale 300, seed 3) that exited 0."""
    sweep = subprocess.run(tuner_argv(
        "sweep", str(space), "--engine", "sim", "--gsm8k", str(GSM8K_DIR), "--storage",
        str(tmp_path / "s.db"), "--trials", str(trials), "--questions", "6", "--time-scale",
        "300", "--seed", "3", "--workdir", str(tmp_path / "runs")), capture_output=True,
        text=True, timeout=600, cwd=tmp_path)
    assert sweep.returncode == 0, sweep.stdout[-2000:] + sweep.stderr[-2000:]
    return sweep


@pytest.mark.slow
def test_a_short_sweep_runs_on_the_generated_ling_space(tmp_path: Path) -> None:
    proc, out = init(tmp_path, LING, "--machine", "dgx-spark", "--draft", str(DSPARK))
    assert proc.returncode == 0, proc.stderr
    sweep = _sim_sweep(tmp_path, out, trials=6)
    assert "6 configurations" in sweep.stdout and "the pick #" in sweep.stdout


def test_an_h100_space_bounds_the_fraction_for_80_gb_and_sweeps_on_its_twin(
        tmp_path: Path) -> None:
    """The H100 profile: SGLang's automatic fraction for an 80 GB card (0.84) as the
    baseline, under a cap that leaves about 10 GB (0.88), and the simulator's own H100
    machine (the H200's chip with 80 GB at 3.35 TB/s) runs the generated space."""
    from tuner_sim.profiles import load_machine

    proc, out = init(tmp_path, FIXTURES / "qwen3-30b-a3b", "--machine", "h100")
    assert proc.returncode == 0, proc.stderr
    space = load_space(out)
    assert space.spec.machine.id == "h100"
    auto = round(sglang_auto_fraction(machine("h100")), 2)
    assert space.spec.baseline["mem_fraction"] == auto == 0.84
    assert knob(space, "mem_fraction").high == machine("h100").fraction_cap == 0.88
    twin = load_machine("h100")
    assert (twin.memory_gib, twin.bandwidth_gbs) == (
        machine("h100").memory_gib, machine("h100").bandwidth_gbs)
    sweep = _sim_sweep(tmp_path, out, trials=4)
    said = " ".join(sweep.stdout.split())         # rich wraps at the terminal's width
    assert "sweep qwen3-30b-a3b-h100 on simulated h100" in said, said
    assert re.search(r"(\d) configurations: \1 feasible", said) and "the pick #" in said
    assert "DERIVED twin" in said


@pytest.mark.parametrize(("name", "tensors", "layers"), [
    ("qwen3-30b-a3b", ["model.layers.0.mlp.gate.weight", "mtp.layers.0.mlp.gate.weight"], 1),
    ("qwen3-next-80b-a3b-instruct", ["model.layers.0.mlp.gate.weight"], 0),
])
def test_the_checkpoints_tensor_index_says_whether_it_has_mtp_layers(
        tmp_path: Path, name: str, tensors: list[str], layers: int) -> None:
    """A checkpoint folder whose config has no MTP key: its safetensors index decides
    (a Qwen3-MoE export with an MTP head gets NEXTN; a Qwen3-Next export without one does
    not, whatever the release usually carries)."""
    import json

    folder = tmp_path / name
    folder.mkdir()
    shutil.copy(FIXTURES / name / "config.json", folder / "config.json")
    (folder / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {}, "weight_map": {t: "model-1.safetensors" for t in tensors}}))
    shape = read_model(folder)
    assert shape.nextn_layers == layers and "model.safetensors.index.json" in shape.nextn_source
    text = write_space(shape, machine("h200"), table_capabilities("0.5.23"), drafts=[],
                       gpus=2)
    space = parse_space(text)
    assert ("speculative" in space.spec.knobs) is bool(layers)


def test_init_reproduces_the_shipped_qwen38_spark_space(tmp_path: Path) -> None:
    """The committed Qwen3.8-Flash-Next space is what tuner init writes from the fixture
    (reviewed: only the model path and comments differ): same knobs, fixed flags, limits
    and baseline, the cookbook's 1x Spark cell at batch 1 with its file-backed n-gram
    table, and every canonical configuration plans."""
    proc, out = init(tmp_path, QWEN38, "--machine", "dgx-spark")
    assert proc.returncode == 0, proc.stderr
    mine, shipped = load_space(out).spec, load_space(QWEN38_SPARK).spec
    assert list(mine.knobs) == list(shipped.knobs) == [
        "moe_backend", "lm_head", "speculative", "spec_steps", "mem_fraction"]
    fields = ("type", "choices", "low", "high", "step", "default", "when", "role", "lossless",
              "lossy_values", "flag", "env")
    for name, k in shipped.knobs.items():
        assert {f: getattr(mine.knobs[name], f) for f in fields} == {
            f: getattr(k, f) for f in fields}, name
    assert mine.baseline == shipped.baseline == {
        "moe_backend": "flashinfer_cutlass", "lm_head": "bf16", "speculative": "NEXTN",
        "mem_fraction": 0.70}
    assert dict(mine.fixed_flags) == dict(shipped.fixed_flags)
    flags = dict(shipped.fixed_flags)
    assert (flags["--quantization"], flags["--ple-offload-embedding"],
            flags["--ple-offload-backend"]) == ("modelopt_fp4", True, "file")
    assert (flags["--max-running-requests"], flags["--max-mamba-cache-size"]) == (1, 5)
    assert shipped.model.path == "RadixArk/Qwen3.8-Flash-Next-NVFP4"
    nextn = shipped.knobs["speculative"].values["NEXTN"].flags
    assert nextn["--speculative-eagle-topk"] == 1          # a chain: no tree knobs
    assert "spec_topk" not in shipped.knobs and "spec_draft_tokens" not in shipped.knobs
    assert every_plan(load_space(QWEN38_SPARK)) == 144
    text = QWEN38_SPARK.read_text()
    for said in ("flashinfer_cutedsl: ModelOptNvFp4FusedMoEMethod dispatches to it",
                 "--moe-runner-backend flashinfer_trtllm: not served on this GPU",
                 "instead of the cell's 0.85", "the tool does not delete it"):
        assert said in text, said


def test_the_qwen38_memory_plan_matches_its_published_sizes() -> None:
    """The PLE table as SGLang builds it (320,001,536 rows of 160: 47.7 GiB in FP8) and the
    rest of the checkpoint (the cookbook: 78 GiB of experts and dense weights, MTP layer
    included) from the shape; the table is left out of the resident weights, so the
    lowest memory fraction holds the weights but not the table."""
    shape = read_model(QWEN38)
    assert shape.ple_table_params == 320_001_536 * 160
    spark = machine("dgx-spark")
    plan = plan_memory(shape, spark.memory_gib)
    assert plan.ple_gib == 47.7
    assert abs(plan.weights_gib + plan.nextn_gib - 78.0) / 78.0 < 0.03
    assert plan.low * spark.memory_gib > plan.weights_gib
    assert plan.low * spark.memory_gib < plan.weights_gib + plan.ple_gib
    assert shape.nextn_unquantized and shape.full_attention_layers == 12


def _qwen38_edited(tmp: Path, edit: Any) -> Path:
    import json

    folder = tmp / "model"
    folder.mkdir()
    config = json.loads((QWEN38 / "config.json").read_text())
    edit(config)
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def _set(path: str, value: Any) -> Any:
    def edit(config: dict[str, Any]) -> None:
        *head, last = path.split(".")
        node = config
        for part in head:
            node = node[part]
        node[last] = value
    return edit


@pytest.mark.parametrize(("edit", "located"), [
    (_set("quantization_config.quant_algo", "MIXED_PRECISION"),
     "quantization_config.quant_algo: 'MIXED_PRECISION' (the NVIDIA export) is not understood"),
    (_set("text_config.layer_types", ["sliding_attention"] * 48),
     "text_config.layer_types: ['sliding_attention'] are not understood"),
    (_set("text_config.layer_types", ["linear_attention"] * 47),
     "text_config.layer_types: expected a list of 48 layer kinds"),
    (_set("text_config.hc_count", 1), "text_config.hc_count: expected an integer of at least 2"),
    (_set("text_config.ple_embed_dim", 2500),
     "text_config.ple_embed_dim: 2500 is not a multiple of the 16 n-gram heads"),
    (_set("quantization_config.quant_method", "fp8"),
     "quantization_config.quant_method: 'fp8' is not understood for Qwen4-Exp"),
])
def test_a_qwen38_layout_not_understood_is_refused_in_one_located_line(
        tmp_path: Path, edit: Any, located: str) -> None:
    folder = _qwen38_edited(tmp_path, edit)
    proc, out = init(tmp_path, folder, "--machine", "dgx-spark")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert lines[0].startswith(f"error: {folder / 'config.json'}: {located}"), lines[0]
    assert not out.exists()


def test_qwen38_is_planned_only_where_a_recipe_proves_it(tmp_path: Path) -> None:
    """On the H200 (SM90: no FP4 tensor cores, no cookbook cell) nothing is written."""
    proc, out = init(tmp_path, QWEN38, "--machine", "h200")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert ("is planned on dgx-spark only, not h200" in proc.stderr
            and str(QWEN38 / "config.json") in proc.stderr), proc.stderr
    assert not out.exists()


@pytest.mark.slow
def test_the_main_job_runs_on_the_shipped_qwen38_space(tmp_path: Path) -> None:
    """The README's main job on the second target: a 20-trial sweep of the committed
    Qwen3.8-Flash-Next space on the simulator (its calibrated twin), end to end: every
    launch proves its knobs and fixed flags (the file-backed n-gram table included), the
    finals re-launch, and a pick is made."""
    import re

    sweep = subprocess.run(tuner_argv(
        "sweep", str(QWEN38_SPARK), "--engine", "sim", "--gsm8k", str(GSM8K_DIR),
        "--storage", str(tmp_path / "s.db"), "--trials", "20", "--questions", "6",
        "--time-scale", "300", "--seed", "3", "--workdir", str(tmp_path / "runs")),
        capture_output=True, text=True, timeout=1500, cwd=tmp_path)
    out = sweep.stdout
    assert sweep.returncode == 0, out[-2000:] + sweep.stderr[-2000:]
    assert re.search(r"(\d+) configurations: \1 feasible", out), out[-2000:]
    assert "launch overhead: 20 launches" in out and "the pick #" in out
    assert "0 failed" in out
