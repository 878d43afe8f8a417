"""The samplers and the bridge from a search space to Optuna's distributions."""

from tuner.study._bridge import distribution
from tuner.study._bridge import suggest
from tuner.study._samplers import SAMPLERS
from tuner.study._samplers import make_sampler
from tuner.study._stand_ins import sampler_trials


__all__ = [
    "SAMPLERS",
    "distribution",
    "make_sampler",
    "sampler_trials",
    "suggest",
]
