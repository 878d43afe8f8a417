"""The GSM8K accuracy sample a finals launch answers beside a workload that is not GSM8K
(``TrialOptions.accuracy_sample``): real simulator trials. Its questions are scored and
gated, never in a speed figure, and a loss on one kind of question is caught even when the
pooled figure would hide it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import GSM8K_DIR
from tests.conftest import SPARK
from tests.simulator import sim_env
from tuner.engines import make_engine
from tuner.space import load_space
from tuner.trial import TrialOptions
from tuner.trial import TrialResult
from tuner.trial import run_trial


pytestmark = pytest.mark.slow
SPACE = load_space(SPARK)


def _trial(tmp_path: Path, kind: str, faults: list[dict[str, Any]], **opts: Any
           ) -> TrialResult:
    env = sim_env(tmp_path, 1000.0, TUNER_SIM_FAULTS=json.dumps(faults))
    engine = make_engine("sim:fork", sim_env=env)
    wl = SPACE.spec.workload.model_copy(update={
        "kind": "mix" if kind == "mix" else kind, "questions": 12, "max_tokens": 512,
        "mix": {"code": 0.5, "chat": 0.5} if kind == "mix" else None})
    options = TrialOptions(workdir=tmp_path / "logs", workload=wl, gsm8k=str(GSM8K_DIR),
                           startup_timeout_s=60, **opts)
    return run_trial(SPACE, engine, engine.resolve(SPACE, {}), options)


def test_a_chat_launch_answers_the_gsm8k_sample_after_its_workload_in_no_speed_figure(
        tmp_path: Path) -> None:
    plain = _trial(tmp_path / "plain", "chat", [])
    beside = _trial(tmp_path / "beside", "chat", [], accuracy_sample=40)
    assert plain.ok and beside.ok, (plain.message, beside.message)
    p, b = plain.aggregates, beside.aggregates
    assert p is not None and b is not None
    assert p.per_question is None and p.accuracy is None     # chat has no reference answers
    assert len(beside.requests) == len(plain.requests) == b.requests == 12   # the workload's
    assert len(beside.sample_requests) == 40
    assert all(r.prompt_id.startswith("sample:") and r.content == "math"
               for r in beside.sample_requests)
    assert b.per_question is not None and len(b.per_question) == 40 == b.scored
    assert b.sample is not None and b.sample.scored == 40 and b.sample.tpot_ms is None
    assert b.accuracy == b.sample.accuracy and b.accuracy_ci95 is not None
    # TPOT is the chat requests' alone (token-weighted over the workload's records)
    from tuner.trial._stats import token_weighted_tpot

    got = token_weighted_tpot(beside.requests)
    assert got is not None and b.tpot_ms == got[0]
    assert beside.timings.sample_s and beside.timings.sample_s > 0


def test_a_math_only_loss_is_caught_by_the_sample_beside_a_code_mix(tmp_path: Path) -> None:
    """A numerics change that costs GSM8K accuracy only: the mix's own scored requests
    (code) cannot see it; the sample beside it does, and the gate names where."""
    base = _trial(tmp_path / "base", "mix", [], accuracy_sample=200)
    assert base.ok, base.message
    assert base.aggregates is not None and base.aggregates.per_question is not None
    lossy = _trial(tmp_path / "lossy", "mix",
                   [{"kind": "accuracy_drop", "arg": 6, "content": "math"}],
                   accuracy_sample=200, baseline_per_question=base.aggregates.per_question)
    assert lossy.ok, lossy.message
    w = lossy.aggregates
    assert w is not None and w.per_question is not None
    code = {q for q in w.per_question if q.startswith("HumanEval-")}
    assert code and {q: w.per_question[q] for q in code} == {
        q: base.aggregates.per_question[q] for q in code}            # code untouched
    rule = next(r for r in lossy.gate.rules if r.rule == "accuracy_drop")  # type: ignore[union-attr]
    assert rule.fired, rule.detail
    assert "GSM8K final sample" in rule.detail and "code" in rule.detail
