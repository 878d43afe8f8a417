"""Qwen3.8-Flash-Next's twin (tuner_sim/profiles/models/qwen3.8-flash-next-nvfp4.yaml)
against SGLang's cookbook cells for the DGX Spark (sgl-project/sglang PR #37995), its
derived sizes against the published ones, and the n-gram table's memory rules as SGLang
0.5.23 states them."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tests.conftest import REPO
from tuner_sim.args import LaunchError
from tuner_sim.args import build_parser
from tuner_sim.args import resolve
from tuner_sim.calibrate import QWEN38
from tuner_sim.calibrate import QWEN38_ARGV
from tuner_sim.calibrate import qwen38_rows
from tuner_sim.derive import derive_model
from tuner_sim.memory import plan_memory
from tuner_sim.profiles import derived_defaults
from tuner_sim.profiles import load_machine
from tuner_sim.profiles import load_model_for_path


FIXTURE = REPO / "tests" / "fixtures" / "model_configs" / "qwen3.8-flash-next-nvfp4"
SPARK = load_machine("dgx-spark")
TWIN = load_model_for_path(QWEN38)
GIB = 1024**3


def test_the_cells_it_is_calibrated_on_are_within_5_percent() -> None:
    """Checked: the RadixArk export's 1x TPOT at concurrency 1, 4, 8 (MTP) and 1, 16, 24
    (speculation off), and the latter's TTFT at concurrency 1. Everything else is reported
    with its error and not checked."""
    table = qwen38_rows()
    checked = [r for r in table if r.check == "within5"]
    assert [(r.table.split(",")[1].strip(), r.metric) for r in checked] == [
        ("1x GB10 cookbook low latency", f"concurrency {c}: TPOT") for c in (1, 4, 8)] + [
        ("1x GB10 cookbook high throughput", "concurrency 1: TPOT"),
        ("1x GB10 cookbook high throughput", "concurrency 1: mean TTFT"),
        ("1x GB10 cookbook high throughput", "concurrency 16: TPOT"),
        ("1x GB10 cookbook high throughput", "concurrency 24: TPOT")]
    assert all(r.ok for r in checked), [(r.metric, round(r.error_pct, 1)) for r in checked]
    reported = [r for r in table if r.check == "info"]
    assert all(math.isfinite(r.error_pct) for r in reported)
    assert sum("NVDA, 1x" in r.table for r in reported) == 18
    assert sum("2x GB10" in r.table for r in reported) == 12


def test_the_nvidia_exports_tpot_it_was_not_fitted_on_is_within_5_percent() -> None:
    """The same twin against NVIDIA's export on one Spark (not fitted: another checkpoint
    of the same model, FP8 MTP experts): the TPOT carries over."""
    rows = [r for r in qwen38_rows() if "NVDA, 1x" in r.table and r.metric.endswith("TPOT")]
    assert len(rows) == 6
    assert all(abs(r.error_pct) <= 5.0 for r in rows), [(r.metric, r.error_pct) for r in rows]


def test_the_pair_it_does_not_model_is_shown_beside_one_spark() -> None:
    """The 2x cells (TP=2 over two Sparks) are shown beside the 1x twin: TP is not
    modelled, and the twin's single-Spark TPOT is 1.5-2x the pair's, as the cookbook's own
    1x and 2x cells differ."""
    rows = [r for r in qwen38_rows() if "2x GB10" in r.table and r.metric.endswith("TPOT")]
    assert len(rows) == 4
    assert all(1.5 < r.model / r.published < 2.0 for r in rows)


def test_the_derived_shape_matches_the_published_sizes(tmp_path: Path) -> None:
    """From the fixture's config.json: 176 B parameters of which 51 B the n-gram table, 6 B
    active (the model card), a 47.7 GiB table in FP8 (the cookbook), 78 GiB of experts and
    dense weights with the MTP layer (the cookbook), a ~113 MB fp32 state slot (the
    cookbook's RTX PRO 6000 and Spark notes). The calibrated profile states the same."""
    cfg = json.loads((FIXTURE / "config.json").read_text())
    cfg["text_config"]["ple_embedding_dtype"] = "float8_e4m3fn"    # the exports' shards
    path = tmp_path / "qwen38" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(cfg))
    m = derive_model(path, derived_defaults())
    assert m.params_total_b == pytest.approx(176.0, rel=0.015)
    assert m.params_active_b == pytest.approx(6.0, rel=0.02)
    assert m.ple_table_gb * 1e9 / GIB == pytest.approx(47.7, abs=0.05)
    mtp = m.drafts["NEXTN"]
    assert (m.weights_gb + mtp.resident_gb) * 1e9 / GIB == pytest.approx(78.0, rel=0.03)
    assert m.linear_state_gb_per_request == pytest.approx(0.113, rel=0.05)
    assert m.quantization["experts"] == "nvfp4" and m.quantization["router"] == "bf16"
    for field in ("kv_bytes_per_token", "moe_layers", "routed_experts", "vocab_size"):
        assert getattr(TWIN, field) == getattr(m, field), field
    assert TWIN.linear_state_gb_per_request == pytest.approx(m.linear_state_gb_per_request,
                                                             abs=1e-3)
    assert TWIN.drafts["NEXTN"].resident_gb == pytest.approx(mtp.resident_gb, abs=0.01)
    assert TWIN.ple_table_gb == pytest.approx(m.ple_table_gb, abs=0.05)


def _launch(*extra: str, drop: tuple[str, ...] = ()) -> object:
    """Resolve and plan a 1x cell's launch (speculation off) as the simulated server does."""
    argv = [a for a in QWEN38_ARGV[("RDXA", "high throughput")] if a not in drop]
    args = resolve(build_parser().parse_args([*argv, *extra]), architecture=TWIN.architecture,
                   capability=SPARK.compute_capability, model_context=TWIN.context_length,
                   env={}, memory_gb=SPARK.memory_gib).args
    return args, plan_memory(SPARK, TWIN, args)


def test_one_spark_holds_the_checkpoint_only_with_its_table_in_a_file() -> None:
    args, plan = _launch()
    assert args["moe_runner_backend"] == "flashinfer_cutlass"     # auto, modelopt_fp4, SM12x
    assert plan.weights_gb < 80                                     # the table is not in it
    for extra, drop in ((("--no-ple-offload-embedding",), ("--ple-offload-embedding",
                                                          "--ple-offload-backend", "file")),
                        ((), ("--ple-offload-backend", "file"))):   # resident; pinned host
        with pytest.raises(LaunchError) as exc:
            _launch(*extra, drop=drop)
        assert exc.value.exc_type == "torch.OutOfMemoryError"


@pytest.mark.parametrize(("extra", "drop", "says"), [
    (("--no-ple-offload-embedding",), ("--ple-offload-embedding",),
     "--ple-offload-backend file requires --ple-offload-embedding"),
    ((), ("--quantization", "modelopt_fp4"), "flashinfer_trtllm runner fails"),
    (("--moe-runner-backend", "flashinfer_trtllm"), (), "trtllm-gen MoE kernels are SM100"),
])
def test_what_sglang_refuses_for_this_model_the_simulator_refuses(
        extra: tuple[str, ...], drop: tuple[str, ...], says: str) -> None:
    with pytest.raises(LaunchError) as exc:
        _launch(*extra, drop=drop)
    assert says in exc.value.message
