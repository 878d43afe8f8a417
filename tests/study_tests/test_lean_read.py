"""LeanRDBStorage reads the same FrozenTrials as Optuna's RDBStorage, filters included."""

from __future__ import annotations

import math
from pathlib import Path

import optuna
import pytest
from optuna.distributions import CategoricalDistribution
from optuna.distributions import FloatDistribution
from optuna.distributions import IntDistribution
from optuna.trial import TrialState

from tuner.study._lean_read import LeanRDBStorage
from tuner.study._transaction import one_transaction


def _every_kind_of_trial(url: str) -> optuna.Study:
    """Complete (finite, infinite and constrained), failed, pruned with intermediate values,
    running and waiting trials, parameters of every distribution, nested attributes."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(study_name="t", storage=url,
                                directions=["minimize", "maximize"])
    dists = {"f": FloatDistribution(0.5, 0.9, step=0.1),
             "lf": FloatDistribution(1e-3, 1, log=True),
             "i": IntDistribution(1, 8), "c": CategoricalDistribution([None, True, "fp8", 3])}
    for k, c in enumerate([None, True, "fp8", 3]):
        study.add_trial(optuna.trial.create_trial(
            params={"f": 0.5 + 0.1 * k, "lf": 10 ** -k, "i": k + 1, "c": c}, distributions=dists,
            values=[20.0 + k, 0.9 if k else math.inf],
            constraints={"floor": -1.0, "failed": float(k % 2)},
            system_attrs={"constraints": [-1.0, float(k % 2)]},
            user_attrs={"tuner:role": "trial", "config": {"a": [1, {"b": None}]}, "k": k,
                        "per_question": {f"q{i}": i % 2 == 0 for i in range(5)}}))
    study.add_trial(optuna.trial.create_trial(
        state=TrialState.FAIL, params={"i": 3}, distributions={"i": dists["i"]},
        user_attrs={"reason": "oom", "message": "x" * 300}))
    study.add_trial(optuna.trial.create_trial(
        state=TrialState.PRUNED, params={"c": "fp8"}, distributions={"c": dists["c"]},
        intermediate_values={0: 30.0, 1: math.inf, 2: -math.inf, 5: math.nan}))
    running = study.ask({"i": dists["i"]})
    running.set_user_attr("started", True)
    study.enqueue_trial({"i": 2, "c": None}, user_attrs={"tuner:role": "baseline"})
    return study


def _equal(a: list[optuna.trial.FrozenTrial], b: list[optuna.trial.FrozenTrial]) -> None:
    assert [t.number for t in a] == [t.number for t in b]
    for x, y in zip(a, b, strict=True):
        # NaN intermediate values compare unequal to themselves: compare their text
        assert repr(x.intermediate_values) == repr(y.intermediate_values)
        x_, y_ = x.__dict__.copy(), y.__dict__.copy()
        x_.pop("intermediate_values"), y_.pop("intermediate_values")
        assert x_ == y_, (x.number, x_, y_)


FILTERS = [(None, set(), -1), ((TrialState.COMPLETE,), set(), -1),
           ((TrialState.RUNNING, TrialState.WAITING), set(), -1),
           (None, set(), 3), (None, {1, 2, 9}, 3), ((TrialState.FAIL,), {5}, 5)]


@pytest.mark.parametrize(("states", "included", "greater"), FILTERS)
def test_lean_read_equals_optunas(tmp_path: Path, states, included, greater) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    study_id = _every_kind_of_trial(url)._study_id
    theirs = optuna.storages.RDBStorage(url)._get_trials(study_id, states, included, greater)
    ours = LeanRDBStorage(url)._get_trials(study_id, states, included, greater)
    assert theirs, "the filter should select something"
    _equal(ours, theirs)


def test_lean_read_sees_the_writes_of_an_open_group(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    _every_kind_of_trial(url)
    study = optuna.load_study(study_name="t", storage=LeanRDBStorage(url))
    with one_transaction(study._storage):
        trial = study.ask()                      # takes the waiting (enqueued) trial
        trial.set_user_attr("fresh", 1)
        mine = study._storage._backend._get_trials(study._study_id, None, set(), -1)
        assert mine[-1].user_attrs["fresh"] == 1 and mine[-1].state == TrialState.RUNNING
        other = LeanRDBStorage(url)._get_trials(study._study_id, None, set(), -1)
        assert "fresh" not in other[-1].user_attrs               # not committed yet
        assert other[-1].state == TrialState.WAITING


def test_the_product_opens_studies_with_the_lean_read(tmp_path: Path) -> None:
    from tuner.study._storage import locate

    assert isinstance(locate(str(tmp_path / "s.db"), "s").storage(), LeanRDBStorage)
