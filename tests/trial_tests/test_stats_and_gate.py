from __future__ import annotations

import math

import pytest

from tuner.space._schema import Gate
from tuner.trial import RequestRecord
from tuner.trial._gate import evaluate
from tuner.trial._gate import paired_accuracy
from tuner.trial._stats import aggregate
from tuner.trial._stats import percentile
from tuner.trial._stats import token_weighted_tpot


def rec(i: int, n: int, decode_ms_per_tok: float, *, ttft: float = 0.2, verify: int | None = None,
        correct: bool | None = None, content: str | None = None) -> RequestRecord:
    e2e = ttft + (n - 1) * decode_ms_per_tok / 1000
    return RequestRecord(prompt_id=f"q{i}", prompt_tokens=100, completion_tokens=n,
                         ttft_s=ttft, e2e_s=e2e,
                         tpot_ms=(e2e - ttft) / (n - 1) * 1000 if n > 1 else None,
                         verify_rounds=verify, accept_length=n / verify if verify else None,
                         correct=correct, content=content)


def test_tpot_is_token_weighted_not_a_mean_of_request_tpots() -> None:
    records = [rec(0, 1001, 10.0), rec(1, 11, 50.0)]
    tpot, _ = token_weighted_tpot(records)  # type: ignore[misc]
    assert tpot == pytest.approx((1000 * 10 + 10 * 50) / 1010)
    assert tpot != pytest.approx((10 + 50) / 2)


def test_single_token_requests_do_not_count_toward_tpot() -> None:
    agg = aggregate([rec(0, 1, 0.0), rec(1, 101, 20.0), rec(2, 201, 20.0)])
    assert agg.tpot_ms == pytest.approx(20.0)
    assert agg.tpot_ci95 is not None and agg.tpot_ci95.low <= 20.0 <= agg.tpot_ci95.high


def test_tpot_interval_widens_with_spread() -> None:
    tight = aggregate([rec(i, 101, 20 + 0.01 * i) for i in range(10)]).tpot_ci95
    wide = aggregate([rec(i, 101, 20 + 2 * i) for i in range(10)]).tpot_ci95
    assert tight is not None and wide is not None
    assert (wide.high - wide.low) > 50 * (tight.high - tight.low)


def test_accept_length_is_tokens_over_verify_rounds() -> None:
    agg = aggregate([rec(0, 100, 10, verify=50), rec(1, 300, 10, verify=100)])
    assert agg.accept_length == pytest.approx(400 / 150)


def test_accuracy_with_wilson_interval_and_vector() -> None:
    agg = aggregate([rec(i, 50, 10, correct=i != 3) for i in range(20)])
    assert agg.accuracy == pytest.approx(0.95) and agg.correct == 19 and agg.scored == 20
    assert agg.accuracy_ci95 is not None
    assert agg.accuracy_ci95.low == pytest.approx(0.7639, abs=1e-3)   # Wilson, n=20, k=19
    assert agg.per_question is not None and agg.per_question["q3"] is False


def test_percentile() -> None:
    assert percentile([1, 2, 3, 4, 5], 50) == 3 and percentile([1, 2], 95) == pytest.approx(1.95)


def test_collapse_gate_fires_below_the_floor_only_with_speculation() -> None:
    agg = aggregate([rec(0, 100, 10, verify=99)])
    v = evaluate(agg, speculative=True, cfg=Gate())
    assert not v.passed and v.fired()[0].rule == "collapse"
    assert v.constraints["accept_length_floor"] > 0
    ok = evaluate(aggregate([rec(0, 100, 10, verify=40)]), speculative=True, cfg=Gate())
    assert ok.passed and ok.constraints["accept_length_floor"] < 0
    off = evaluate(agg, speculative=False, cfg=Gate())
    assert off.passed and off.constraints["accept_length_floor"] == -1.0


def test_collapse_relative_to_a_reference() -> None:
    agg = aggregate([rec(0, 100, 10, verify=70)])          # 1.43 > floor 1.2
    assert evaluate(agg, speculative=True, cfg=Gate()).passed
    v = evaluate(agg, speculative=True, cfg=Gate(), reference_accept_length=3.0)
    assert not v.passed                                    # below 50% of 3.0


def test_mcnemar_exact_matches_scipy_reference() -> None:
    base = {f"q{i}": True for i in range(100)}
    trial = {f"q{i}": i >= 10 for i in range(100)}         # 10 losses, 0 gains
    pa = paired_accuracy(base, trial)
    assert (pa.base_only, pa.trial_only, pa.drop_pp) == (10, 0, 10.0)
    assert pa.p_two_sided == pytest.approx(2 * 0.5**10)
    assert pa.p_drop == pytest.approx(0.5**10)


def test_accuracy_gate_needs_a_significant_drop_beyond_tolerance() -> None:
    base = {f"q{i}": True for i in range(100)}
    noisy = {f"q{i}": i not in (1, 2) for i in range(100)}     # -2 pp, p = 0.25
    lossy = {f"q{i}": i >= 10 for i in range(100)}             # -10 pp, p < 0.001

    def verdict(per_q: dict[str, bool]):
        agg = aggregate([rec(int(q[1:]), 50, 10, correct=c) for q, c in per_q.items()])
        return evaluate(agg, speculative=False, cfg=Gate(), baseline_per_question=base)

    assert verdict(noisy).passed and verdict(noisy).constraints["accuracy_drop"] <= 0
    v = verdict(lossy)
    assert not v.passed and v.fired()[0].rule == "accuracy_drop"
    assert v.constraints["accuracy_drop"] == pytest.approx(9.0)
    assert math.isfinite(v.rules[-1].value or 0)


def test_a_mix_objective_weights_each_class_tpot_by_its_share_not_by_tokens() -> None:
    # code: many long fast requests; chat: few short slow ones. Token weighting would let
    # code's tokens swamp chat; the mix objective gives each class its share.
    records = ([rec(i, 1001, 10.0 + 0.1 * i, content="code") for i in range(6)]
               + [rec(10 + i, 101, 30.0 + 0.1 * i, content="chat") for i in range(4)])
    agg = aggregate(records, {"code": 0.5, "chat": 0.5})
    code, chat = agg.per_class["code"], agg.per_class["chat"]  # type: ignore[index]
    assert agg.tpot_basis == "mix"
    assert agg.tpot_ms == pytest.approx(0.5 * code.tpot_ms + 0.5 * chat.tpot_ms)  # type: ignore[operator]
    plain = aggregate(records)
    assert plain.tpot_ms < agg.tpot_ms                   # token-weighted leans to code
    assert agg.tpot_ci95 is not None and agg.tpot_ci95.low < agg.tpot_ms < agg.tpot_ci95.high
    assert code.share == 0.5 and plain.per_class["code"].share is None  # type: ignore[index]


def test_a_class_missing_from_the_first_questions_leaves_the_others_renormalised() -> None:
    records = [rec(i, 101, 20.0 + 0.1 * i, content="code") for i in range(3)]
    agg = aggregate(records, {"code": 0.25, "chat": 0.75})
    assert agg.tpot_ms == pytest.approx(aggregate(records).tpot_ms)
