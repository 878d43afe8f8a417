"""Load regimes as the study answers them."""

from tuner.study._regimes import RegimeRow
from tuner.study._regimes import regime_named


__all__ = [
    "RegimeRow",
    "regime_named",
]
