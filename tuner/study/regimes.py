"""Load regimes as the study answers them: a launch's record in a regime (the study's
``TrialSummary.regimes``), a configuration's launches pooled into one, its row."""

from tuner.study._record import RegimeRecord
from tuner.study._regimes import RegimeRow
from tuner.study._regimes import pooled
from tuner.study._regimes import regime_named


__all__ = [
    "RegimeRecord",
    "RegimeRow",
    "pooled",
    "regime_named",
]
