"""The answer per load regime: for 1 user configuration A, for 16 users configuration B.

Every launch of a study whose workload names regimes also measured each regime
(:mod:`tuner.trial._regimes`), so one study answers each regime from the same
configurations (:class:`tuner.study.Answer`'s):

* a configuration is **eligible** for a regime when it is admissible (every gate passed,
  not refused by the final accuracy sample: a regime never buys speed with accuracy),
  every launch that measured the regime succeeded, and, with an SLA, every such launch
  was within it (p95 TPOT and TTFT);
* its figures pool those launches, each as :class:`tuner.trial.RegimeResult` declares it
  (:class:`tuner.trial.Pool`: TPOT, TTFT, throughput and goodput the mean, the load the
  most, within the SLA only when every launch was, the first failure's message), into one
  record of a launch's shape (:func:`pooled`);
* the regime's **pick** is the eligible configuration with the most goodput (requests
  meeting the SLA per second; every request without an SLA), then the most throughput;
* the regime's **front**: eligible configurations no other beats on goodput and accuracy.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from typing import Any
from typing import TypeVar

from tuner.study._answer import Answer
from tuner.study._answer import Configuration
from tuner.study._record import RegimeRecord
from tuner.study._summary import TrialSummary
from tuner.trial import Pool
from tuner.trial import RegimeResult
from tuner.trial import pools


#: how close to an SLA bound one launch's p95 may come before the answer says so
NEAR_BOUND = 0.05


@dataclass(frozen=True)
class RegimeRow:
    """One configuration in one regime: ``figures``, the records of the ``launches`` that
    measured it pooled into one (:func:`pooled`); ``eligible``: see the module doc."""

    configuration: Configuration
    figures: RegimeRecord
    launches: int = 0
    eligible: bool = False

    @property
    def number(self) -> int:
        return self.configuration.number

    @property
    def failed(self) -> str | None:
        """Why a launch's regime failed (the first failed launch's message), or None."""
        f = self.figures
        return (f.message or "failed") if f.status == "failed" else None

    def near_bound(self, sla: dict[str, float] | None) -> list[str]:
        """The SLA bounds its p95 figures meet by less than :data:`NEAR_BOUND` on one
        launch: a single reading that close can pass by noise (benchmarks/README.md,
        ``regime_search.py``), so a re-measure should decide."""
        f = self.figures
        if not sla or self.launches > 1 or not f.within_sla:
            return []
        out = []
        for key, value, unit in (("p95_tpot_ms", f.tpot_p95_ms, "ms"),
                                 ("p95_ttft_s", f.ttft_p95_s, "s")):
            bound = sla.get(key)
            if bound and value is not None and value > bound * (1 - NEAR_BOUND):
                out.append(f"{key.split('_')[1].upper()} p95 {value:.3g} {unit} against "
                           f"{bound:g} {unit}")
        return out


@dataclass(frozen=True)
class RegimeAnswer:
    """One regime: its load, SLA, rows (every configuration that measured it), pick and
    front."""

    name: str
    concurrency: int
    sla: dict[str, float] | None
    rows: list[RegimeRow] = field(default_factory=list)
    pick: RegimeRow | None = None
    front: list[RegimeRow] = field(default_factory=list)

    def centers(self, most: int = 3) -> list[RegimeRow]:
        """The first ``most`` places to look, best first: the eligible configurations by
        goodput, then the other admissible ones nearest the SLA. A center whose
        neighbours are all measured hands over to the next (one reading near the bound
        can put the way down on a neighbour: gamma 3 read 66.3 ms against gamma 4's 66.0,
        and gamma 2 met the 60 ms bound)."""
        eligible = sorted((r for r in self.rows if r.eligible),
                          key=lambda r: (-(r.figures.goodput_rps or 0.0), r.number))
        if self.pick is not None and self.pick in eligible:      # the pick's rule first
            eligible.remove(self.pick)
            eligible.insert(0, self.pick)
        near = sorted((r for r in self.rows if not r.eligible and r.failed is None
                       and r.configuration.admissible and r.figures.tpot_p95_ms is not None),
                      key=lambda r: (r.figures.tpot_p95_ms or 0.0,
                                     r.figures.ttft_p95_s or 0.0, r.number))
        return [*eligible, *near][:most]

    def nearest_miss(self) -> tuple[RegimeRow, list[tuple[str, float, float]]] | None:
        """With an SLA and no eligible configuration: the admissible measured one that
        misses it by the least (its worst bound's relative miss) and, per bound it misses,
        (key, its p95 figure, the bound); None when something is eligible, or nothing
        admissible measured the regime."""
        if not self.sla or any(r.eligible for r in self.rows):
            return None
        misses = []
        for r in self.rows:
            if r.failed is not None or not r.configuration.admissible:
                continue
            over = [(k, v, b) for k, v in (("p95_tpot_ms", r.figures.tpot_p95_ms),
                                           ("p95_ttft_s", r.figures.ttft_p95_s))
                    if (b := self.sla.get(k)) and v is not None and v > b]
            if over:
                misses.append((max(v / b for _, v, b in over), r.number, r, over))
        if not misses:
            return None
        _, _, row, over = min(misses, key=lambda m: (m[0], m[1]))
        return row, over

    def infeasibility(self) -> str | None:
        """One line when no measured configuration meets the SLA: the nearest, by how much
        it misses, and what would help (None: something meets it, or nothing measured)."""
        near = self.nearest_miss()
        if near is None:
            return None
        from tuner.errors import counted

        row, over = near
        unit = {"p95_tpot_ms": ("TPOT", "ms"), "p95_ttft_s": ("TTFT", "s")}
        misses = ", ".join(f"p95 {unit[k][0]} {v:.3g} {unit[k][1]} against {b:g} "
                           f"({v / b - 1:.0%} over)" for k, v, b in over)
        looser = ",".join(f"{k}={v * 1.05:.3g}" for k, v, _ in over)
        measured = counted(len(self.rows), "configuration")
        running = row.figures.peak_running
        alone = (running is not None and running <= 1
                 and all(k == "p95_tpot_ms" for k, _, _ in over))
        fewer = "" if alone else "fewer users or "
        why = ("; fewer users would not: it ran one request at a time, so its TPOT is "
               "batch 1's" if alone else "")
        return (f"regime {self.name!r} ({counted(self.concurrency, 'user', 'users')}): none "
                f"of the {measured} measured meets {self.describe_sla()}; the nearest, "
                f"#{row.number} ({_described(row.configuration.config)}), misses: {misses}; "
                f"{fewer}a looser SLA (e.g. --regime {self.name}:{self.concurrency}:{looser}) "
                f"would help{why}")

    def describe_sla(self) -> str:
        if not self.sla:
            return "no SLA"
        parts = {"p95_tpot_ms": "p95 TPOT <= {:g} ms", "p95_ttft_s": "p95 TTFT <= {:g} s"}
        return ", ".join(parts[k].format(v) for k, v in self.sla.items()
                         if k in parts and v is not None) or "no SLA"


def _described(config: dict[str, Any]) -> str:
    from tuner.space import value_key

    return " ".join(f"{k}={value_key(v)}" for k, v in config.items())


Launch = TypeVar("Launch", bound=RegimeResult)


def _numbers(values: Sequence[object]) -> list[float]:
    return [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]


def _mean(values: Sequence[object], _failed: list[bool]) -> float | None:
    xs = _numbers(values)
    return sum(xs) / len(xs) if xs else None


def _most(values: Sequence[object], _failed: list[bool]) -> float | None:
    xs = _numbers(values)
    return max(xs) if xs else None


def _sum(values: Sequence[object], _failed: list[bool]) -> float | None:
    xs = _numbers(values)
    return sum(xs) if xs else None


def _all(values: Sequence[object], _failed: list[bool]) -> bool | None:
    return None if all(v is None for v in values) else all(v is True for v in values)


#: each way a figure pools (:class:`tuner.trial.Pool`): (the launches' values, which of
#: them failed) -> the pooled value
RULES: dict[Pool, Callable[[Sequence[object], list[bool]], object]] = {
    Pool.SAME: lambda values, _failed: values[0],
    Pool.MEAN: _mean,
    Pool.MOST: _most,
    Pool.SUM: _sum,
    Pool.ALL: _all,
    Pool.ANY_FAILED: lambda _values, failed: "failed" if any(failed) else "ok",
    Pool.FIRST_FAILURE: lambda values, failed: next(
        (v for v, f in zip(values, failed, strict=True) if f), None),
}


def pooled(launches: Sequence[Launch]) -> Launch:
    """One record of ``launches`` (one configuration's, in one regime; at least one), of
    their type: each field pooled as it declares (:class:`tuner.trial.Pool`)."""
    kind = type(launches[0])
    failed = [g.status == "failed" for g in launches]
    return kind.model_validate({name: RULES[rule]([getattr(g, name) for g in launches], failed)
                                for name, rule in pools(kind).items()})


def _row(c: Configuration, launches: list[RegimeRecord]) -> RegimeRow:
    f = pooled(launches)
    return RegimeRow(configuration=c, figures=f, launches=len(launches),
                     eligible=(c.admissible and f.status == "ok" and f.within_sla is not False
                               and f.goodput_rps is not None))


def _front(rows: list[RegimeRow]) -> list[RegimeRow]:
    cands = [r for r in rows if r.eligible]

    def beaten(r: RegimeRow) -> bool:
        g, a = r.figures.goodput_rps or 0.0, r.configuration.accuracy or 0.0
        return any((o.figures.goodput_rps or 0.0) >= g
                   and (o.configuration.accuracy or 0.0) >= a
                   and ((o.figures.goodput_rps or 0.0) > g
                        or (o.configuration.accuracy or 0.0) > a)
                   for o in cands)
    return sorted((r for r in cands if not beaten(r)),
                  key=lambda r: (-(r.figures.goodput_rps or 0.0), r.number))


def regime_answers(answer: Answer, summaries: list[TrialSummary]) -> list[RegimeAnswer]:
    """The answer of each regime the study's launches measured, in the order first seen."""
    by_number = {s.number: s for s in summaries}
    order: dict[str, tuple[int, dict[str, float] | None]] = {}
    for s in summaries:
        for name, f in s.regimes.items():
            order.setdefault(name, (f.concurrency, f.sla))
    out = []
    for name, (concurrency, sla) in order.items():
        rows = []
        for c in answer.configurations:
            launches = [by_number[n].regimes[name] for n in c.launch_numbers
                        if n in by_number and name in by_number[n].regimes]
            if launches:
                rows.append(_row(c, launches))
        eligible = [r for r in rows if r.eligible]
        pick = max(eligible, key=lambda r: (r.figures.goodput_rps or 0.0,
                                            r.figures.throughput_tok_s or 0.0, -r.number),
                   default=None)
        out.append(RegimeAnswer(name=name, concurrency=concurrency, sla=sla, rows=rows,
                                pick=pick, front=_front(rows)))
    return out


def regime_named(answers: list[RegimeAnswer], name: str) -> RegimeAnswer:
    """The regime ``name`` (:class:`tuner.errors.UserError` naming those there are)."""
    from tuner.errors import UserError

    for a in answers:
        if a.name == name:
            return a
    known = ", ".join(repr(a.name) for a in answers) or "none: the workload named no regimes"
    raise UserError(f"--regime {name!r}: the study measured no such regime (it has {known})")
