"""The finals with load regimes (tuner/sweep/_policy.py): a regime's pick measured once is
launched once more before the finals race, so its SLA verdict rests on two launches."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import SPARK
from tests.study_tests.test_regimes import _g
from tests.study_tests.test_regimes import _t
from tuner.space import load_space
from tuner.study import Role
from tuner.study import TrialSummary
from tuner.study import answer_of
from tuner.study import locate
from tuner.sweep import Remeasure
from tuner.sweep._policy import SearchPolicy
from tuner.sweep._settings import SweepSettings


class _Sweep:
    """What the policy reads of a study: its trials, its answer."""

    def __init__(self, rows: list[TrialSummary]) -> None:
        self.rows = rows

    def trials(self) -> list[TrialSummary]:
        return self.rows

    def answer(self, rows: list[TrialSummary] | None = None) -> Any:
        return answer_of(rows if rows is not None else self.rows, with_accuracy=True)


def _policy(tmp: Path, regimes: tuple[str, ...]) -> SearchPolicy:
    settings = SweepSettings(study_name="s", location=locate(str(tmp / "s.db"), "s"),
                             trials=30, staged=False)
    return SearchPolicy(load_space(SPARK), settings, questions=10, scored=True,
                        canonical=lambda v: (v, None), regimes=regimes)


def test_a_regime_pick_measured_once_is_launched_again_once(tmp_path: Path) -> None:
    rows = [_t(0, _g(0.1), role=Role.BASELINE), _t(1, _g(0.5)), _t(2, _g(0.3))]
    sweep = _Sweep(rows)
    policy = _policy(tmp_path, regimes=("sixteen",))
    assert policy._regime_confirmation(sweep) == Remeasure(  # type: ignore[arg-type]
        1, serves="sixteen")
    # once its second launch is queued (or done), no more: the finals race goes on
    sweep.rows = [*rows, TrialSummary(3, "RUNNING", Role.REMEASURE, remeasure_of=1,
                                      config=rows[1].config)]
    assert policy._regime_confirmation(sweep) is None                # type: ignore[arg-type]
    assert _policy(tmp_path, regimes=())._regime_confirmation(
        _Sweep(rows)) is None                                        # type: ignore[arg-type]
