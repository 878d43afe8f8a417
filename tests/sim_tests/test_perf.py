"""The performance model's structure and its calibration against the published tables."""

from __future__ import annotations

import pytest

from tuner_sim.calibrate import ALL_THREE
from tuner_sim.calibrate import rows
from tuner_sim.calibrate import spark_rows
from tuner_sim.perf import PerfModel
from tuner_sim.perf import Settings
from tuner_sim.perf import Workload
from tuner_sim.profiles import load_machine
from tuner_sim.profiles import load_model_for_path


SPARK = load_machine("dgx-spark")
LING = load_model_for_path("inclusionAI/Ling-3.0-flash-fp4")
GSM = Workload("sampled", 1600)


def pm(**kw: object) -> PerfModel:
    return PerfModel(SPARK, LING, Settings(**kw))  # type: ignore[arg-type]


def test_every_checked_published_figure_within_5_percent() -> None:
    table = rows()
    assert len([r for r in table if r.check == "within5"]) >= 18
    bad = [(r.metric, round(r.error_pct, 1)) for r in table if r.ok is False]
    assert bad == []


def test_every_spark_row_by_content_within_8_percent_and_the_shape_it_implies() -> None:
    table = spark_rows()
    tpots = [r for r in table if r.check == "within8" and "TPOT" in r.metric]
    assert len(tpots) == 10                   # 4 profiles x code, prose + 2 reruns
    bad = [(r.metric, round(r.error_pct, 1)) for r in table if r.ok is False]
    assert bad == []
    assert spark_rows("h200") == []


def test_the_flashinfer_floor_keeps_the_batch_1_step_and_cheapens_a_wide_verify() -> None:
    floor = SPARK.moe_layer_overhead_us["flashinfer_mxfp4"]
    flat = SPARK.model_copy(update={"moe_layer_overhead_us": {}, "efficiency": (
        SPARK.efficiency.model_copy(update={"moe": {**SPARK.efficiency.moe,
                                                    "flashinfer_mxfp4": 0.534}}))})
    assert floor > 0
    with_floor = PerfModel(SPARK, LING, Settings())
    without = PerfModel(flat, LING, Settings())
    assert with_floor.forward_ms(1, 1600, 0.0) == pytest.approx(
        without.forward_ms(1, 1600, 0.0), rel=0.01)
    assert with_floor.forward_ms(9, 1600, 0.0) < 0.9 * without.forward_ms(9, 1600, 0.0)


def test_distinct_experts_one_token_reads_8_four_up_to_32() -> None:
    m = pm()
    assert m.distinct_experts(1, 0.0) == pytest.approx(8.0)
    assert 30.0 < m.distinct_experts(4, 0.0) <= 32.0
    assert m.distinct_experts(4, 0.9) < m.distinct_experts(4, 0.0)


def test_verify_cost_ratio_on_reasoning_traffic_is_near_published_2_26() -> None:
    m = pm(**ALL_THREE.__dict__)
    ratio = m.round_ms(1600, 0.0) / pm(moe_backend="humming", lm_head="fp8").forward_ms(
        1, 1600, 0.0)
    assert 2.0 < ratio < 2.5


def test_each_optimisation_helps_alone_and_the_trap_hurts() -> None:
    base = pm().expected_tpot_ms(GSM)
    assert pm(moe_backend="humming").expected_tpot_ms(GSM) < base
    assert pm(lm_head="fp8").expected_tpot_ms(GSM) < base
    assert pm(lm_head="bf16").expected_tpot_ms(GSM) < base
    trap = pm(**{**ALL_THREE.__dict__, "draft_lm_head_ok": False})
    assert trap.expected_accept_length("sampled") == 1.0
    assert trap.expected_tpot_ms(GSM) > base


def test_acceptance_grows_with_steps_and_saturates() -> None:
    lengths = [pm(speculative=True, steps=s, draft_tokens=s + 1).expected_accept_length(
        "sampled") for s in range(1, 6)]
    assert lengths == sorted(lengths)
    assert lengths[-1] - lengths[-2] < lengths[1] - lengths[0]
    assert pm(speculative=True).expected_accept_length("greedy") > lengths[2]


def test_w4a8_is_not_faster_at_batch_1() -> None:
    assert pm(moe_backend="humming", humming_w4a8=True).expected_tpot_ms(GSM) >= pm(
        moe_backend="humming").expected_tpot_ms(GSM)
