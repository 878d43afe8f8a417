import optuna


def assert_every_constraint_set(trial: optuna.trial.FrozenTrial) -> None:
    """A COMPLETE trial carries all three constraints, in both formats (the list is what
    optuna-dashboard 0.21 reads)."""
    keys = ("accept_length_floor", "accuracy_drop", "failed")
    assert {k for k in trial.constraints if not k.isdigit()} == set(keys)
    assert trial.system_attrs["constraints"] == [trial.constraints[k] for k in keys]
