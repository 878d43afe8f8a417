"""The 95% TPOT interval covers the model's value (the full 100-repeat run is in benchmarks/)."""

from __future__ import annotations

import pytest

from benchmarks.tpot_ci_coverage import coverage


@pytest.mark.slow
def test_tpot_interval_covers_the_model_value_in_seeded_repeats() -> None:
    covered, errors, _ = coverage(repeats=10, scale=50.0, noise=0.05)
    assert covered >= 7, (covered, errors)      # P(<= 6 of 10 | true coverage 0.95) < 0.2%
    assert max(abs(e) for e in errors) < 0.02
