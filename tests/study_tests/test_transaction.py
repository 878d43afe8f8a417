"""A trial's writes are one transaction: few commits, all or nothing."""

from __future__ import annotations

import threading
from pathlib import Path

import optuna
import pytest

from tests.study_tests.write_counter import count_writes
from tests.sweep_tests.model_runner import ModelRunner
from tests.sweep_tests.model_runner import model_sweep
from tuner.study._transaction import one_transaction


def _study(url: str) -> optuna.Study:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna.create_study(study_name="t", storage=url, load_if_exists=True)


def _read(url: str) -> list[optuna.trial.FrozenTrial]:
    """The trials as another process reads them (its own connection, no writes)."""
    return optuna.load_study(study_name="t", storage=url).trials


def test_a_sweep_writes_at_most_five_transactions_per_trial(tmp_path: Path) -> None:
    with count_writes() as seen:
        study = model_sweep(tmp_path, ModelRunner(seed=1), trials=30)
    trials = len(study.trials)
    assert trials >= 30
    # one per attribute, parameter and artifact before grouping: 46 per trial
    assert seen.transactions <= 5 * trials, (seen.transactions, trials)
    assert seen.transactions >= trials            # each trial's record was committed


def test_a_group_is_all_or_nothing(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    study = _study(url)
    trial = study.ask()
    with pytest.raises(RuntimeError), one_transaction(study._storage):
        trial.set_user_attr("a", 1)
        study._storage.set_trial_system_attr(trial._trial_id, "b", 2)
        raise RuntimeError("crash between two writes of one record")
    fresh = _read(url)[0]
    assert fresh.user_attrs == {} and "b" not in fresh.system_attrs
    assert fresh.state == optuna.trial.TrialState.RUNNING
    with one_transaction(study._storage):
        trial.set_user_attr("a", 1)
        study.tell(trial, 1.0)
    fresh = _read(url)[0]
    assert fresh.user_attrs == {"a": 1} and fresh.value == 1.0


def test_a_group_is_invisible_to_other_readers_until_it_ends(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    study = _study(url)
    trial = study.ask()
    with one_transaction(study._storage):
        trial.set_user_attr("a", 1)
        assert study._storage.get_trial_user_attrs(trial._trial_id) == {"a": 1}
        assert _read(url)[0].user_attrs == {}
    assert _read(url)[0].user_attrs == {"a": 1}


def test_other_threads_keep_their_own_commits(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    study = _study(url)
    first, second = study.ask(), study.ask()
    with one_transaction(study._storage):
        # another thread's write commits on its own, before the group ends (the group has
        # written nothing yet, so SQLite lets it)
        other = threading.Thread(target=lambda: second.set_user_attr("other", True))
        other.start()
        other.join()
        assert _read(url)[1].user_attrs == {"other": True}
        first.set_user_attr("mine", True)
        assert _read(url)[0].user_attrs == {}
    assert _read(url)[0].user_attrs == {"mine": True}


def test_nested_groups_join_the_outer_one(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    study = _study(url)
    trial = study.ask()
    with count_writes() as seen, one_transaction(study._storage):
        with one_transaction(study._storage):
            trial.set_user_attr("a", 1)
        trial.set_user_attr("b", 2)
        assert _read(url)[0].user_attrs == {}
    assert seen.transactions == 1
    assert _read(url)[0].user_attrs == {"a": 1, "b": 2}


def test_a_journal_storage_is_left_as_it_is(tmp_path: Path) -> None:
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    storage = JournalStorage(JournalFileBackend(str(tmp_path / "j.log")))
    study = optuna.create_study(storage=storage)
    trial = study.ask()
    with one_transaction(study._storage):
        trial.set_user_attr("a", 1)
    assert study.trials[0].user_attrs == {"a": 1}
