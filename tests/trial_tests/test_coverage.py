"""The 95% TPOT interval covers the true value, under the simulator's noise model.

The wall-clock version (real trials against simulator processes, whose timing a loaded
machine skews) is a benchmark: benchmarks/tpot_ci_coverage.py. Here the requests' decode
times are drawn as the simulator's scheduler draws them (tuner_sim/engine.py,
``Engine._jitter``: one mean-1 lognormal factor per decode iteration), so the check of the
interval's statistics does not depend on how busy the machine is.
"""

from __future__ import annotations

import math
import random

from tuner.trial import RequestRecord
from tuner.trial import aggregate


def _record(i: int, decode_ms: float, tokens: int, ttft: float) -> RequestRecord:
    """A request as tuner/trial/_requests.py records it."""
    return RequestRecord(prompt_id=f"p{i}", prompt_tokens=2048, completion_tokens=tokens,
                         ttft_s=ttft, e2e_s=ttft + decode_ms / 1000,
                         tpot_ms=decode_ms / (tokens - 1))


def _requests(rng: random.Random, step_ms: float, noise: float, n: int, tokens: int,
              request_cv: float = 0.0) -> list[RequestRecord]:
    out = []
    for i in range(n):
        decode_ms = sum(step_ms * math.exp(rng.gauss(-0.5 * noise ** 2, noise))
                        for _ in range(tokens - 1))
        if request_cv:
            decode_ms *= math.exp(rng.gauss(-0.5 * request_cv ** 2, request_cv))
        out.append(_record(i, decode_ms, tokens, 0.5 + rng.random()))
    return out


def test_tpot_interval_covers_the_true_value_at_its_nominal_rate() -> None:
    rng = random.Random(7)
    repeats, covered, errors = 400, 0, []
    for _ in range(repeats):
        step = 20.0 * (0.8 + 0.4 * rng.random())       # the true TPOT of this repeat
        a = aggregate(_requests(rng, step, 0.05, n=6, tokens=256))
        assert a.tpot_ms is not None and a.tpot_ci95 is not None
        errors.append(a.tpot_ms / step - 1)
        covered += a.tpot_ci95.low <= step <= a.tpot_ci95.high
    # Binomial(400, 0.95): 380 expected, sd 4.4; below 365 or above 395 is under 0.1%
    assert 365 <= covered <= 395, covered
    assert max(abs(e) for e in errors) < 0.01          # 255 steps of 5% noise: ~0.3% sd


def test_an_interval_that_ignores_spread_between_requests_would_be_caught() -> None:
    """The check above can fail: requests slower or faster as a whole (here a 3% factor
    per request, which the interval must absorb) still leave it near its nominal rate,
    and an interval of the per-step noise alone would not."""
    rng = random.Random(11)
    covered, narrow = 0, 0
    for _ in range(400):
        a = aggregate(_requests(rng, 20.0, 0.05, n=6, tokens=256, request_cv=0.03))
        assert a.tpot_ms is not None and a.tpot_ci95 is not None
        covered += a.tpot_ci95.low <= 20.0 <= a.tpot_ci95.high
        half = 1.96 * 0.05 * 20.0 / math.sqrt(6 * 255)   # per-step noise only
        narrow += a.tpot_ms - half <= 20.0 <= a.tpot_ms + half
    assert covered >= 365, covered
    assert narrow < 200, narrow
