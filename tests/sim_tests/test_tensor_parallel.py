"""``--tp-size N`` on the simulator (tuner_sim/parallel.py, docs/simulator.md "Tensor
parallelism"): rank 0 holds 1/N of the weights, KV and state, and pays the all-reduces."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO
from tests.sim_tests.test_derived_twin import _args
from tuner.engines import make_engine
from tuner.trial._server import free_port
from tuner_sim.args import LaunchError
from tuner_sim.memory import plan_memory
from tuner_sim.parallel import ALLREDUCE_US
from tuner_sim.parallel import ALLREDUCES_PER_LAYER
from tuner_sim.parallel import per_rank
from tuner_sim.perf import PerfModel
from tuner_sim.perf import Settings
from tuner_sim.perf import Workload
from tuner_sim.profiles import load_machine
from tuner_sim.profiles import load_model_for_path


CONFIGS = REPO / "tests" / "fixtures" / "model_configs"
H200 = load_machine("h200")
DEEPSEEK = load_model_for_path(str(CONFIGS / "deepseek-v3"))     # ~670 GB: 8 GPUs needed


def test_one_rank_holds_an_nth_of_the_model_and_pays_two_allreduces_per_layer() -> None:
    model, machine = per_rank(DEEPSEEK, H200, 8)
    assert model.weights_gb == pytest.approx(DEEPSEEK.weights_gb / 8, rel=1e-6)
    assert model.kv_bytes_per_token == DEEPSEEK.kv_bytes_per_token // 8
    mtp, whole = model.drafts["NEXTN"], DEEPSEEK.drafts["NEXTN"]
    assert mtp.resident_gb == pytest.approx(whole.resident_gb / 8)
    added = DEEPSEEK.layers * ALLREDUCES_PER_LAYER * ALLREDUCE_US / 1000
    assert machine.step_overhead_ms == pytest.approx(H200.step_overhead_ms + added)
    assert per_rank(DEEPSEEK, H200, 1) == (DEEPSEEK, H200)


def test_eight_ranks_fit_what_one_cannot_and_decode_faster() -> None:
    with pytest.raises(LaunchError):
        plan_memory(H200, DEEPSEEK, _args(0.9))
    model, machine = per_rank(DEEPSEEK, H200, 8)
    assert plan_memory(machine, model, _args(0.9)).max_total_num_tokens > 0
    work, s = Workload("sampled", 1500, "math"), Settings(moe_backend="auto", lm_head="bf16")
    two = PerfModel(*reversed(per_rank(DEEPSEEK, H200, 2)), s).expected_tpot_ms(work)
    eight = PerfModel(machine, model, s).expected_tpot_ms(work)
    assert eight < two            # a quarter of the bytes each, the all-reduces too few to
    assert eight > two / 4        # undo it; never the full 4x (fixed costs do not split)


def test_a_tp8_launch_starts_where_one_gpu_runs_out_of_memory(tmp_path) -> None:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("TUNER_SIM_")},
           "TUNER_SIM_MACHINE": "h200", "TUNER_SIM_TIME_SCALE": "500"}
    out = {}
    for tp in (1, 8):
        proc = subprocess.Popen(
            [sys.executable, "-m", "tuner_sim.fork", "serve", "--model-path",
             str(CONFIGS / "deepseek-v3"), "--port", str(free_port()), "--tp-size", str(tp),
             "--mem-fraction-static", "0.9"], stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, env=env, cwd=REPO)
        try:
            for line in proc.stdout or []:
                if "The server is fired up" in line or "Error" in line:
                    out[tp] = line
                    break
        finally:
            proc.kill()
            proc.communicate(timeout=20)
    assert make_engine("sglang").protocol().classify_exit(out[1]) == "oom"
    assert "fired up" in out[8]
