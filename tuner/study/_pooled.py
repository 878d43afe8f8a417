"""Pooled TPOT estimates: one per measured configuration, over all its launches.

A sweep measures each configuration once and keeps the fastest: that reading is the
luckiest of many draws, biased low (docs/performance.md measured ~3% on the Spark space).
The finals (:mod:`tuner.sweep._finals`) launch the finalists again, race them on the mean
over all their launches, and end with **confirmation** launches of the leader. A
configuration's TPOT, everywhere the tool shows it, is that **pooled mean over every launch
that measured it** (``launches``: "x5" is five launches, the first reading included), with
an interval over launches (Student's t) that includes launch-to-launch variation, not only
one launch's requests; the first reading is kept beside it (``tpot_first_reading_ms`` of
a profile). The more launches, the less the lucky first draw weighs.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Any

from tuner.study._record import trial_at
from tuner.study._summary import Role
from tuner.study._summary import TrialSummary
from tuner.study._summary import summaries


if TYPE_CHECKING:
    import optuna


@dataclass(frozen=True)
class Estimate:
    """TPOT of one configuration: ``number`` is the trial that first measured it."""

    number: int
    tpot_ms: float         # the mean over every launch that measured it
    low: float
    high: float
    launches: int          # every launch that measured it, the first included
    remeasured: int        # launches of the finals (confirmations included)
    #: confirmation launches: the finals' leader is launched again after it was chosen
    confirmations: int = 0
    #: every launch's TPOT, in launch order (the first reading first)
    readings: tuple[float, ...] = ()

    @property
    def pooled_ms(self) -> float:
        """The mean over every launch: what the finals race on (the same as ``tpot_ms``)."""
        return self.tpot_ms

    @property
    def first_ms(self) -> float:
        return self.readings[0] if self.readings else self.tpot_ms

    def overlaps(self, other: Estimate) -> bool:
        return self.low <= other.high and other.low <= self.high


def _interval(values: list[float], fallback: list[float] | None) -> tuple[float, float]:
    mean = statistics.fmean(values)
    if len(values) >= 2:
        from scipy.stats import t

        half = float(t.ppf(0.975, len(values) - 1)) * statistics.stdev(values) / math.sqrt(
            len(values))                  # a plain float: profiles and JSON carry it
        return mean - half, mean + half
    if fallback:
        return fallback[0], fallback[1]
    return mean, mean


def estimates(study: optuna.Study | None, trials: list[TrialSummary] | None = None
              ) -> dict[int, Estimate]:
    """Trial number -> :class:`Estimate`, for every COMPLETE measured trial (baseline or
    trial role)."""
    if trials is None:
        assert study is not None, "the study or its summaries"
        trials = summaries(study)
    rows = trials
    again: dict[int, list[TrialSummary]] = {}
    for s in rows:
        if s.role == Role.REMEASURE and s.state == "COMPLETE" and s.tpot_ms and (
                s.remeasure_of is not None):
            again.setdefault(s.remeasure_of, []).append(s)
    out: dict[int, Estimate] = {}
    for s in rows:
        if not (s.measured and s.state == "COMPLETE" and s.tpot_ms):
            continue
        fresh = again.get(s.number, [])
        values = [s.tpot_ms, *(r.tpot_ms for r in fresh if r.tpot_ms)]
        low, high = _interval(values, s.tpot_ci95 if len(values) == 1 else None)
        out[s.number] = Estimate(s.number, statistics.fmean(values), low, high, len(values),
                                 len(fresh), sum(r.confirm for r in fresh), tuple(values))
    return out


def behind_within_noise(slower: Estimate, faster: Estimate, spread: list[Estimate],
                        errors: float = 1.0) -> bool:
    """Whether ``slower``'s mean trails ``faster``'s by less than ``errors`` standard errors
    of the difference, the launches' spread pooled over the estimates of ``spread`` with
    two or more launches; False without such a spread (nothing says what noise is)."""
    parts = [(len(e.readings) - 1, statistics.variance(e.readings)) for e in spread
             if len(e.readings) > 1]
    dof = sum(d for d, _ in parts)
    if not dof or not slower.readings or not faster.readings:
        return False
    sd = math.sqrt(sum(d * var for d, var in parts) / dof)
    se = sd * math.sqrt(1 / len(slower.readings) + 1 / len(faster.readings))
    return slower.tpot_ms - faster.tpot_ms < errors * se


def feasible_estimates(study: optuna.Study | None, trials: list[TrialSummary] | None = None
                       ) -> dict[int, Estimate]:
    """:func:`estimates` of the feasible measured trials only (what a pick, the finals and
    a tie are chosen among)."""
    if trials is None:
        assert study is not None, "the study or its summaries"
        trials = summaries(study)
    rows = trials
    feasible = _feasible(rows)
    return {n: e for n, e in estimates(study, rows).items() if n in feasible}


def final_verdicts(rows: list[Any], attrs: Any = lambda s: s.__dict__
                   ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(passed, failed): the knob values of the launches on the final accuracy sample that
    the gate passed and refused. A refusal holds for every configuration sharing the
    refused launch's numerics (``numerics``: kernels, activations, LM head); a pass only for
    its own speed configuration (``speed``: speculation included, lossless in principle
    but not in every build; an older study's pass holds for its numerics). ``rows``: summaries,
    or anything ``attrs`` maps to a dict with their fields (a FrozenTrial's user attrs)."""
    passed: list[dict[str, Any]] = []
    failed: list[dict[str, Any]] = []
    for row in rows:
        a = attrs(row)
        if a.get("final_sample") and a.get("remeasure_of") is not None and (
                a.get("state", "COMPLETE") == "COMPLETE"):
            if a.get("gate"):       # refused: every configuration with these numerics
                failed.append(a.get("numerics") or {})
            else:                   # passed: this speed configuration (older studies:
                passed.append(a.get("speed") or a.get("numerics") or {})   # its numerics)
    return passed, failed


def final_baseline_runs(rows: list[TrialSummary], baseline: int) -> list[TrialSummary]:
    """The baseline's launches on the final sample (not those lost and re-queued), in
    order; the last complete one is the reference every finals launch is gated against."""
    return [s for s in rows if s.role == Role.REMEASURE and s.final_sample
            and s.remeasure_of == baseline and not s.recovered]


def shares(config: dict[str, Any], signatures: list[dict[str, Any]]) -> bool:
    """Whether ``config`` has every value of one of ``signatures``."""
    return any(all(config.get(k) == v for k, v in sig.items()) for sig in signatures)


def final_verified(rows: list[TrialSummary]) -> set[int] | None:
    """Measured configurations that the final accuracy sample passed (directly, or through
    a configuration with the same numerics) and did not refuse; None when the study has no
    final sample that measured something (``tuner sweep --final-questions``)."""
    if not any(s.final_sample and s.state == "COMPLETE" for s in rows):
        return None
    passed, failed = final_verdicts(rows)
    return {s.number for s in rows if s.measured and shares(s.config, passed)
            and not shares(s.config, failed)}


def _feasible(rows: list[TrialSummary]) -> set[int]:
    """Measured feasible configurations, less those the final accuracy sample refused
    (directly or through the same numerics): the larger sample overrules the screening."""
    _, failed = final_verdicts(rows)
    return {s.number for s in rows if s.measured and s.feasible
            and not (failed and shares(s.config, failed))}


def largest_capacity(study: optuna.Study, number: int, trials: list[TrialSummary] | None = None
                     ) -> Any | None:
    """The finals' confirmation launch of trial ``number`` that served with the largest
    capacity setting (a larger KV pool at the same speed), or None when none raised it
    (:func:`tuner.study._figures.served_capacity`: the setting every output shows)."""
    from tuner.study._figures import served_capacity

    every = trials if trials is not None else summaries(study)
    best = served_capacity([s for s in every if s.remeasure_of == number])
    return trial_at(study, best.number) if best is not None else None


def ties_with(study: optuna.Study, number: int, trials: list[TrialSummary] | None = None
              ) -> list[int]:
    """Feasible measured configurations whose TPOT interval overlaps trial ``number``'s
    (the data cannot say which is faster), fastest first."""
    if trials is None:
        assert study is not None, "the study or its summaries"
        trials = summaries(study)
    rows = trials
    every, feasible = estimates(study, rows), _feasible(rows)
    me = every.get(number)          # the pick itself may be any measured trial (trial:N)
    if me is None:
        return []
    return [e.number for e in sorted(every.values(), key=lambda e: e.tpot_ms)
            if e.number != number and e.number in feasible and e.overlaps(me)]
