"""The twin DERIVED from a checkpoint's config.json (docs/simulator.md, "The derived twin"),
checked against first principles: what a model's shape implies, not figures it printed.

The public config.json files are under tests/fixtures/model_configs/ (SOURCES.md there);
Ling's shape is tests/fixtures/derived/ling-3.0-flash-fp4-shape.json (its public fields).
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import GSM8K_DIR
from tests.conftest import REPO
from tests.conftest import run_tuner
from tuner.engines import make_engine
from tuner.trial._server import free_port
from tuner_sim.args import LaunchError
from tuner_sim.derive import derive_model
from tuner_sim.memory import plan_memory
from tuner_sim.perf import PerfModel
from tuner_sim.perf import Settings
from tuner_sim.perf import Workload
from tuner_sim.profiles import DERIVED
from tuner_sim.profiles import derived_defaults
from tuner_sim.profiles import load_machine
from tuner_sim.profiles import load_model_for_path


CONFIGS = REPO / "tests" / "fixtures" / "model_configs"
LING_SHAPE = REPO / "tests" / "fixtures" / "derived" / "ling-3.0-flash-fp4-shape.json"
SPACE = REPO / "tests" / "fixtures" / "spaces" / "qwen3-30b-a3b-h200.yaml"
GSM8K_CONTEXT = Workload("sampled", 1500, "math")


def _cfg(name: str) -> dict[str, Any]:
    return json.loads((CONFIGS / name / "config.json").read_text())


def _derive(cfg: dict[str, Any], tmp: Path, name: str = "m") -> Any:
    path = tmp / name / "config.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(cfg))
    return derive_model(path, derived_defaults())


def _tpot(machine: str, model: Any, settings: Settings | None = None,
          workload: Workload = GSM8K_CONTEXT) -> float:
    return PerfModel(load_machine(machine), model, settings or Settings(
        moe_backend="auto", lm_head="bf16")).expected_tpot_ms(workload)


def _args(f: float = 0.85, **kw: Any) -> dict[str, Any]:
    return {"mem_fraction_static": f, "speculative_algorithm": None,
            "max_mamba_cache_size": None, "max_running_requests": 1,
            "enable_linear_replayssm_spec": False, "page_size": 1,
            "cuda_graph_config": {"decode": {"backend": "full", "bs": [1]}}, **kw}


#: the public configs of models without a calibrated profile (Ling's folder there names
#: the calibrated one, the DSpark draft's is a draft: SOURCES.md, README.md)
UNCALIBRATED = ("deepseek-v3", "gpt-oss-120b", "qwen3-30b-a3b", "qwen3-next-80b-a3b-instruct")


@pytest.mark.parametrize("name", UNCALIBRATED)
def test_every_public_config_derives_a_twin_labelled_derived(name: str) -> None:
    m = load_model_for_path(str(CONFIGS / name))
    assert m.twin == DERIVED and m.architecture == _cfg(name)["architectures"][0]
    # a quarter to all of the parameters sit in the routed experts; few are active
    routed = m.moe_layers * m.routed_experts * m.expert_bytes / m.expert_bytes_per_param / 1e9
    assert 0.25 * m.params_total_b < routed < m.params_total_b
    assert m.params_active_b < 0.2 * m.params_total_b


def test_the_calibrated_profile_still_wins_for_lings_path() -> None:
    assert load_model_for_path("inclusionAI/Ling-3.0-flash-fp4").twin != DERIVED
    assert load_model_for_path(str(CONFIGS / "ling-3.0-flash-fp4")).twin != DERIVED


@pytest.mark.parametrize("settings", [
    Settings(), Settings(lm_head="bf16"), Settings(moe_backend="humming", lm_head="fp8"),
    Settings(moe_backend="humming", lm_head="fp8", speculative=True)],
    ids=["baseline", "bf16-head", "humming-fp8-head", "all-three"])
@pytest.mark.parametrize("machine", ["dgx-spark", "h200"])
def test_lings_derived_twin_decodes_within_20pct_of_its_calibrated_profile(
        machine: str, settings: Settings) -> None:
    """The same model, once from its config.json, once from the profile fitted to the
    published Spark rows: the shapes agree where config.json says the same thing (MLA KV
    of 7 layers x (512 + 64) x 2 B), and batch-1 TPOT within 20% (the derived twin is
    about 10% slower: it counts 2.8 GB of dense weights where the fit holds 2.3)."""
    derived = derive_model(LING_SHAPE, derived_defaults())
    calibrated = load_model_for_path("inclusionAI/Ling-3.0-flash-fp4")
    assert derived.kv_bytes_per_token == calibrated.kv_bytes_per_token
    assert derived.mla_layers == calibrated.mla_layers
    for w in (GSM8K_CONTEXT, Workload("greedy", 33792, "random")):
        ratio = _tpot(machine, derived, settings, w) / _tpot(machine, calibrated, settings, w)
        assert 0.8 < ratio < 1.2, (machine, w, ratio)


def test_a_model_with_more_active_parameters_decodes_slower(tmp_path: Path) -> None:
    base = _cfg("qwen3-30b-a3b")
    wider = {**base, "num_experts_per_tok": 16}          # the same experts, twice as many
    a, b = _derive(base, tmp_path, "a"), _derive(wider, tmp_path, "b")
    assert b.params_total_b == a.params_total_b and b.params_active_b > a.params_active_b
    assert _tpot("dgx-spark", b) > _tpot("dgx-spark", a)
    deepseek = load_model_for_path(str(CONFIGS / "deepseek-v3"))
    assert deepseek.params_active_b > 10 * a.params_active_b
    assert _tpot("h200", deepseek) > _tpot("h200", a)


def test_mla_kv_per_token_is_far_below_an_equivalent_gqa(tmp_path: Path) -> None:
    cfg = _cfg("deepseek-v3")
    mla = load_model_for_path(str(CONFIGS / "deepseek-v3"))
    # the same layers and heads with uncompressed keys and values (one KV head per head)
    mha = {k: v for k, v in cfg.items() if k not in ("kv_lora_rank", "q_lora_rank")}
    mha.update(head_dim=cfg["v_head_dim"], num_key_value_heads=cfg["num_attention_heads"])
    gqa = _derive(mha, tmp_path)
    layers = cfg["num_hidden_layers"]
    assert mla.kv_bytes_per_token == layers * (cfg["kv_lora_rank"] + cfg["qk_rope_head_dim"]) * 2
    assert gqa.kv_bytes_per_token == layers * 2 * cfg["num_attention_heads"] * cfg[
        "v_head_dim"] * 2
    assert gqa.kv_bytes_per_token > 20 * mla.kv_bytes_per_token
    # the pool holds that many times more tokens of the MLA model, weights aside
    h200 = load_machine("h200")
    slim = mla.model_copy(update={"moe_layers": 1, "dense_active_gb": 1.0})   # to fit
    fat = slim.model_copy(update={"kv_bytes_per_token": gqa.kv_bytes_per_token})
    assert plan_memory(h200, slim, _args()).max_total_num_tokens > 20 * plan_memory(
        h200, fat, _args()).max_total_num_tokens


def test_a_hybrid_linear_attention_models_kv_grows_slower_with_context(tmp_path: Path) -> None:
    """Qwen3-Next: one full-attention layer in four, the rest Gated DeltaNet with a fixed
    state per request; the same model with every layer full attention for comparison."""
    cfg = _cfg("qwen3-next-80b-a3b-instruct")
    hybrid = load_model_for_path(str(CONFIGS / "qwen3-next-80b-a3b-instruct"))
    full = _derive({k: v for k, v in cfg.items() if k != "full_attention_interval"}, tmp_path)
    assert hybrid.linear_state_gb_per_request > 0 == full.linear_state_gb_per_request

    def memory_gb(m: Any, context: int) -> float:      # one request's cache
        return (m.kv_bytes_per_token * context) / 1e9 + m.linear_state_gb_per_request

    def slope(m: Any) -> float:
        return memory_gb(m, 100_000) - memory_gb(m, 1_000)

    n_full = cfg["num_hidden_layers"] // cfg["full_attention_interval"]
    assert slope(hybrid) * cfg["num_hidden_layers"] == pytest.approx(slope(full) * n_full)
    assert slope(hybrid) < slope(full) / 3
    # decode slows down with context less, too
    far, near = Workload("greedy", 100_000, "random"), Workload("greedy", 1_000, "random")
    assert (_tpot("h200", hybrid, workload=far) - _tpot("h200", hybrid, workload=near)) < (
        _tpot("h200", full, workload=far) - _tpot("h200", full, workload=near)) / 3


def test_the_memory_plan_refuses_weights_beyond_the_machine() -> None:
    spark = load_machine("dgx-spark")
    deepseek = load_model_for_path(str(CONFIGS / "deepseek-v3"))     # ~670 GB of weights
    assert deepseek.weights_gb > spark.memory_gib
    with pytest.raises(LaunchError) as exc:
        plan_memory(spark, deepseek, _args(0.68))
    assert exc.value.exc_type == "torch.OutOfMemoryError"
    assert "CUDA out of memory" in exc.value.message
    oss = load_model_for_path(str(CONFIGS / "gpt-oss-120b"))          # ~65 GB: it fits...
    assert plan_memory(spark, oss, _args(0.68)).max_total_num_tokens > 0
    with pytest.raises(LaunchError) as low:                           # ...not in half of it
        plan_memory(spark, oss, _args(0.45))
    assert "Raise --mem-fraction-static" in low.value.message


def _serve(tmp: Path, model: Path, *flags: str, machine: str = "h200"
           ) -> subprocess.Popen[str]:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("TUNER_SIM_")},
           "TUNER_SIM_MACHINE": machine, "TUNER_SIM_TIME_SCALE": "200", "TUNER_SIM_NOISE": "0",
           "TUNER_SIM_GSM8K": str(GSM8K_DIR), "HUMMING_CACHE_DIR": str(tmp / "humming")}
    return subprocess.Popen([sys.executable, "-m", "tuner_sim.fork", "serve", "--model-path",
                             str(model), *flags], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env, cwd=REPO)


def test_weights_beyond_the_machine_fail_the_server_as_a_cuda_oom(tmp_path: Path) -> None:
    proc = _serve(tmp_path, CONFIGS / "deepseek-v3", "--port", str(free_port()),
                  "--mem-fraction-static", "0.68", machine="dgx-spark")
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 1
    assert "torch.OutOfMemoryError: CUDA out of memory" in out and "Load weight end" not in out
    assert make_engine("sglang").protocol().classify_exit(out) == "oom"


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Qwen3-30B-A3B-shaped checkpoint folder holding only its config.json."""
    folder = tmp_path_factory.mktemp("ckpt") / "Qwen3-30B-A3B"
    folder.mkdir()
    shutil.copy(CONFIGS / "qwen3-30b-a3b" / "config.json", folder / "config.json")
    return folder


@pytest.mark.slow
def test_the_derived_twin_serves_a_folder_holding_only_config_json(
        tmp_path: Path, checkpoint: Path) -> None:
    port = free_port()
    proc = _serve(tmp_path, checkpoint, "--port", str(port), "--mem-fraction-static", "0.8",
                  "--max-running-requests", "1", "--decode-log-interval", "8")
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if httpx.get(base + "/health", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                assert proc.poll() is None, proc.communicate()[0]
            time.sleep(0.1)
        info = httpx.get(base + "/server_info", timeout=10).json()
        model_info = httpx.get(base + "/model_info", timeout=10).json()
        gen = httpx.post(base + "/generate", timeout=30, json={
            "text": "Hello", "sampling_params": {"max_new_tokens": 16, "temperature": 0}})
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=20)
    assert info["twin"] == DERIVED and info["time_scale"] == 200.0
    assert model_info["architectures"] == ["Qwen3MoeForCausalLM"]
    assert model_info["model_type"] == "qwen3_moe"
    cfg = json.loads((checkpoint / "config.json").read_text())
    assert info["context_length"] == cfg["max_position_embeddings"]
    model = load_model_for_path(str(checkpoint))
    plan = plan_memory(load_machine("h200"), model, {
        **_args(0.8), "cuda_graph_config": info["cuda_graph_config"],
        "page_size": info["page_size"]})
    assert info["max_total_num_tokens"] == plan.max_total_num_tokens
    assert gen.status_code == 200 and gen.json()["meta_info"]["completion_tokens"] == 16
    assert "DERIVED twin of" in out and "(simulator: DERIVED twin)" in out


def test_nextn_is_refused_for_a_checkpoint_without_an_mtp_layer(
        tmp_path: Path, checkpoint: Path) -> None:
    proc = _serve(tmp_path, checkpoint, "--port", str(free_port()), "--speculative-algorithm",
                  "NEXTN", "--speculative-draft-model-path", str(checkpoint))
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 1 and "has no NEXTN (MTP) layer" in out


@pytest.mark.slow
def test_tuner_trial_runs_a_space_whose_model_is_only_a_config_json(
        tmp_path: Path, checkpoint: Path) -> None:
    space = tmp_path / "space.yaml"
    space.write_text(SPACE.read_text().replace("path: tests/fixtures/model_configs/"
                                               "qwen3-30b-a3b", f"path: {checkpoint}"))
    out = tmp_path / "result.json"
    proc = run_tuner(REPO, "trial", str(space), "--engine", "sim", "--gsm8k", str(GSM8K_DIR),
                     "--questions", "2", "--workdir", str(tmp_path / "runs"), "--out",
                     str(out), timeout=300)
    assert proc.returncode in (0, 1), proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "simulated machine time, DERIVED twin" in proc.stdout
    result = json.loads(out.read_text())
    assert result["status"] == "ok" and result["twin"] == DERIVED, result.get("message")
    assert result["server_info"]["twin"] == DERIVED
    assert result["effect"] and all(c["verdict"] == "confirmed" for c in result["effect"])
    assert result["aggregates"]["tpot_ms"] > 0


def test_a_config_the_twin_cannot_read_is_refused_in_one_line(tmp_path: Path) -> None:
    dense = {k: v for k, v in _cfg("qwen3-30b-a3b").items() if k != "num_experts"}
    with pytest.raises(ValueError, match="no routed experts"):
        _derive(dense, tmp_path)
    odd = copy.deepcopy(_cfg("deepseek-v3"))
    odd["quantization_config"]["quant_method"] = "bitsy"
    with pytest.raises(ValueError, match="quant_method 'bitsy'"):
        _derive(odd, tmp_path, "odd")


def test_a_dspark_draft_derives_its_kv_from_its_config(tmp_path: Path) -> None:
    """Ling's DSPARK draft as its model card describes it (5 dense layers, hidden 2,560,
    32 query and 32 KV heads of 128): the KV per token the calibrated profile states."""
    from tuner_sim.derive import derive_draft
    from tuner_sim.profiles import DenseDraft
    from tuner_sim.speculative import ALGORITHMS

    cfg = {"architectures": ["LingDSparkModel"], "num_hidden_layers": 5, "hidden_size": 2560,
           "num_attention_heads": 32, "num_key_value_heads": 32, "head_dim": 128,
           "intermediate_size": 9728, "torch_dtype": "bfloat16", "block_size": 8}
    path = tmp_path / "draft" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(cfg))
    draft = derive_draft(path, ALGORITHMS["DSPARK"])
    calibrated = load_model_for_path("inclusionAI/Ling-3.0-flash-fp4").drafts["DSPARK"]
    assert isinstance(calibrated, DenseDraft)
    assert draft.kv_bytes_per_token == calibrated.kv_bytes_per_token
    assert draft.block_size == 8 and draft.resident_gb == pytest.approx(
        draft.params_b * 2)                              # BF16, embedding and head shared


@pytest.mark.slow
def test_a_sweep_and_its_report_say_the_figures_are_a_derived_twins(
        tmp_path: Path, checkpoint: Path) -> None:
    space = tmp_path / "space.yaml"
    space.write_text(SPACE.read_text().replace("path: tests/fixtures/model_configs/"
                                               "qwen3-30b-a3b", f"path: {checkpoint}"))
    storage = f"sqlite:///{tmp_path / 's.db'}"
    sweep = run_tuner(tmp_path, "sweep", str(space), "--engine", "sim", "--gsm8k",
                      str(GSM8K_DIR), "--questions", "2", "--trials", "2", "--ray-address",
                      "none", "--storage", storage, "--study", "derived", timeout=600)
    assert sweep.returncode == 0, sweep.stdout[-3000:] + sweep.stderr[-3000:]
    assert "TPOT" in sweep.stdout and "[DERIVED twin]" in sweep.stdout
    assert "(simulated machine time, DERIVED twin)" in sweep.stdout
    report = run_tuner(tmp_path, "report", "derived", "--storage", storage, timeout=120)
    assert report.returncode == 0, report.stderr[-2000:]
    assert "simulated machine time, DERIVED twin" in report.stdout
