"""The answer per load regime: for 1 user configuration A, for 16 users configuration B.

Every launch of a study whose workload names regimes also measured each regime
(:mod:`tuner.trial._regimes`), so one study answers each regime from the same
configurations (:class:`tuner.study.Answer`'s):

* a configuration is **eligible** for a regime when it is admissible (every gate passed,
  not refused by the final accuracy sample: a regime never buys speed with accuracy),
  every launch that measured the regime succeeded, and, with an SLA, every such launch
  was within it (p95 TPOT and TTFT);
* its figures are the mean over those launches;
* the regime's **pick** is the eligible configuration with the most goodput (requests
  meeting the SLA per second; every request without an SLA), then the most throughput;
* the regime's **front**: eligible configurations no other beats on goodput and accuracy.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
from typing import Any

from tuner.study._answer import Answer
from tuner.study._answer import Configuration
from tuner.study._summary import TrialSummary


#: how close to an SLA bound one launch's p95 may come before the answer says so
NEAR_BOUND = 0.05


@dataclass(frozen=True)
class RegimeRow:
    """One configuration's figures in one regime (means over the launches that measured
    it); ``failed``: why a launch's regime failed; ``eligible``: see the module doc."""

    configuration: Configuration
    launches: int = 0
    goodput_rps: float | None = None
    throughput_tok_s: float | None = None
    tpot_p95_ms: float | None = None
    ttft_p95_s: float | None = None
    sla_met: float | None = None
    within_sla: bool | None = None
    failed: str | None = None
    eligible: bool = False
    peak_running: int | None = None       # the most run at once / queued, over its launches
    peak_queued: int | None = None

    @property
    def number(self) -> int:
        return self.configuration.number

    def near_bound(self, sla: dict[str, float] | None) -> list[str]:
        """The SLA bounds its p95 figures meet by less than :data:`NEAR_BOUND` on one
        launch: a single reading that close can pass by noise (benchmarks/README.md,
        ``regime_search.py``), so a re-measure should decide."""
        if not sla or self.launches > 1 or not self.within_sla:
            return []
        out = []
        for key, value, unit in (("p95_tpot_ms", self.tpot_p95_ms, "ms"),
                                 ("p95_ttft_s", self.ttft_p95_s, "s")):
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
                          key=lambda r: (-(r.goodput_rps or 0.0), r.number))
        if self.pick is not None and self.pick in eligible:      # the pick's rule first
            eligible.remove(self.pick)
            eligible.insert(0, self.pick)
        near = sorted((r for r in self.rows if not r.eligible and r.failed is None
                       and r.configuration.admissible and r.tpot_p95_ms is not None),
                      key=lambda r: (r.tpot_p95_ms or 0.0, r.ttft_p95_s or 0.0, r.number))
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
            over = [(k, v, b) for k, v in (("p95_tpot_ms", r.tpot_p95_ms),
                                           ("p95_ttft_s", r.ttft_p95_s))
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
        alone = (row.peak_running is not None and row.peak_running <= 1
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


def _mean(values: list[float | None]) -> float | None:
    xs = [v for v in values if v is not None]
    return sum(xs) / len(xs) if xs else None


def _most(values: list[int | None]) -> int | None:
    xs = [v for v in values if v is not None]
    return max(xs) if xs else None


def _row(c: Configuration, figures: list[dict[str, Any]]) -> RegimeRow:
    failed = next((f.get("message") or "failed" for f in figures
                   if f.get("status") == "failed"), None)
    within = [f.get("within_sla") for f in figures]
    sla_ok = None if all(w is None for w in within) else all(w is True for w in within)
    return RegimeRow(
        configuration=c, launches=len(figures),
        goodput_rps=_mean([f.get("goodput_rps") for f in figures]),
        throughput_tok_s=_mean([f.get("throughput_tok_s") for f in figures]),
        tpot_p95_ms=_mean([f.get("tpot_p95_ms") for f in figures]),
        ttft_p95_s=_mean([f.get("ttft_p95_s") for f in figures]),
        sla_met=_mean([f.get("sla_met") for f in figures]), within_sla=sla_ok, failed=failed,
        peak_running=_most([f.get("peak_running") for f in figures]),
        peak_queued=_most([f.get("peak_queued") for f in figures]),
        eligible=(c.admissible and failed is None and sla_ok is not False
                  and any(f.get("goodput_rps") is not None for f in figures)))


def _front(rows: list[RegimeRow]) -> list[RegimeRow]:
    cands = [r for r in rows if r.eligible]

    def beaten(r: RegimeRow) -> bool:
        g, a = r.goodput_rps or 0.0, r.configuration.accuracy or 0.0
        return any((o.goodput_rps or 0.0) >= g and (o.configuration.accuracy or 0.0) >= a
                   and ((o.goodput_rps or 0.0) > g or (o.configuration.accuracy or 0.0) > a)
                   for o in cands)
    return sorted((r for r in cands if not beaten(r)),
                  key=lambda r: (-(r.goodput_rps or 0.0), r.number))


def regime_answers(answer: Answer, summaries: list[TrialSummary]) -> list[RegimeAnswer]:
    """The answer of each regime the study's launches measured, in the order first seen."""
    by_number = {s.number: s for s in summaries}
    order: dict[str, tuple[int, dict[str, float] | None]] = {}
    for s in summaries:
        for name, f in s.regimes.items():
            order.setdefault(name, (int(f.get("concurrency") or 1), f.get("sla")))
    out = []
    for name, (concurrency, sla) in order.items():
        rows = []
        for c in answer.configurations:
            figures = [by_number[n].regimes[name] for n in c.launch_numbers
                       if n in by_number and name in by_number[n].regimes]
            if figures:
                rows.append(_row(c, figures))
        eligible = [r for r in rows if r.eligible]
        pick = max(eligible, key=lambda r: (r.goodput_rps or 0.0, r.throughput_tok_s or 0.0,
                                            -r.number), default=None)
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
