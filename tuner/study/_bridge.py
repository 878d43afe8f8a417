"""Search space -> Optuna: define-by-run suggestions that follow the knobs' conditions."""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any

from tuner.space import SearchSpace


if TYPE_CHECKING:
    import optuna


def distribution(space: SearchSpace, name: str) -> Any:
    from optuna.distributions import CategoricalDistribution
    from optuna.distributions import FloatDistribution
    from optuna.distributions import IntDistribution

    k = space.knob(name)
    if k.type in ("categorical", "bool"):
        return CategoricalDistribution(space.domain(name) or [])
    assert k.low is not None and k.high is not None
    if k.type == "int":
        return IntDistribution(int(k.low), int(k.high), step=int(k.step or 1))
    return FloatDistribution(k.low, k.high, step=k.step)


def suggest(space: SearchSpace, trial: optuna.Trial) -> dict[str, Any]:
    """Sample every active knob in condition order; inactive knobs are never suggested.

    A capacity knob is not sampled: it takes the value an enqueued capacity probe carries
    (user attribute ``held``) or else the baseline's, so the sampler models speed knobs only."""
    values: dict[str, Any] = {}
    held = set(space.capacity_knobs)
    for name in space.order:
        if not space.is_active(name, values):
            continue
        if name in held:
            raw = (trial.user_attrs.get("held") or {}).get(name, space.complete({}).get(name))
            values[name] = space.coerce(name, raw)
            continue
        dist = distribution(space, name)
        k = space.knob(name)
        if k.type in ("categorical", "bool"):
            values[name] = trial.suggest_categorical(name, dist.choices)
        elif k.type == "int":
            values[name] = trial.suggest_int(name, dist.low, dist.high, step=dist.step)
        else:
            values[name] = trial.suggest_float(name, dist.low, dist.high, step=dist.step)
        values[name] = space.coerce(name, values[name])
    return values

