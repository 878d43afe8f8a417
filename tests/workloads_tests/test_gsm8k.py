from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.conftest import GSM8K_DIR
from tuner.errors import UserError
from tuner.workloads.gsm8k import extract_final_number
from tuner.workloads.gsm8k import few_shot_prefix
from tuner.workloads.gsm8k import is_correct
from tuner.workloads.gsm8k import load_split
from tuner.workloads.gsm8k import normalise_number
from tuner.workloads.gsm8k import subset


TEST = load_split(GSM8K_DIR, "test")
TRAIN = load_split(GSM8K_DIR, "train")


def test_every_reference_solution_scores_correct() -> None:
    assert len(TEST) == 1319
    assert all(is_correct(p.solution, p) for p in TEST)


def test_reference_reasoning_with_a_plain_final_sentence_scores_correct() -> None:
    for p in TEST:
        body = p.solution.rsplit("####", 1)[0]
        assert is_correct(f"{body}\nThe answer is {p.solution.rsplit('####', 1)[1].strip()}.",
                          p), p.index


def test_a_wrong_final_number_scores_wrong() -> None:
    p = TEST[0]
    assert not is_correct(p.solution.rsplit("####", 1)[0] + " The answer is 1e9", p)
    assert not is_correct("no number at all", p)


@pytest.mark.parametrize(("text", "expected"), [
    ("The answer is $1,234.", "1234"), ("#### 18", "18"), ("so 3.50 dollars", "3.5"),
    ("-7 degrees", "-7"), ("it is 5, 6 or 7", "7"), ("x = 12.0.", "12"), ("none", None),
])
def test_extract_final_number(text: str, expected: str | None) -> None:
    assert extract_final_number(text) == expected


def test_normalise_number() -> None:
    assert normalise_number("1,000") == "1000" and normalise_number("abc") is None


def test_subset_is_seeded_and_stable() -> None:
    a, b = subset(TEST, 50, seed=1), subset(TEST, 50, seed=1)
    assert a == b and len(a) == 50 and subset(TEST, 50, seed=2) != a
    assert [p.index for p in a] == sorted(p.index for p in a)


def test_exemplars_come_from_train_never_from_scored_questions() -> None:
    prefix = few_shot_prefix(TRAIN, 5, seed=0)
    scored = {p.question for p in subset(TEST, 200, seed=0)}
    assert prefix.count("Question:") == 5
    assert not any(q in prefix for q in scored)
    assert any(p.question in prefix for p in random.Random(0).sample(TRAIN, 0) + TRAIN)


def test_missing_data_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="GSM8K test split not found"):
        load_split(tmp_path, "test")
    bad = tmp_path / "test.jsonl"
    bad.write_text('{"question": "q", "answer": "no final"}\n')
    with pytest.raises(UserError, match="not a GSM8K record"):
        load_split(tmp_path, "test")
