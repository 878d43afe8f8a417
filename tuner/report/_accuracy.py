"""What the accuracy gate could see: each paired comparison with the baseline and its power.

Screening compares every measured trial with the baseline's first launch on the space's
few questions; the final sample (``tuner sweep --final-questions``) compares every finals
launch with the baseline's own launch on the larger sample. For each, the report states
the paired figures and the smallest true drop the gate would refuse with 80% probability
at that sample size and the discordance seen (:func:`tuner.trial.detectable_drop`), so a
reader knows what "passed" rules out and what it does not.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from tuner.errors import counted
from tuner.space import Gate
from tuner.study import Role
from tuner.study import TrialSummary
from tuner.study.pooled import final_baseline_runs


POWER = 0.8


@dataclass
class Stage:
    """One kind of comparison (``screening`` or ``final``) and what it could detect."""

    name: str
    launches: int = 0                    # comparisons made
    configurations: int = 0              # distinct configurations compared
    questions: int = 0                   # the typical (median) number of paired questions
    discordance: float = 0.0             # median share of questions answered differently
    detectable_pp: float | None = None   # 80%-power drop at those two medians (None: none)
    refused: int = 0                     # configurations refused

    def sentence(self, gate: Gate) -> str:
        if not self.launches:
            return f"{self.name}: no comparison with the baseline was made"
        power = (f"a true drop of {self.detectable_pp:.1f} pp is refused with "
                 f"{POWER:.0%} probability" if self.detectable_pp is not None else
                 f"no drop is refused with {POWER:.0%} probability")
        return (f"{self.name}: {counted(self.configurations, 'configuration')} on "
                f"{self.questions} "
                f"paired questions, {self.refused} refused; answers differing on "
                f"{self.discordance:.1%} of questions (median), {power} (the gate: drop > "
                f"{gate.max_accuracy_drop_pp:g} pp and one-sided McNemar p < "
                f"{gate.mcnemar_alpha:g})")


@dataclass
class AccuracyGate:
    gate: Gate
    screening: Stage
    final: Stage
    #: one row per finals launch on the final sample: its figures against the baseline's
    final_rows: list[dict[str, Any]] = field(default_factory=list)
    #: the pick's own comparison (its last on the final sample, else its screening one)
    pick: dict[str, Any] | None = None

    def sentences(self) -> list[str]:
        lines = [self.screening.sentence(self.gate)]
        if self.final.launches:
            lines.append(self.final.sentence(self.gate))
        else:
            lines.append("no final accuracy sample (tuner sweep --final-questions N): the "
                         "pick's accuracy rests on the screening above")
        if self.pick is not None and self.pick.get("baseline"):
            lines.append(f"the pick is the baseline: no faster configuration passed the "
                         f"final sample within the budget ({self.final.refused} refused); "
                         f"more --trials give the finals more launches")
        elif self.pick is not None:
            p = self.pick
            where = "the final sample" if p.get("launch") is not None else "screening"
            power = (f"{POWER:.0%} power against a drop of {p['detectable_pp']:.1f} pp"
                     if p["detectable_pp"] else f"under {POWER:.0%} power against any drop")
            change = -p["drop_pp"]      # drop_pp > 0: the pick answers fewer correctly
            lines.append(f"the pick #{p['trial']}: accuracy {change:+.2f} pp against the "
                         f"baseline ({'worse' if change < 0 else 'not worse'}) on "
                         f"{where}'s {p['questions']} paired questions (one-sided p = "
                         f"{p['p_drop']:.3g}; {power})")
        return lines


def _compare(base: dict[str, bool], other: dict[str, bool]) -> dict[str, Any]:
    from tuner.trial import paired_accuracy

    pa = paired_accuracy(base, other)
    r = (pa.base_only + pa.trial_only) / pa.pairs if pa.pairs else 0.0
    return {"questions": pa.pairs, "drop_pp": pa.drop_pp, "base_only": pa.base_only,
            "trial_only": pa.trial_only, "p_drop": pa.p_drop, "discordance": r}


def _with_power(row: dict[str, Any], gate: Gate) -> dict[str, Any]:
    """``row`` with the drop its gate refuses with :data:`POWER` probability (a search over
    exact binomial sums: computed only for the rows shown, not every screened trial)."""
    from tuner.trial import detectable_drop

    return {**row, "detectable_pp": detectable_drop(row["questions"], row["discordance"],
                                                    gate, POWER)}


def _stage(name: str, rows: list[dict[str, Any]], gate: Gate) -> Stage:
    """Medians over configurations (each one's last comparison), not launches: the
    finals launch the pick several times."""
    from tuner.trial import detectable_drop

    if not rows:
        return Stage(name)
    last = {r["trial"]: r for r in rows}
    n = int(statistics.median(r["questions"] for r in last.values()))
    r = float(statistics.median(x["discordance"] for x in last.values()))
    return Stage(name, launches=len(rows), configurations=len(last), questions=n,
                 discordance=r, detectable_pp=detectable_drop(n, r, gate, POWER),
                 refused=sum(bool(x["refused"]) for x in last.values()))


def accuracy_gate(rows: list[TrialSummary], gate: Gate, pick: int | None = None
                  ) -> AccuracyGate:
    """The screening and final-sample comparisons of ``rows`` (a study's summaries), and
    trial ``pick``'s own (none for the baseline itself)."""
    base = next((s for s in rows if s.role == Role.BASELINE and s.state == "COMPLETE"
                 and s.per_question), None)
    screening: list[dict[str, Any]] = []
    final: list[dict[str, Any]] = []
    if base is not None:
        assert base.per_question is not None
        for s in rows:
            if (s.role == Role.TRIAL and s.measured and s.state == "COMPLETE"
                    and s.per_question):
                screening.append({"trial": s.number,
                                  **_compare(base.per_question, s.per_question),
                                  "refused": "accuracy_drop" in s.gate})
        fb = [s for s in final_baseline_runs(rows, base.number)
              if s.state == "COMPLETE" and s.per_question]
        if fb:
            ref = fb[-1].per_question
            assert ref is not None
            for s in rows:
                if (s.role == Role.REMEASURE and s.final_sample and s.state == "COMPLETE"
                        and s.remeasure_of != base.number and s.per_question):
                    final.append(_with_power({"trial": s.remeasure_of, "launch": s.number,
                                              **_compare(ref, s.per_question),
                                              "refused": "accuracy_drop" in s.gate}, gate))
    mine: list[dict[str, Any]] = [r for r in final if r["trial"] == pick] or [
        r for r in screening if r["trial"] == pick]
    if final and base is not None and pick == base.number:
        mine = [{"baseline": True}]
    pick_row = mine[-1] if mine else None
    if pick_row is not None and "questions" in pick_row and "detectable_pp" not in pick_row:
        pick_row = _with_power(pick_row, gate)
    return AccuracyGate(gate, _stage("screening", screening, gate),
                        _stage("final sample", final, gate), final, pick_row)


def final_table(ag: AccuracyGate) -> Any:
    """The final-sample comparisons as a table that reads as text (pandas)."""
    import pandas as pd

    return pd.DataFrame([{
        "trial": f"#{r['trial']}", "launch": f"#{r['launch']}", "questions": r["questions"],
        "drop pp": f"{r['drop_pp']:+.2f}",
        "baseline-only / trial-only right": f"{r['base_only']} / {r['trial_only']}",
        "one-sided p": f"{r['p_drop']:.3g}",
        f"{POWER:.0%}-power drop": (f"{r['detectable_pp']:.1f} pp" if r["detectable_pp"]
                                    else "-"),
        "verdict": "refused" if r["refused"] else "passed"} for r in ag.final_rows])


def as_dict(ag: AccuracyGate) -> dict[str, Any]:
    """``tuner report --json``'s ``accuracy_gate``."""
    from dataclasses import asdict

    return {"gate": ag.gate.model_dump(), "power": POWER,
            "screening": asdict(ag.screening), "final_sample": asdict(ag.final),
            "final_launches": ag.final_rows, "pick": ag.pick, "summary": ag.sentences()}
