"""The simulator's HumanEval replies, run against the real tests in the tuner's sandbox:
right exactly when the numerics model says, at the configured rate, paired across launches
like GSM8K's answers; an injected drop on the code class leaves math alone."""

from __future__ import annotations

import json
import math

import pytest

from tuner.space import Workload as Settings
from tuner.workloads import Prompt
from tuner.workloads import Sampling
from tuner.workloads import humaneval
from tuner.workloads import make_workload
from tuner_sim.gsm8k import is_correct
from tuner_sim.humaneval import HumanEvalOracle
from tuner_sim.humaneval import reply_tokens
from tuner_sim.profiles import load_model_for_path
from tuner_sim.server import Faults


LING = load_model_for_path("inclusionAI/Ling-3.0-flash-fp4")
ORACLE = HumanEvalOracle()
BASE = "flashinfer_mxfp4|a16|fp32|plain"


def _verdicts(signature: str, accuracy: float, seed: int = 0) -> dict[str, bool]:
    h = LING.humaneval
    return {t: is_correct(t, signature, seed, accuracy, h.numerics_flip_rate)
            for t in humaneval.problems()}


def test_a_reply_passes_the_real_tests_exactly_when_the_model_says_it_is_right() -> None:
    """Every one of the 164 stubs, found in the code workload's own prompt, answered right
    and answered wrong: the tuner's sandbox agrees each time."""
    code = make_workload(Settings(kind="code", questions=164))
    items = []
    for p in code.prepare().measured:
        task = ORACLE.find(p.text or "")
        assert task is not None and task.task_id == p.answer
        for correct in (True, False):
            items.append((p, "".join(reply_tokens(task, correct, 300)), correct))
    got = code.score_all([(p, text) for p, text, _ in items])
    assert [c for c, _ in got] == [want for *_, want in items]


def test_a_reply_cut_by_max_tokens_fails() -> None:
    task = ORACLE.find(humaneval.prompt_text(humaneval.problems()["HumanEval/0"]))
    assert task is not None
    prompt = Prompt("HumanEval-0", Sampling(max_new_tokens=40), answer="HumanEval/0")
    code = make_workload(Settings(kind="code", questions=1))
    assert code.score(prompt, "".join(reply_tokens(task, True, 300)))[0] is True
    assert code.score(prompt, "".join(reply_tokens(task, True, 300)[:40]))[0] is False


def test_pass_at_1_is_the_configured_rate_within_sampling_error() -> None:
    acc = LING.humaneval.accuracy
    got = _verdicts(BASE, acc)
    se = math.sqrt(acc * (1 - acc) / len(got))
    assert abs(sum(got.values()) / len(got) - acc) < 3 * se


def test_lossless_numerics_agree_on_most_tasks_and_a_launch_repeats_itself() -> None:
    acc = LING.humaneval.accuracy
    a, b = _verdicts(BASE, acc), _verdicts("humming|a16|fp8|spec", acc)
    assert a == _verdicts(BASE, acc)                       # deterministic: paired trials
    disagree = sum(a[t] != b[t] for t in a)
    assert disagree <= 0.08 * len(a)
    assert _verdicts(BASE, acc, seed=1) != a               # the seed redraws


def test_a_drop_only_takes_tasks_away_from_the_same_numerics() -> None:
    """``accuracy_drop`` lowers the threshold the same per-task draw is compared with: a
    lossy launch fails a superset of the tasks the baseline fails, nothing else moves."""
    acc = LING.humaneval.accuracy
    base, lossy = _verdicts(BASE, acc), _verdicts(BASE, acc - 0.10)
    assert {t for t in lossy if lossy[t]} < {t for t in base if base[t]}
    assert 8 <= sum(base.values()) - sum(lossy.values()) <= 28


def test_accuracy_drop_faults_name_their_class_and_add_up() -> None:
    faults = Faults({"TUNER_SIM_FAULTS": json.dumps([
        {"kind": "accuracy_drop", "arg": 5, "content": "code",
         "when": {"SGLANG_ENABLE_FP8_LM_HEAD": "1"}},
        {"kind": "accuracy_drop", "arg": 2, "content": ["code", "math"]},
        {"kind": "accuracy_drop", "arg": 1}]),              # no content: math, as before
        "SGLANG_ENABLE_FP8_LM_HEAD": "1"})
    assert faults.accuracy_drops({}) == {"code": 7.0, "math": 3.0}
    plain = Faults({"TUNER_SIM_FAULTS": faults.env["TUNER_SIM_FAULTS"]})
    assert plain.accuracy_drops({}) == {"code": 2.0, "math": 3.0}
    with pytest.raises(SystemExit, match="content"):       # chat has no right answer
        Faults({"TUNER_SIM_FAULTS": '[{"kind": "accuracy_drop", "arg": 1, "content": "chat"}]'})
