"""The code workload's accuracy through real trials: the simulator's streamed replies, the
sandbox's verdicts, pass@1 with its interval, and the paired gate against a baseline."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import GSM8K_DIR
from tests.conftest import SPARK
from tests.conftest import tuner_argv
from tests.simulator import sim_env
from tuner.engines import make_engine
from tuner.space import load_space
from tuner.trial import TrialOptions
from tuner.trial import TrialResult
from tuner.trial import run_trial


pytestmark = pytest.mark.slow
SPACE = load_space(SPARK)


def cli_trial(tmp_path: Path, name: str, *extra: str) -> tuple[int, TrialResult, str]:
    out = tmp_path / f"{name}.json"
    proc = subprocess.run(tuner_argv(
        "trial", str(SPARK), "--engine", "sim", "--workload", "code", "--questions", "30",
        "--time-scale", "200", "--workdir", str(tmp_path / "logs"), "--out", str(out),
        *extra), capture_output=True, text=True, timeout=300,
        env={**os.environ, "COLUMNS": "200"})          # the table on one line a row
    return proc.returncode, TrialResult.model_validate_json(out.read_text()), proc.stdout


def test_a_code_trial_reports_pass_at_1_with_its_interval_and_gates_against_a_baseline(
        tmp_path: Path) -> None:
    rc, base, text = cli_trial(tmp_path, "base")
    assert rc == 0, text
    a = base.aggregates
    assert a is not None and a.scored == 30 and a.accuracy_ci95 is not None
    assert a.per_question is not None and all(q.startswith("HumanEval-")
                                              for q in a.per_question)
    assert 0 < a.correct < 30                     # some pass, some fail (seeded: fixed)
    for r in base.requests:                       # every verdict is the sandbox's
        assert (r.answer == "passed") == r.correct, r.answer
        assert r.correct or "AssertionError" in (r.answer or ""), r.answer   # intact code
    assert base.timings.scoring_s and base.timings.scoring_s > 0     # recorded, apart
    assert "HumanEval pass@1" in text and f"({a.correct}/30)" in text and "Wilson 95%" in text
    rc, again, text = cli_trial(tmp_path, "again", "--baseline", str(tmp_path / "base.json"))
    assert rc == 0, text
    assert again.aggregates is not None and again.aggregates.per_question == a.per_question
    rule = next(r for r in again.gate.rules if r.rule == "accuracy_drop")  # type: ignore[union-attr]
    assert not rule.fired and "on 30 paired questions" in rule.detail


def mix_trial(tmp_path: Path, faults: list[dict[str, Any]], **opts: Any) -> TrialResult:
    env = sim_env(tmp_path, 1000.0, TUNER_SIM_FAULTS=json.dumps(faults))
    engine = make_engine("sim:fork", sim_env=env)
    wl = SPACE.spec.workload.model_copy(update={
        "kind": "mix", "mix": {"math": 1, "code": 1}, "questions": 200, "max_tokens": 1024})
    options = TrialOptions(workdir=tmp_path / "logs", workload=wl, gsm8k=str(GSM8K_DIR),
                           startup_timeout_s=60, **opts)
    return run_trial(SPACE, engine, engine.resolve(SPACE, {}), options)


def test_a_stand_in_losing_accuracy_on_code_only_is_caught_and_math_is_untouched(
        tmp_path: Path) -> None:
    """The simulator's code-only ``accuracy_drop``: the same launch settings with and
    without it answer every math question alike, and lose only code tasks; the gate sees
    the loss."""
    base = mix_trial(tmp_path / "base", [])
    assert base.ok, base.message
    lossy = mix_trial(tmp_path / "lossy", [{"kind": "accuracy_drop", "arg": 25,
                                            "content": "code"}],
                      baseline_per_question=base.aggregates.per_question)  # type: ignore[union-attr]
    assert lossy.ok, lossy.message
    b, w = base.aggregates, lossy.aggregates
    assert b is not None and w is not None and b.per_question and w.per_question
    math_ids = {q for q in b.per_question if q.startswith("test-")}
    code_ids = {q for q in b.per_question if q.startswith("HumanEval-")}
    assert len(math_ids) == len(code_ids) == 100
    assert {q: w.per_question[q] for q in math_ids} == {q: b.per_question[q] for q in math_ids}
    lost = {q for q in code_ids if b.per_question[q] and not w.per_question[q]}
    gained = {q for q in code_ids if w.per_question[q] and not b.per_question[q]}
    assert gained == set() and len(lost) >= 10
    assert b.per_class is not None and w.per_class is not None
    assert w.per_class["math"].accuracy == b.per_class["math"].accuracy
    assert w.per_class["code"].accuracy < b.per_class["code"].accuracy  # type: ignore[operator]
    assert [r.rule for r in lossy.gate.fired()] == ["accuracy_drop"]  # type: ignore[union-attr]
