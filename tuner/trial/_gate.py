"""The gate: rules that make a measured configuration infeasible, each saying why.

* ``collapse``: speculation on and the trial's accept length below the space's floor
  (default 1.2), or below ``collapse_fraction`` of a reference accept length (the same
  speculative settings with a plain LM head), when one is given.
* ``accuracy_drop``: against the baseline's per-question results, the drop in percentage
  points exceeds the space's tolerance **and** a one-sided exact McNemar test on the
  discordant pairs says the drop is real (p < alpha). A drop within noise is not gated.

Constraint values follow Optuna's convention (feasible iff every value <= 0).
"""

from __future__ import annotations

from pydantic import BaseModel
from pydantic import Field

from tuner.space import Gate
from tuner.trial._stats import Aggregates


class GateRule(BaseModel):
    rule: str
    fired: bool
    value: float | None = None
    threshold: float | None = None
    detail: str


class GateVerdict(BaseModel):
    passed: bool
    rules: list[GateRule] = Field(default_factory=list)
    constraints: dict[str, float] = Field(default_factory=dict)

    def fired(self) -> list[GateRule]:
        return [r for r in self.rules if r.fired]


class PairedAccuracy(BaseModel):
    pairs: int
    base_only: int        # baseline right, trial wrong
    trial_only: int       # trial right, baseline wrong
    drop_pp: float
    p_two_sided: float
    p_drop: float


def paired_accuracy(base: dict[str, bool], trial: dict[str, bool]) -> PairedAccuracy:
    common = sorted(set(base) & set(trial))
    b = sum(1 for q in common if base[q] and not trial[q])
    c = sum(1 for q in common if trial[q] and not base[q])
    n = len(common)
    drop = (b - c) / n * 100 if n else 0.0
    if b + c == 0:
        p2 = p1 = 1.0
    else:
        from scipy import stats

        p2 = float(stats.binomtest(min(b, c), b + c, 0.5).pvalue)
        p1 = float(stats.binomtest(b, b + c, 0.5, alternative="greater").pvalue)
    return PairedAccuracy(pairs=n, base_only=b, trial_only=c, drop_pp=drop, p_two_sided=p2,
                          p_drop=p1)


def evaluate(agg: Aggregates, *, speculative: bool, cfg: Gate,
             baseline_per_question: dict[str, bool] | None = None,
             reference_accept_length: float | None = None,
             collapse_fraction: float = 0.5,
             groups: dict[str, set[str]] | None = None) -> GateVerdict:
    """The gate's verdict on ``agg``. ``groups``: the scored questions by what they
    measure (:func:`tuner.trial._stats.question_groups`); with two or more, each is also
    tested apart, and a drop in any one fires the accuracy rule (a loss on one class must
    not hide in a pooled figure)."""
    rules: list[GateRule] = []
    constraints: dict[str, float] = {}
    if speculative:
        al = agg.accept_length
        if al is None:
            rules.append(GateRule(rule="collapse", fired=True, threshold=cfg.accept_length_floor,
                                  detail="speculation is on but no request reported verify "
                                         "rounds: accept length unknown"))
            constraints["accept_length_floor"] = 1.0
        else:
            floor = cfg.accept_length_floor
            why = f"accept length {al:.2f} vs floor {floor:.2f}"
            if reference_accept_length is not None:
                floor = max(floor, collapse_fraction * reference_accept_length)
                why += (f" and {collapse_fraction:.0%} of the plain-LM-head reference "
                        f"{reference_accept_length:.2f}")
            fired = al < floor
            rules.append(GateRule(rule="collapse", fired=fired, value=al, threshold=floor,
                                  detail=("speculation collapsed: " if fired else "ok: ") + why))
            constraints["accept_length_floor"] = floor - al
    else:
        constraints["accept_length_floor"] = -1.0
    if baseline_per_question is not None and agg.per_question is not None:
        pa = paired_accuracy(baseline_per_question, agg.per_question)
        significant = pa.p_drop < cfg.mcnemar_alpha
        excess = pa.drop_pp - cfg.max_accuracy_drop_pp
        fired = significant and excess > 0
        detail = (f"accuracy drop {pa.drop_pp:+.2f} pp against the baseline (negative: "
                  f"more right) on {pa.pairs} paired questions "
                  f"(baseline-only right {pa.base_only}, trial-only right {pa.trial_only}; "
                  f"McNemar exact p = {pa.p_two_sided:.3g}, one-sided p = {pa.p_drop:.3g})")
        value, constraint = pa.drop_pp, excess if significant else min(excess, 0.0)
        for name, ids in (groups or {}).items() if len(groups or {}) > 1 else ():
            part = paired_accuracy({q: v for q, v in baseline_per_question.items()
                                    if q in ids},
                                   {q: v for q, v in agg.per_question.items() if q in ids})
            if not part.pairs:
                continue
            sig = part.p_drop < cfg.mcnemar_alpha
            over = part.drop_pp - cfg.max_accuracy_drop_pp
            detail += (f"; {name}: {part.drop_pp:+.2f} pp on {part.pairs} "
                       f"(one-sided p = {part.p_drop:.3g})")
            if sig and over > 0 and not fired:
                fired, value = True, part.drop_pp
                detail += " - a drop there"
            constraint = max(constraint, over if sig else min(over, 0.0))
        rules.append(GateRule(
            rule="accuracy_drop", fired=fired, value=value,
            threshold=cfg.max_accuracy_drop_pp,
            detail=detail + ("" if fired else " - within tolerance or not significant")))
        constraints["accuracy_drop"] = constraint
    return GateVerdict(passed=not any(r.fired for r in rules), rules=rules,
                       constraints=constraints)
