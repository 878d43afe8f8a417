"""The accuracy gate's power: how likely it is to refuse a real accuracy drop.

The gate (:mod:`tuner.trial._gate`) refuses a configuration on ``n`` paired questions when
the drop ``(b - c) / n`` exceeds ``max_accuracy_drop_pp`` **and** the one-sided exact
McNemar test on the ``b + c`` discordant pairs has p < ``mcnemar_alpha`` (``b``: the
baseline alone right, ``c``: the configuration alone right). Its power against a true drop
``d`` is computed exactly under the usual paired model: each question is discordant with
probability ``r`` (the discordance rate, held at what was observed), and a discordant
question is the baseline's with probability ``(r + d) / (2 r)``. Then ``k = b + c`` is
Binomial(n, r) and, given ``k``, ``b`` is Binomial(k, (r + d) / (2 r)); the gate fires
exactly when ``b`` reaches a threshold that depends on ``k`` alone, so the power is one
sum over ``k``. A drop cannot exceed the discordance (``d <= r``).

Units: drops in percentage points, rates as fractions.
"""

from __future__ import annotations

import math

from tuner.space import Gate


def gate_power(pairs: int, discordance: float, drop_pp: float, gate: Gate) -> float:
    """Probability that the gate refuses a configuration whose true accuracy drop is
    ``drop_pp`` points, on ``pairs`` questions with discordance rate ``discordance``
    (raised to the drop when below it)."""
    import numpy as np
    from scipy import stats

    if pairs <= 0:
        return 0.0
    d = max(drop_pp, 0.0) / 100
    r = min(max(discordance, d), 1.0)
    if r <= 0.0:
        return 0.0
    k = np.arange(pairs + 1)
    # the smallest b with P(Binomial(k, 1/2) >= b) < alpha: isf, then one exact correction
    crit = np.asarray(stats.binom.isf(gate.mcnemar_alpha, k, 0.5), dtype=float) + 1
    crit += stats.binom.sf(crit - 1, k, 0.5) >= gate.mcnemar_alpha
    # b - c > max_drop * n  <=>  b > (k + max_drop * n) / 2
    excess = np.floor((k + gate.max_accuracy_drop_pp / 100 * pairs) / 2 + 1e-12) + 1
    need = np.maximum(crit, excess)
    q = min((r + d) / (2 * r), 1.0)
    fires = stats.binom.sf(need - 1, k, q)
    return float(np.clip(np.sum(stats.binom.pmf(k, pairs, r) * fires), 0.0, 1.0))


def detectable_drop(pairs: int, discordance: float, gate: Gate, power: float = 0.8
                    ) -> float | None:
    """The smallest true drop (points) the gate refuses with probability ``power`` on
    ``pairs`` questions, the questions answered differently being ``discordance`` of them
    or the drop itself when larger (a configuration that loses d points differs on at
    least d of the questions); None when no drop up to 100 points reaches it."""
    if pairs <= 0 or gate_power(pairs, discordance, 100.0, gate) < power:
        return None
    lo, hi = gate.max_accuracy_drop_pp, 100.0
    while hi - lo > 0.01:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if gate_power(pairs, discordance, mid, gate) < power else (lo, mid)
    return math.ceil(hi * 100) / 100
