"""The accuracy gate's power (tuner/trial/_power.py) against the gate itself: the exact
figure must match how often the real gate (``evaluate``) refuses simulated paired samples."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tuner.space import Gate
from tuner.trial import Aggregates
from tuner.trial import detectable_drop
from tuner.trial import gate_power
from tuner.trial._gate import evaluate


def _refused_share(n: int, r: float, drop_pp: float, gate: Gate, draws: int, seed: int
                   ) -> float:
    """How often ``evaluate`` refuses: questions discordant with probability r, the
    baseline's with probability (r + d) / 2r (the model the power figure assumes)."""
    rng = np.random.default_rng(seed)
    d = drop_pp / 100
    refused = 0
    for _ in range(draws):
        u = rng.random(n)
        base_only = u < (r + d) / 2
        trial_only = (u >= (r + d) / 2) & (u < r)
        base = {f"q{i}": not trial_only[i] for i in range(n)}
        trial = {f"q{i}": not base_only[i] for i in range(n)}
        verdict = evaluate(Aggregates(requests=n, per_question=trial), speculative=False,
                           cfg=gate, baseline_per_question=base)
        refused += not verdict.passed
    return refused / draws


@pytest.mark.parametrize(("n", "r", "drop", "gate"), [
    (400, 0.10, 3.0, Gate()),
    (120, 0.08, 4.0, Gate(max_accuracy_drop_pp=0.5, mcnemar_alpha=0.1)),
    (60, 0.05, 5.0, Gate()),                                   # every discordant pair lost
])
def test_power_matches_the_gate_it_describes(n: int, r: float, drop: float, gate: Gate
                                             ) -> None:
    draws = 1500
    seen = _refused_share(n, r, drop, gate, draws, seed=n)
    exact = gate_power(n, r, drop, gate)
    sd = math.sqrt(max(exact * (1 - exact), 1e-4) / draws)
    assert abs(seen - exact) < 4 * sd + 1e-3, (seen, exact)


def test_power_grows_with_the_drop_and_the_sample() -> None:
    g = Gate()
    by_drop = [gate_power(400, 0.10, d, g) for d in (0.0, 1.0, 2.0, 3.0, 5.0, 8.0)]
    assert by_drop == sorted(by_drop) and by_drop[0] < g.mcnemar_alpha
    by_n = [gate_power(n, 0.10, 3.0, g) for n in (30, 60, 400, 1319)]
    assert by_n == sorted(by_n)
    assert by_n[1] < 0.2 < 0.9 < by_n[3]      # 60 questions cannot see 3 points; 1319 can
    assert gate_power(0, 0.1, 3.0, g) == 0.0 and gate_power(100, 0.0, 0.0, g) == 0.0


def test_detectable_drop_is_where_the_power_crosses() -> None:
    g = Gate()
    d = detectable_drop(1319, 0.10, g)
    assert d is not None and 1.0 < d < 3.0
    assert gate_power(1319, 0.10, d, g) >= 0.8 > gate_power(1319, 0.10, d - 0.05, g)
    smaller = detectable_drop(400, 0.10, g)
    assert smaller is not None and smaller > d          # fewer questions: a larger drop
    screening = detectable_drop(60, 0.10, g)
    assert screening is not None and screening > 10.0   # 60 questions: only gross drops
    # answers that never differ: a drop of d makes them differ on d of the questions
    same = detectable_drop(400, 0.0, g)
    again = detectable_drop(400, same / 100, g) if same is not None else None
    assert same is not None and again is not None and abs(same - again) <= 0.02
    assert detectable_drop(3, 0.10, g) is None          # 3 questions: nothing, ever
