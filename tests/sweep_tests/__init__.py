import optuna


def assert_every_constraint_set(trial: optuna.trial.FrozenTrial) -> None:
    """A COMPLETE trial carries all three constraints, in both formats (the list is what
    optuna-dashboard 0.21 reads)."""
    keys = ("accept_length_floor", "accuracy_drop", "failed")
    assert {k for k in trial.constraints if not k.isdigit()} == set(keys)
    assert trial.system_attrs["constraints"] == [trial.constraints[k] for k in keys]


def stand_ins(study: optuna.Study) -> set[int]:
    """Numbers of the stored FAIL trials that the sampler sees as COMPLETE stand-ins."""
    from tuner.study.samplers import sampler_trials

    stored = {t.number: t.state for t in study.get_trials(deepcopy=False)}
    return {t.number for t in sampler_trials(study)
            if t.state == optuna.trial.TrialState.COMPLETE
            and stored[t.number] == optuna.trial.TrialState.FAIL}


def assert_only_measurements_complete(study: optuna.Study) -> None:
    """Every COMPLETE trial in storage is a real measurement (its values are the TPOT and
    accuracy it measured, or, for a copied repeat, those of the measured trial it names)."""
    for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,)):
        source = study.trials[t.user_attrs.get("duplicate_of", t.number)]
        assert source.user_attrs.get("tpot_ms") == t.values[0], t.number
        assert source.user_attrs.get("tuner:role") in ("baseline", "trial", "remeasure")


def carries(pid: int, mark: str) -> bool:
    """Whether process ``pid``'s environment holds ``mark`` (``NAME=value``). Read raw: Ray's
    process titles overwrite the start of the environment block."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            return mark.encode() in fh.read()
    except OSError:
        return False


def new_mark() -> str:
    """A ``NAME=value`` to put in a test's driver environment: every process it starts
    inherits it, so the test finds its own processes, not another test run's."""
    import uuid

    return f"TUNER_TEST_MARK={uuid.uuid4().hex}"


def marked_env(mark: str) -> dict[str, str]:
    import os

    name, value = mark.split("=", 1)
    return {**os.environ, name: value}
