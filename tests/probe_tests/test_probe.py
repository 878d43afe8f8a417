"""The probe's non-GPU parts: shapes, the fit of a recorded H200 run, the twin it writes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import H200
from tests.conftest import SPARK
from tests.conftest import tuner_argv
from tuner.probe._fit import fit
from tuner.probe._fit import moe_fit
from tuner.probe._shapes import probe_shapes
from tuner.space import load_space


RECORDED = Path(__file__).parent / "probe-h200.json"   # tuner probe on the lent H200
PROBE = json.loads(RECORDED.read_text())
BASE = yaml.safe_load((Path(__file__).parents[2] / "tuner_sim" / "profiles" / "machines" /
                       "h200.yaml").read_text())


def test_shapes_come_from_the_space() -> None:
    s = probe_shapes(load_space(SPARK))
    assert (s["hidden"], s["intermediate"], s["experts"], s["top_k"], s["vocab"]) == (
        2560, 768, 512, 8, 157184)
    assert s["expert_bytes"] == 3 * 2560 * 768 * (0.5 + 1 / 32)
    assert s == probe_shapes(load_space(H200))


def test_fit_recovers_the_measured_line() -> None:
    f = moe_fit(PROBE["moe_w4a16"], PROBE["shapes"]["expert_bytes"], PROBE["copy"]["gbs"])
    assert f["timing"] == "cuda-graph"
    rows = PROBE["moe_w4a16"]["rows"]
    # the fitted line reproduces every graph timing within 15%
    eb = PROBE["shapes"]["expert_bytes"]
    for r in rows:
        model = f["layer_overhead_us"] / 1000 + r["distinct_experts"] * eb / (
            f["effective_gbs"] * 1e6)
        assert abs(model / r["graph_ms"] - 1) < 0.15, (r["m"], model, r["graph_ms"])
    assert f["verify_cost"][1] == 1.0 and 1.5 < f["verify_cost"][4] < 2.5
    assert 0 < f["efficiency"] < 1


def test_twin_profile_is_valid_and_moves_predictions_the_measured_way() -> None:
    from tuner_sim.perf import PerfModel
    from tuner_sim.perf import Settings
    from tuner_sim.perf import Workload
    from tuner_sim.profiles import Machine
    from tuner_sim.profiles import load_model_for_path

    twin, summary = fit(PROBE, BASE)
    stock, cal = Machine.model_validate(BASE), Machine.model_validate(twin)
    assert cal.bandwidth_gbs == pytest.approx(PROBE["copy"]["gbs"], rel=1e-3)
    model = load_model_for_path("ling-3.0-flash-fp4")
    hum = Settings(moe_backend="humming")

    def layer_us(m: Machine, tokens: int) -> float:
        return PerfModel(m, model, hum).routed_ms(tokens, 0.0, 1, "humming") * 1000

    measured = {r["m"]: r["graph_ms"] * 1000 for r in PROBE["moe_w4a16"]["rows"]}
    # one Humming MoE layer: the twin is close to the GPU, the stock guess is not
    for tokens in (1, 4, 16):
        assert abs(layer_us(cal, tokens) / measured[tokens] - 1) < 0.15
    assert abs(layer_us(stock, 1) / measured[1] - 1) > 0.5
    # measured: W4A8 is faster than W4A16 on an H200 (the stock profile assumed slower)
    assert summary["moe_w4a8"]["efficiency"] > summary["moe_w4a16"]["efficiency"]
    w4a8 = Settings(moe_backend="humming", humming_w4a8=True)
    gsm = Workload("sampled", 1600)
    assert PerfModel(cal, model, w4a8).expected_tpot_ms(gsm) < PerfModel(
        cal, model, hum).expected_tpot_ms(gsm)
    assert PerfModel(stock, model, w4a8).expected_tpot_ms(gsm) > PerfModel(
        stock, model, hum).expected_tpot_ms(gsm)


def test_probe_cli_fits_a_recording_and_the_simulator_reads_the_twin(tmp_path: Path) -> None:
    proc = subprocess.run(tuner_argv("probe", str(H200), "--from-json", str(RECORDED),
                                     "--profile-dir", str(tmp_path)), capture_output=True,
                          text=True, timeout=120, env={**os.environ, "COLUMNS": "200"})
    assert proc.returncode == 0, proc.stderr
    assert "verify cost t(4)/t(1)" in proc.stdout
    out = subprocess.run([sys.executable, "-c", "from tuner_sim.profiles import load_machine;"
                          "m = load_machine('h200'); print(m.calibration['source'], "
                          "m.moe_layer_overhead_us['humming'])"], capture_output=True,
                         text=True, env={**os.environ, "TUNER_SIM_PROFILE_DIR": str(tmp_path)})
    assert out.stdout.startswith("tuner probe ")


def test_probe_without_a_gpu_says_so_cleanly() -> None:
    proc = subprocess.run(tuner_argv("probe", str(H200)), capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and "needs a CUDA GPU" in proc.stderr


def test_a_base_profile_of_the_old_shape_fits_to_the_same_twin() -> None:
    """A base profile written before issue 35 (Humming's W4A8 penalty a field of its own)
    gets the fitted penalty under ``w4a8_penalty`` and validates to the twin the shipped
    base gives."""
    from tuner_sim.profiles import Machine

    old = yaml.safe_load((Path(__file__).parents[1] / "fixtures" / "sim_profiles_old" /
                          "machines" / "h200.yaml").read_text())
    twin, _ = fit(PROBE, old)
    assert "humming_w4a8_penalty" not in twin["efficiency"]
    same = {"calibration": None}
    assert Machine.model_validate(twin).model_copy(update=same) == Machine.model_validate(
        fit(PROBE, BASE)[0]).model_copy(update=same)
