"""The final accuracy sample: a 3-point drop the screening sample cannot see is caught on
the finals' larger sample, and the export never takes that configuration
(model-backed runner: instant trials from the simulator's models)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests.sweep_tests.model_runner import ModelRunner
from tests.sweep_tests.model_runner import model_sweep
from tuner.study import Role
from tuner.study import feasible_best
from tuner.study import summaries
from tuner.study import summarize
from tuner.study.pooled import feasible_front
from tuner.sweep._base import TrialJob
from tuner.trial import TrialResult
from tuner.trial._gate import evaluate
from tuner.trial._stats import Interval


def _u(question: str) -> float:
    """A question's fixed place in [0, 1): whether it is answered right depends only on
    it and on the numerics, as in the simulator's oracle."""
    return int(hashlib.sha256(question.encode()).hexdigest()[:8], 16) / 2**32


class DropsOnFp8Head(ModelRunner):
    """Every configuration answers the questions with u < 0.90 right; those with an FP8
    LM head (the fastest family) lose the ones in [0.87, 0.90): a 3-point drop."""

    def lossy(self, config: dict) -> bool:
        return config.get("lm_head") == "fp8"

    def _run(self, job: TrialJob) -> TrialResult:
        res = super()._run(job)
        a = res.aggregates
        if not res.ok or a is None:
            return res
        bar = 0.87 if self.lossy(job.config.as_dict()) else 0.90
        n = job.options.workload.questions
        per_q = {f"test-{i}": _u(f"test-{i}") < bar for i in range(n)}
        k = sum(per_q.values())
        res.aggregates = a.model_copy(update={
            "per_question": per_q, "correct": k, "scored": n, "requests": n,
            "accuracy": k / n, "accuracy_ci95": Interval(low=k / n, high=k / n)})
        res.gate = evaluate(res.aggregates, speculative=res.plan.speculative,
                            cfg=job.space.spec.gate,
                            baseline_per_question=job.options.baseline_per_question)
        return res


@pytest.mark.parametrize("seed", [0, 1])
def test_the_screening_misses_the_drop_and_the_final_sample_catches_it(
        tmp_path: Path, seed: int) -> None:
    screened = model_sweep(tmp_path / "a", DropsOnFp8Head(seed=seed), trials=30, seed=seed)
    pick = summarize(feasible_best(screened))
    assert pick.config["lm_head"] == "fp8", "30 questions cannot see 3 points"

    final = model_sweep(tmp_path / "b", DropsOnFp8Head(seed=seed), trials=30, seed=seed,
                        final_questions=1000)
    rows = summaries(final)
    pick = summarize(feasible_best(final))
    assert pick.config["lm_head"] != "fp8", pick.config
    # a refusal holds for every configuration with the same numerics (the speculative
    # knobs are lossless), so the finals reach the next family instead of the baseline
    assert pick.role != Role.BASELINE
    base = next(t for t in rows if t.role == Role.BASELINE)
    on_final = [t for t in rows if t.final_sample]
    assert any(t.remeasure_of == base.number for t in on_final)   # the baseline, on 1000
    gated = [t for t in on_final if t.remeasure_of != base.number and t.gate]
    assert gated and all(len(t.per_question or {}) == 1000 for t in gated)
    assert all("accuracy_drop" in t.gate for t in gated)
    front = {t.number for t in feasible_front(final)}
    assert not front & {t.remeasure_of for t in gated}      # gated on 1000: off the front
    assert sum(t.launched for t in rows) == 30                     # within the budget
