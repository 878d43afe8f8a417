"""The simulator's GSM8K answers, scored by the tuner's scorer, hit the configured accuracy."""

from __future__ import annotations

import math

from tests.conftest import GSM8K_DIR
from tuner.workloads.gsm8k import is_correct as score
from tuner.workloads.gsm8k import load_split
from tuner_sim.gsm8k import Gsm8kOracle
from tuner_sim.gsm8k import answer_tokens
from tuner_sim.gsm8k import is_correct
from tuner_sim.gsm8k import output_length
from tuner_sim.profiles import load_model_for_path


LING = load_model_for_path("inclusionAI/Ling-3.0-flash-fp4")
TEST = load_split(GSM8K_DIR, "test")
ORACLE = Gsm8kOracle(str(GSM8K_DIR))


def _run(signature: str, accuracy: float, seed: int = 0, max_tokens: int = 32768
         ) -> list[bool]:
    out = []
    for p in TEST:
        qid, reasoning, final = ORACLE.find(f"Question: {p.question}\nAnswer:")  # type: ignore[misc]
        ok = is_correct(qid, signature, seed, accuracy, LING.gsm8k.numerics_flip_rate)
        n = output_length(qid, seed, LING.gsm8k.output_tokens_median,
                          LING.gsm8k.output_tokens_sigma, signature)
        text = " ".join(answer_tokens(reasoning, final, ok, n, qid)[:max_tokens])
        out.append(score(text, p))
    return out


def test_configured_accuracy_within_sampling_error_on_1319_questions() -> None:
    acc = LING.gsm8k.accuracy
    got = _run("flashinfer_mxfp4|a16|fp32|plain", acc)
    se = math.sqrt(acc * (1 - acc) / len(got))
    assert abs(sum(got) / len(got) - acc) < 3 * se


def test_lossless_configs_agree_on_almost_every_question_and_are_deterministic() -> None:
    acc = LING.gsm8k.accuracy
    a = _run("flashinfer_mxfp4|a16|fp32|plain", acc)
    b = _run("humming|a16|fp8|spec", acc)
    assert a == _run("flashinfer_mxfp4|a16|fp32|plain", acc)
    disagree = sum(x != y for x, y in zip(a, b, strict=True))
    assert 0 < disagree < 0.03 * len(a)


def test_truncation_by_max_tokens_costs_accuracy() -> None:
    acc = LING.gsm8k.accuracy
    full = sum(_run("x", acc))
    short = sum(_run("x", acc, max_tokens=150))
    assert short < full - 100


def test_output_lengths_follow_the_published_shape() -> None:
    lengths = sorted(output_length(i, 0, LING.gsm8k.output_tokens_median,
                                   LING.gsm8k.output_tokens_sigma, "s") for i in range(1319))
    median, mean = lengths[len(lengths) // 2], sum(lengths) / len(lengths)
    assert 270 < median < 350 and 480 < mean < 660
    assert 1500 < lengths[int(0.95 * len(lengths))] < 2400
