"""A load regime's own sampler (tuner/study/_regime_sampler.py): TPE fed from the same
launches, learning the regime's goodput within its SLA, while the study's sampler learns
batch 1; and where the budget went (tuner/report/_budget.py)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import optuna
import pytest

from tuner.report._budget import budget_split
from tuner.study import Role
from tuner.study import TrialSummary
from tuner.study._regime_sampler import RegimeSamplers
from tuner.study._regime_sampler import in_regime
from tuner.study._regime_sampler import sla_slack
from tuner.study.samplers import make_sampler


SLA = {"p95_tpot_ms": 60.0}
X = optuna.distributions.CategoricalDistribution([0, 1, 2, 3, 4, 5])
Y = optuna.distributions.CategoricalDistribution(["a", "b"])


def _regime(x: int) -> dict[str, Any]:
    """Regime ``sixteen`` at knob value ``x``: more goodput the larger ``x``, within the
    SLA from 4 up (p95 TPOT 75 ms at 0 down to 50 ms at 5)."""
    p95 = 75.0 - 5.0 * x
    return {"status": "ok", "concurrency": 16, "sla": SLA, "goodput_rps": 0.1 * (1 + x),
            "tpot_p95_ms": p95, "within_sla": p95 <= SLA["p95_tpot_ms"]}


def _study(seed: int) -> optuna.Study:
    """30 measured trials: batch-1 TPOT best at x = 0, the regime's goodput best at x = 5."""
    study = optuna.create_study(directions=["minimize", "maximize"],
                                sampler=make_sampler("tpe", seed, None))  # type: ignore[arg-type]
    for i in range(30):
        x, y = i % 6, "ab"[i % 2]
        t = optuna.trial.create_trial(
            params={"x": x, "y": y}, distributions={"x": X, "y": Y},
            values=[20.0 + 2.0 * x, 0.9], user_attrs={"regimes": {"sixteen": _regime(x)}},
            system_attrs={"constraints:failed": -1.0})
        study.add_trial(t)
    return study


def _proposals(study: optuna.Study, serves: str | None, n: int = 20) -> Counter[int]:
    """The ``x`` each of ``n`` asks proposes (each told FAIL at once: a failure without a
    configuration teaches the samplers nothing, so every ask sees the same study)."""
    samplers, got = RegimeSamplers(seed=7), Counter[int]()
    for _ in range(n):
        with samplers.asking(study, serves):
            trial = study.ask()
            got[trial.suggest_categorical("x", X.choices)] += 1  # type: ignore[index]
            trial.suggest_categorical("y", Y.choices)
        study.tell(trial, state=optuna.trial.TrialState.FAIL)
    return got


def test_a_regimes_sampler_proposes_where_its_goodput_is_and_the_studys_where_batch_1_is(
        ) -> None:
    regime = _proposals(_study(0), "sixteen")
    batch1 = _proposals(_study(0), None)
    # within the SLA and most goodput: 4 and 5; fastest at batch 1: 0 and 1
    assert regime[4] + regime[5] >= 14, regime
    assert batch1[0] + batch1[1] >= 14, batch1
    assert regime[0] + regime[1] <= 3


def test_the_study_keeps_its_own_sampler_after_a_regimes_ask() -> None:
    study = _study(1)
    own = study.sampler
    with pytest.raises(RuntimeError), RegimeSamplers(seed=0).asking(study, "sixteen"):
        assert study.sampler is not own
        raise RuntimeError("a failed ask")
    assert study.sampler is own


def test_a_launch_outside_the_sla_is_infeasible_for_the_regime_by_how_far_it_misses() -> None:
    assert sla_slack(66.0, None, SLA) == pytest.approx(0.1)
    assert sla_slack(30.0, 1.0, {"p95_tpot_ms": 60.0, "p95_ttft_s": 0.5}) == pytest.approx(1.0)
    assert sla_slack(30.0, None, SLA) == pytest.approx(-0.5)
    assert sla_slack(None, None, SLA) == 1.0         # the bound's figure was not measured
    assert sla_slack(90.0, None, None) == -1.0       # no SLA: every launch is within it
    study = _study(2)
    slow, fast = study.trials[0], study.trials[5]      # x = 0 and x = 5
    assert in_regime(slow, "sixteen").constraints["sla"] > 0
    assert in_regime(fast, "sixteen").constraints["sla"] < 0
    assert in_regime(fast, "sixteen").value == pytest.approx(0.6)
    # a regime it did not measure: no goodput, infeasible; its own gates kept
    other = in_regime(fast, "thirty-two")
    assert (other.value, other.constraints["regime_failed"]) == (0.0, 1.0)
    assert other.constraints["failed"] == -1.0


def _launch(n: int, role: Role = Role.TRIAL, *, why: str | None = None,
            serves: str | None = None, **kw: Any) -> TrialSummary:
    return TrialSummary(n, "COMPLETE", role, proposed_by=why, serves=serves, **kw)


def test_the_budget_says_which_objective_each_launch_served() -> None:
    rows = [_launch(0, Role.BASELINE), _launch(1, why="screen"), _launch(2, why="screen"),
            _launch(3, why="sampler"), _launch(4, why="sampler", serves="sixteen"),
            _launch(5, why="neighbour", serves="sixteen"),
            _launch(6, Role.REMEASURE, remeasure_of=1, contender=True),
            _launch(7, Role.REMEASURE, remeasure_of=5, serves="sixteen"),
            _launch(8, Role.REMEASURE, remeasure_of=1),
            _launch(9),                                  # a study from before proposed_by
            _launch(10, Role.DUPLICATE, why="sampler", serves="sixteen"),   # a copy: free
            TrialSummary(11, "RUNNING", Role.TRIAL, proposed_by="sampler")]
    split = budget_split(rows, ["sixteen", "four"])
    assert split is not None and split.launches == 10
    assert split.by_objective == {
        "batch 1": {"baseline": 1, "screen": 2, "sampler": 2, "contender": 1, "finals": 1},
        "sixteen": {"neighbour": 1, "sampler": 1, "pick again": 1}, "four": {}}
    assert split.sentence().startswith("budget: 10 launches; batch 1: 7 (baseline 1, screen 2")
    assert "sixteen: 3 (neighbour 1, sampler 1, pick again 1); four: 0 ()" in split.sentence()
    assert budget_split(rows, []) is None                # no regime: all of it is batch 1's
