"""A load regime's own sampler: TPE that learns the regime's objective from the same launches.

Every launch of a sweep whose workload declares load regimes also measures each regime
(:class:`tuner.trial.RegimeResult`). The study's sampler models what the study's objectives
say, batch-1 TPOT (and accuracy); a regime's answer is the configuration with the most
goodput within its SLA, often another one (more requests at once, another draft length).
:func:`regime_sampler` is a second TPE for one regime, fed from the same trials seen through
:class:`_RegimeView`:

* the objective is the regime's goodput (requests within the SLA a second), maximised;
* the SLA's slack is a constraint (``sla``: the largest of ``p95 / bound - 1`` over the
  SLA's bounds, feasible at 0 or below), beside the trial's own gates (accept-length floor,
  accuracy drop, failed), so TPE's infeasible trials are ranked by how far they miss;
* a launch that did not measure the regime (a failure's stand-in, a stopped trial, a
  regime that failed) has no goodput and the constraint ``regime_failed = 1``.

Nothing is stored: the view is made for each call, and the sampler's ``after_trial`` is
not forwarded (the study's own sampler is told the trial's end). The scheduler asks with it
when the search policy says so (:class:`tuner.sweep._searcher.Ask` ``serves``): the budget
is shared between the objectives, and each launch's ``serves`` says which one it went to.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING
from typing import Any

from tuner.study._record import regime_records
from tuner.study._stand_ins import _SamplerView
from tuner.study._stand_ins import viewing_sampler


if TYPE_CHECKING:
    import optuna
    from optuna.trial import FrozenTrial


def sla_slack(p95_tpot_ms: float | None, p95_ttft_s: float | None,
              sla: dict[str, float] | None) -> float:
    """The largest ``figure / bound - 1`` over the SLA's bounds (at most 0: within it); -1
    with no SLA; 1 when a bound's figure is missing."""
    if not sla:
        return -1.0
    figures = {"p95_tpot_ms": p95_tpot_ms, "p95_ttft_s": p95_ttft_s}
    slack = [1.0 if (f := figures[k]) is None else f / bound - 1.0
             for k, bound in sla.items() if k in figures and bound > 0]
    return max(slack, default=-1.0)


def in_regime(trial: FrozenTrial, regime: str) -> FrozenTrial:
    """``trial`` (COMPLETE, as the study's sampler sees it) as regime ``regime``'s sampler
    sees it: its goodput there as the one value, the SLA's slack a constraint."""
    import optuna

    g = regime_records(trial.user_attrs.get("regimes")).get(regime)
    constraints = dict(trial.constraints)
    if g is None or g.status != "ok" or g.goodput_rps is None:
        value, constraints["regime_failed"] = 0.0, 1.0
    else:
        value = float(g.goodput_rps)
        constraints["sla"] = sla_slack(g.tpot_p95_ms, g.ttft_p95_s, g.sla)
    system_attrs = {f"constraints:{k}": v for k, v in constraints.items()}
    return optuna.trial.FrozenTrial(
        number=trial.number, trial_id=trial._trial_id, state=trial.state, value=value,
        values=None, datetime_start=trial.datetime_start,
        datetime_complete=trial.datetime_complete, params=dict(trial.params),
        distributions=dict(trial.distributions), user_attrs=dict(trial.user_attrs),
        system_attrs=system_attrs, intermediate_values={})


class _RegimeView(_SamplerView):
    """``study`` as one regime's sampler sees it: one objective, maximised (the goodput),
    each finished trial through :func:`in_regime`; all else as the study's sampler sees it."""

    def __init__(self, study: optuna.Study, regime: str) -> None:
        super().__init__(study)
        self._regime = regime

    @property
    def directions(self) -> list[Any]:
        import optuna

        return [optuna.study.StudyDirection.MAXIMIZE]

    @property
    def direction(self) -> Any:
        return self.directions[0]

    def _is_multi_objective(self) -> bool:
        return False

    def _shown(self, trials: list[Any]) -> list[Any]:
        return [in_regime(t, self._regime) if t.state.name == "COMPLETE" else t for t in trials]

    @property
    def best_trial(self) -> Any:
        raise NotImplementedError("a regime's view has no best trial")


def regime_sampler(regime: str, seed: int | None) -> Any:
    """TPE for load regime ``regime``'s goodput within its SLA (module docstring)."""
    import optuna

    inner: Any = optuna.samplers.TPESampler(seed=seed, n_startup_trials=10,
                                            multivariate=True, group=True)
    return viewing_sampler(inner, lambda study: _RegimeView(study, regime), told=False,
                           label=f"RegimeSampler({regime!r})")


class RegimeSamplers:
    """Each load regime's sampler, made on first use (the study's own sampler otherwise)."""

    def __init__(self, seed: int | None) -> None:
        self.seed = seed
        self.made: dict[str, Any] = {}

    @contextmanager
    def asking(self, study: optuna.Study, serves: str | None) -> Iterator[None]:
        """Within this block ``study`` samples with regime ``serves``'s sampler (None: its
        own): :meth:`optuna.Study.ask` and the suggestions after it read ``study.sampler``."""
        if serves is None:
            yield
            return
        if serves not in self.made:
            self.made[serves] = regime_sampler(serves, self.seed)
        kept, study.sampler = study.sampler, self.made[serves]
        try:
            yield
        finally:
            study.sampler = kept
