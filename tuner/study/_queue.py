"""A study's queue, and the copies of a measured result: what :class:`tuner.study.
SweepStudy` does to trials it does not run itself (a sweep's end cancels what is still
queued; a repeat of a measured configuration is told the earlier result)."""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any

from tuner.space import SearchSpace
from tuner.study._bridge import suggest
from tuner.study._record import CONSTRAINT_KEYS
from tuner.study._record import ROLE
from tuner.study._record import trial_at
from tuner.study._record import write_legacy_constraints
from tuner.study._summary import Role
from tuner.study._transaction import one_transaction


if TYPE_CHECKING:
    import optuna

    from tuner.trial import TrialResult


#: Failures a second launch may not repeat (no out-of-memory, refused flag or mismatch
#: behind them): retried once before they count.
FLAKY_REASONS = ("launch_error", "startup_timeout")


def flaky_start(role: Role, attrs: dict[str, Any], result: TrialResult) -> bool:
    """A start-up that failed without a deterministic cause (``FLAKY_REASONS``) is
    launched once more before it counts as a failure: the failed trial stays, marked
    ``retried`` (neither measured nor a failure stand-in), and the retry carries
    ``flaky_retry_of`` (``attrs``: the trial's); a retry that fails again counts."""
    return (result.status == "failed" and result.reason in FLAKY_REASONS
            and role != Role.REMEASURE and "flaky_retry_of" not in attrs)


def has_queued(study: optuna.Study) -> bool:
    """Whether ``study`` has a trial queued (WAITING: the baseline, a retry, a launch a
    dead or stopped driver left)."""
    from optuna.trial import TrialState

    return bool(study.get_trials(deepcopy=False, states=(TrialState.WAITING,)))


def cancel_queued(study: optuna.Study, space: SearchSpace, why: str) -> list[int]:
    """FAIL every trial still queued when the sweep ends (its budget spent), as
    ``recovered`` and ``cancelled`` with ``why``: never measured, so neither counted nor a
    failure of its configuration; its parameters are set, so it shows what it would have
    launched. Running the sweep again with more budget decides afresh what to launch (the
    baseline is queued again if it is still unmeasured). Returns their numbers."""
    from optuna.trial import TrialState

    numbers = []
    with one_transaction(study._storage):
        for _ in study.get_trials(deepcopy=False, states=(TrialState.WAITING,)):
            trial = study.ask()                # the oldest queued one
            suggest(space, trial)
            for key, value in {"recovered": True, "reason": "cancelled",
                               "message": f"{why}; it never ran"}.items():
                trial.set_user_attr(key, value)
            study.tell(trial, state=TrialState.FAIL)
            numbers.append(trial.number)
    return numbers


def copy_result(study: optuna.Study, trial: optuna.Trial, earlier_number: int) -> None:
    """Tell ``trial`` what trial ``earlier_number`` measured (same configuration)."""
    from optuna.trial import TrialState

    earlier = trial_at(study, earlier_number)
    trial.set_user_attr(ROLE, Role.DUPLICATE.value)
    trial.set_user_attr("duplicate_of", earlier.number)
    for k, v in earlier.user_attrs.items():
        if k not in (ROLE, "retry_of", "proposed_by", "serves", "flaky_retry_of"):
            trial.set_user_attr(k, v)
    if earlier.state == TrialState.COMPLETE:
        values = [float(earlier.constraints.get(k, 0.0)) for k in CONSTRAINT_KEYS]
        for k, v in zip(CONSTRAINT_KEYS, values, strict=True):
            trial.set_constraint(k, v)
        write_legacy_constraints(study, trial._trial_id, values)
        study.tell(trial, list(earlier.values))
    else:       # a failure stays one; a trial stopped early too
        study.tell(trial, state=TrialState.PRUNED if earlier.state == TrialState.PRUNED
                   else TrialState.FAIL)
