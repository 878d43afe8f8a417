"""The samplers a sweep can search with: a registry of name -> factory.

A factory takes the space and a seed and returns an Optuna sampler; it raises a
:class:`~tuner.errors.UserError` when the space or the machine cannot use it. A new search
strategy is one factory and one line in :data:`SAMPLERS` (docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tuner.errors import UserError
from tuner.space import SearchSpace
from tuner.study._stand_ins import stand_in_sampler


Factory = Callable[[SearchSpace, "int | None"], Any]


def _tpe(space: SearchSpace, seed: int | None) -> Any:
    import optuna

    # multivariate + group: models knobs jointly within each conditional sub-space
    # (speculation on/off), which the independent default cannot.
    return optuna.samplers.TPESampler(seed=seed, n_startup_trials=10, multivariate=True,
                                      group=True)


def _tpe_independent(space: SearchSpace, seed: int | None) -> Any:
    import optuna

    return optuna.samplers.TPESampler(seed=seed, n_startup_trials=10)


def _nsga2(space: SearchSpace, seed: int | None) -> Any:
    import optuna

    return optuna.samplers.NSGAIISampler(seed=seed, population_size=16)


def _random(space: SearchSpace, seed: int | None) -> Any:
    import optuna

    return optuna.samplers.RandomSampler(seed=seed)


def _gp(space: SearchSpace, seed: int | None) -> Any:
    import optuna

    try:
        import torch  # noqa: F401
    except ImportError:
        raise UserError("--sampler gp needs PyTorch (pip install torch); "
                        "use tpe, nsga2 or random") from None
    return optuna.samplers.GPSampler(seed=seed)


def _grid(space: SearchSpace, seed: int | None) -> Any:
    import optuna

    try:
        configs = list(space.iter_configs(limit=100_000))
    except ValueError:
        raise UserError("--sampler grid needs a space without continuous knobs") from None
    grid: dict[str, list[Any]] = {}
    for c in configs:
        for k, v in c.items():
            grid.setdefault(k, [])
            if v not in grid[k]:
                grid[k].append(v)
    return optuna.samplers.GridSampler(grid, seed=seed)


#: ``--sampler`` name -> factory (the first is the default).
SAMPLERS: dict[str, Factory] = {
    "tpe": _tpe, "tpe-independent": _tpe_independent, "nsga2": _nsga2, "random": _random,
    "gp": _gp, "grid": _grid,
}
_ALIASES = {"nsga-ii": "nsga2", "nsgaii": "nsga2"}


def make_sampler(name: str, seed: int | None, space: SearchSpace) -> Any:
    """The sampler ``name`` (case-insensitive) for ``space``, seeing failures as stand-ins
    (:mod:`tuner.study._stand_ins`)."""
    key = _ALIASES.get(name.lower(), name.lower())
    if key not in SAMPLERS:
        raise UserError(f"--sampler {name!r}: expected one of {', '.join(SAMPLERS)}")
    return stand_in_sampler(SAMPLERS[key](space, seed))
