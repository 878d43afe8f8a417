"""Failure stand-ins that live only in the sampler's view of the study, never in storage.

Optuna's samplers ignore FAIL trials, so a region that crashes or runs out of memory would
be proposed again and again. The sampler therefore sees each failure of a configuration as
a **stand-in**: the same trial, COMPLETE, with pessimistic values (``10 x`` the baseline's
TPOT, accuracy 0) and the constraint ``failed = 1``. TPE, NSGA-II and GP put infeasible
trials in the "bad" group, so they steer away.

The stand-ins are made on the fly by :class:`StandInSampler` for the inner sampler's calls;
the stored study holds only real measurements, so optuna-dashboard, reports and exports
never meet a fake value (a FAIL trial is shown as failed). Failures that say nothing about
the configuration get no stand-in: a flaky start-up that is launched once more
(``retried``), a trial whose run was lost (``recovered``), a finals' re-measurement, a
copied repeat.

A trial stopped early (PRUNED: dominated or collapsed after the first part of its
workload) is seen as what it measured: COMPLETE with its partial TPOT and accuracy, and
infeasible when its speculation collapsed. Optuna's samplers would otherwise ignore it.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Container
from typing import TYPE_CHECKING
from typing import Any

from tuner.study._record import CONSTRAINT_KEYS
from tuner.study._record import ROLE
from tuner.study._summary import summarize


if TYPE_CHECKING:
    from collections.abc import Sequence

    import optuna
    from optuna.distributions import BaseDistribution
    from optuna.trial import FrozenTrial
    from optuna.trial import TrialState


#: A stand-in's TPOT is this many times the baseline's (or ``NO_BASELINE_TPOT_MS`` x this).
PESSIMISM = 10.0
NO_BASELINE_TPOT_MS = 100.0


def _pruned_measurement(trial: FrozenTrial) -> bool:
    """A PRUNED trial (or its copy) that measured a TPOT before it stopped."""
    return trial.state.name == "PRUNED" and bool(trial.user_attrs.get("tpot_ms"))


def steers_away(trial: FrozenTrial) -> bool:
    """Whether ``trial`` (a FrozenTrial) is a failure of its configuration, which the
    sampler must learn to avoid: a FAIL that counts as measured (:attr:`TrialSummary.measured`:
    not retried, not lost, not a copy or a finals' launch) of a planned configuration."""
    if trial.state.name != "FAIL":
        return False
    t = summarize(trial)
    return t.measured and t.config_hash is not None


def stand_in(trial: FrozenTrial, *, n_objectives: int, pessimistic_tpot: float) -> Any:
    """The COMPLETE copy the sampler sees of ``trial``: of a FAIL, infeasible with
    pessimistic values; of a PRUNED trial, its partial figures (infeasible if collapsed)."""
    import optuna

    if trial.state.name == "PRUNED":
        a = trial.user_attrs
        values = [a["tpot_ms"], a.get("accuracy") or 0.0][:n_objectives]
        collapsed = a.get("reason") == "collapsed"
        failed = {k: (1.0 if k == "accept_length_floor" and collapsed else -1.0)
                  for k in CONSTRAINT_KEYS}
    else:
        values = [pessimistic_tpot, 0.0][:n_objectives]
        failed = {k: (1.0 if k == "failed" else 0.0) for k in CONSTRAINT_KEYS}
    system_attrs: dict[str, Any] = {f"constraints:{k}": v for k, v in failed.items()}
    system_attrs["constraints"] = list(failed.values())
    return optuna.trial.FrozenTrial(
        number=trial.number, trial_id=trial._trial_id, state=optuna.trial.TrialState.COMPLETE,
        value=None, values=values, datetime_start=trial.datetime_start,
        datetime_complete=trial.datetime_complete or trial.datetime_start,
        params=dict(trial.params), distributions=dict(trial.distributions),
        user_attrs=dict(trial.user_attrs), system_attrs=system_attrs, intermediate_values={})


def sampler_trials(study: optuna.Study, *, use_cache: bool = False) -> list[Any]:
    """Every trial of ``study`` as its sampler sees it: each failure of a configuration
    replaced by its stand-in, in number order."""
    trials = study._get_trials(deepcopy=False, use_cache=use_cache)
    base = next((t for t in trials if t.state.name == "COMPLETE"
                 and t.user_attrs.get(ROLE) == "baseline"), None)
    tpot = PESSIMISM * (base.values[0] if base is not None else NO_BASELINE_TPOT_MS)
    n = len(study.directions)
    return [stand_in(t, n_objectives=n, pessimistic_tpot=tpot)
            if steers_away(t) or _pruned_measurement(t) else t for t in trials]


class _SamplerView:
    """``study`` with :func:`sampler_trials` in place of its trials; all else forwarded
    (the storage too: a sampler's own system attrs are written to the real trial)."""

    def __init__(self, study: optuna.Study) -> None:
        self._study = study

    def __getattr__(self, name: str) -> Any:
        return getattr(self._study, name)

    def _get_trials(self, deepcopy: bool = True, states: Container[TrialState] | None = None,
                    use_cache: bool = False) -> list[Any]:
        import copy

        trials = self._shown(sampler_trials(self._study, use_cache=use_cache))
        if states is not None:
            trials = [t for t in trials if t.state in states]
        return copy.deepcopy(trials) if deepcopy else trials

    def get_trials(self, deepcopy: bool = True, states: Container[TrialState] | None = None
                   ) -> list[Any]:
        return self._get_trials(deepcopy=deepcopy, states=states)

    @property
    def trials(self) -> list[Any]:
        return self._get_trials()

    def _shown(self, trials: list[Any]) -> list[Any]:
        """The trials as this view shows them (a subclass's own view: one regime's)."""
        return trials


def stand_in_sampler(inner: Any) -> Any:
    """``inner`` (an Optuna sampler) wrapped so that it sees failures as stand-ins."""
    return viewing_sampler(inner, _SamplerView)


def viewing_sampler(inner: Any, view: Callable[[optuna.Study], Any], *, told: bool = True,
                    label: str | None = None) -> Any:
    """``inner`` wrapped so that every call sees the study through ``view`` (a
    :class:`_SamplerView`); ``told`` False: the trial's end is not forwarded (a sampler
    whose view is not the study's objectives must write nothing to the trial)."""
    import optuna

    class StandInSampler(optuna.samplers.BaseSampler):
        """Forwards every call to ``inner`` with the study seen through ``view``."""

        def __init__(self) -> None:
            self.inner = inner

        def __repr__(self) -> str:
            return label or f"StandInSampler({self.inner!r})"

        def reseed_rng(self) -> None:
            self.inner.reseed_rng()

        def infer_relative_search_space(self, study: optuna.Study, trial: FrozenTrial) -> Any:
            return self.inner.infer_relative_search_space(view(study), trial)

        def sample_relative(self, study: optuna.Study, trial: FrozenTrial,
                            search_space: dict[str, BaseDistribution]) -> dict[str, Any]:
            return self.inner.sample_relative(view(study), trial, search_space)

        def sample_independent(self, study: optuna.Study, trial: FrozenTrial, param_name: str,
                               param_distribution: BaseDistribution) -> Any:
            return self.inner.sample_independent(view(study), trial, param_name,
                                                 param_distribution)

        def before_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
            self.inner.before_trial(view(study), trial)

        def after_trial(self, study: optuna.Study, trial: FrozenTrial, state: TrialState,
                        values: Sequence[float] | None) -> None:
            if told:
                self.inner.after_trial(view(study), trial, state, values)

    return StandInSampler()
