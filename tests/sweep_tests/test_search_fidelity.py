"""``--search-questions``: search trials measure only the first questions of the workload;
the baseline and the finals measure all of them, and the gate still pairs each search
trial with the baseline on the same questions (model-backed runner: instant trials from
the simulator's models; the real path's prompt cut is in tests/trial_tests)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import SPARK
from tests.sweep_tests.model_runner import ModelRunner
from tests.sweep_tests.model_runner import model_sweep
from tuner.space import load_space
from tuner.study import Role
from tuner.study import feasible_best
from tuner.study import summaries
from tuner.study import summarize
from tuner.sweep._base import TrialJob
from tuner.trial import TrialResult


SPACE = load_space(SPARK)


class CountsItsQuestions(ModelRunner):
    """Scores the questions the launch would measure: the workload's, or its first
    ``measure_first``."""

    def __init__(self, **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.asked: dict[int, int] = {}

    def _run(self, job: TrialJob) -> TrialResult:
        n = job.options.measure_first or job.options.workload.questions
        self.asked[job.key] = n
        self.questions = n
        return super()._run(job)


@pytest.mark.parametrize("final_questions", [None, 400])
def test_search_trials_measure_the_first_questions_and_the_finals_all(
        tmp_path: Path, final_questions: int | None) -> None:
    runner = CountsItsQuestions(seed=1)
    study = model_sweep(tmp_path, runner, trials=20, seed=1, search_questions=12,
                        final_questions=final_questions)
    rows = {s.number: s for s in summaries(study) if s.launched}
    full = SPACE.spec.workload.questions
    by_role = {role: [runner.asked[n] for n, s in rows.items() if s.role == role]
               for role in (Role.BASELINE, Role.TRIAL, Role.REMEASURE)}
    assert by_role[Role.BASELINE] == [full]
    assert by_role[Role.TRIAL] and set(by_role[Role.TRIAL]) == {12}
    finals = [s for s in rows.values() if s.role == Role.REMEASURE]
    assert finals
    for s in finals:
        expected = final_questions if (s.final_sample and final_questions) else full
        assert runner.asked[s.number] == expected, s
    # each search trial was gated on its 12 questions against the baseline's same 12
    base = next(s for s in rows.values() if s.role == Role.BASELINE)
    for s in rows.values():
        if s.role == Role.TRIAL and s.per_question:
            assert set(s.per_question) <= set(base.per_question or {})
    assert summarize(feasible_best(study)).role != Role.BASELINE


def test_without_it_every_launch_measures_the_whole_workload(tmp_path: Path) -> None:
    runner = CountsItsQuestions(seed=1)
    model_sweep(tmp_path, runner, trials=12, seed=1)
    assert set(runner.asked.values()) == {SPACE.spec.workload.questions}
