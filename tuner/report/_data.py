"""A study as tables: one row per trial, the Pareto front, failures, per-knob effects.

Kinds of trial: ``feasible`` (measured, every constraint met), ``gated`` (measured, a gate
rule fired: collapse or accuracy drop), ``failed`` (no measurement: crash, OOM, timeout,
unsupported knob, effect mismatch...). Repeats of a measured configuration (and the
stored failure stand-ins of older studies) are bookkeeping and never shown as trials of
their own; the finals' re-measurements are pooled into the row of the configuration they
re-measured (its TPOT is then the pooled estimate, :func:`tuner.study.estimates`, and
``launches`` says how many launches it pools).
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
from typing import Any

import pandas as pd

from tuner.errors import clip
from tuner.report._accuracy import AccuracyGate
from tuner.report._accuracy import accuracy_gate
from tuner.space import value_key
from tuner.study import Role
from tuner.study import TrialSummary
from tuner.study import context_of
from tuner.study import estimates
from tuner.study import feasible_best
from tuner.study import summaries
from tuner.study import ties_with


@dataclass
class StudyData:
    name: str
    trials: pd.DataFrame
    knobs: list[str]
    baseline: dict[str, Any] | None
    simulated: bool
    with_accuracy: bool
    #: Trial numbers on the Pareto front of the figures shown (pooled TPOT, accuracy).
    front_numbers: frozenset[int] = frozenset()
    #: The trial ``tuner export --pick fastest`` takes (:func:`tuner.study.feasible_best`).
    pick_number: int | None = None
    #: Feasible trials whose TPOT interval overlaps the pick's (:func:`tuner.study.ties_with`).
    tie_numbers: frozenset[int] = frozenset()
    #: knob -> importance for TPOT over the measured configurations (PED-ANOVA, sums to 1);
    #: empty when there are too few of them (:func:`tpot_importance`).
    importance: dict[str, float] = field(default_factory=dict)
    #: the accuracy gate's comparisons and their power (None: no accuracy objective)
    accuracy: AccuracyGate | None = None
    #: what the study was measured on (``math (GSM8K)``, ``mix code 0.60 / chat 0.40``)
    workload: str = ""

    @property
    def measured(self) -> pd.DataFrame:
        return self.trials[~self.trials["kind"].isin(("failed", "pruned"))]

    @property
    def feasible(self) -> pd.DataFrame:
        return self.trials[self.trials["kind"] == "feasible"]

    def front(self) -> pd.DataFrame:
        """The feasible Pareto front's trials, fastest first."""
        f = self.feasible[self.feasible["number"].isin(self.front_numbers)]
        return f.sort_values(["tpot_ms", "accuracy"], ascending=[True, False])

    def failures(self) -> pd.DataFrame:
        f = self.trials[self.trials["kind"] == "failed"]
        if f.empty:
            return pd.DataFrame(columns=["reason", "trials", "example"])
        rows = []
        for reason, grp in f.groupby("reason", dropna=False):
            first = grp.iloc[0]
            rows.append({"reason": reason or "unknown", "trials": len(grp),
                         "example": f"#{first['number']}: {clip(first['message'], 160)}"})
        return pd.DataFrame(rows).sort_values("trials", ascending=False)

    def knob_effects(self) -> pd.DataFrame:
        """Per knob value: trials, failures, median and best TPOT of feasible trials."""
        rows = []
        t = self.trials
        for knob in self.knobs:
            col = f"knob.{knob}"
            if col not in t:
                continue
            for value, grp in t.groupby(col, dropna=True):
                feas = grp[grp["kind"] == "feasible"]["tpot_ms"]
                rows.append({"knob": knob, "value": value, "trials": len(grp),
                             "failed": int((grp["kind"] == "failed").sum()),
                             "gated": int((grp["kind"] == "gated").sum()),
                             "median_tpot_ms": feas.median() if len(feas) else None,
                             "best_tpot_ms": feas.min() if len(feas) else None})
        return pd.DataFrame(rows)


def _kind(t: TrialSummary) -> str:
    if t.state == "PRUNED":
        return "pruned"       # stopped early: its figures cover part of the workload
    if t.state != "COMPLETE" or not t.values:
        return "failed"
    return "feasible" if t.feasible else "gated"


def collect(study: Any) -> StudyData:
    knobs: list[str] = []
    rows = []
    baseline = None
    every = summaries(study)
    pooled = estimates(study, every)
    for t in every:
        if t.role in (Role.FAILURE_TWIN, Role.DUPLICATE, Role.REMEASURE) or t.recovered:
            continue
        if t.state not in ("COMPLETE", "FAIL", "PRUNED"):
            continue
        for k in t.config:
            if k not in knobs:
                knobs.append(k)
        ci: list[Any] = list(t.tpot_ci95) if t.tpot_ci95 else [None, None]
        e = pooled.get(t.number)
        tpot, launches = t.tpot_ms, 1
        if e is not None and e.remeasured:
            tpot, ci, launches = e.tpot_ms, [e.low, e.high], e.launches
        aci: list[Any] = list(t.accuracy_ci95) if t.accuracy_ci95 else [None, None]
        row = {
            "number": t.number, "role": t.role.value, "kind": _kind(t),
            "tpot_ms": tpot, "tpot_lo": ci[0], "tpot_hi": ci[1], "launches": launches,
            "first_reading_ms": t.tpot_ms,
            "decode_tok_s": t.decode_tok_s, "accuracy": t.accuracy,
            "acc_lo": aci[0], "acc_hi": aci[1], "accept_length": t.accept_length,
            "ttft_s": t.ttft_s, "class_tpot_ms": t.class_tpot_ms or None,
            "reason": t.reason, "message": t.message,
            "gate": ", ".join(t.gate), "config": t.config,
            "config_hash": t.config_hash, "started_at": t.started_at,
            "completed_at": t.completed_at,
            **{f"knob.{k}": value_key(v) for k, v in t.config.items()},
        }
        rows.append(row)
        if t.role == Role.BASELINE and row["kind"] != "failed":
            baseline = row
    df = pd.DataFrame(rows)
    if df.empty:
        df = pd.DataFrame(columns=["number", "role", "kind", "tpot_ms", "accuracy", "reason",
                                   "message", "config"])
    front = _undominated(df)
    df = _typed(df, knobs, front, baseline)
    pick = feasible_best(study, every)
    with_accuracy = len(study.directions) > 1
    return StudyData(name=study.study_name, trials=df, knobs=knobs, baseline=baseline,
                     simulated=context_of(study).simulated,
                     with_accuracy=with_accuracy,
                     front_numbers=front,
                     pick_number=pick.number if pick is not None else None,
                     tie_numbers=frozenset(ties_with(study, pick.number, every))
                     if pick is not None else frozenset(),
                     importance=tpot_importance(study, df),
                     accuracy=accuracy_gate(every, _gate(study), pick.number if pick else None)
                     if with_accuracy else None, workload=workload_text(study))


def workload_text(study: Any) -> str:
    """What the study's trials were measured on, in words (empty when unrecorded)."""
    from tuner.space import Workload

    wl = Workload.from_record(context_of(study).workload)
    return wl.describe_content() if wl is not None else ""


def _undominated(df: pd.DataFrame) -> frozenset[int]:
    """The report's Pareto front: the feasible rows no other feasible row beats on the
    figures the report shows (a re-measured configuration's pooled TPOT, not its first
    reading, and accuracy). Chosen on first readings and shown with pooled ones, a front
    point could be slower and no more accurate than a row listed under it."""
    if df.empty or "kind" not in df:
        return frozenset()
    feas = df[df["kind"] == "feasible"]
    acc = feas["accuracy"].astype(float).fillna(0.0)
    tpot = feas["tpot_ms"].astype(float)
    keep = set()
    for i, n in enumerate(feas["number"]):
        t, a = float(tpot.iloc[i]), float(acc.iloc[i])
        others = feas["number"] != n
        if not ((tpot <= t) & (acc >= a) & ((tpot < t) | (acc > a)) & others).any():
            keep.add(int(n))
    return frozenset(keep)


def _gate(study: Any) -> Any:
    """The gate the sweep applied: the stored space's (the defaults when it has none)."""
    from tuner.errors import UserError
    from tuner.space import Gate
    from tuner.space import parse_space

    text = context_of(study).space_yaml
    try:
        return parse_space(text, file="the stored space").spec.gate if text else Gate()
    except UserError:
        return Gate()


def _typed(df: pd.DataFrame, knobs: list[str], front: frozenset[int],
           baseline: dict[str, Any] | None) -> pd.DataFrame:
    """Derived columns (``speedup`` over the baseline, 1.0 for it; ``on_front``) and
    integer knobs as integers (pandas' nullable Int64: a knob inactive on some trials would
    otherwise turn 3 into 3.0)."""
    base = baseline["tpot_ms"] if baseline else None
    df["speedup"] = (base / df["tpot_ms"]) if base else None
    df["on_front"] = df["number"].isin(front)
    for k in knobs:
        col = f"knob.{k}"
        values = df[col].dropna() if col in df else pd.Series(dtype=object)
        if len(values) and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            df[col] = df[col].astype("Int64")
    return df


def tpot_importance(study: Any, df: pd.DataFrame, min_configs: int = 6) -> dict[str, float]:
    """Each sampled knob's importance for TPOT over the measured configurations (feasible
    and gated, pooled TPOT), by Optuna's PED-ANOVA (no scikit-learn needed; conditional
    knobs included); empty below ``min_configs`` configurations."""
    import optuna

    measured = df[df["kind"] != "failed"]
    if len(measured) < min_configs:
        return {}
    tpot = dict(zip(measured["number"], measured["tpot_ms"], strict=True))
    view = optuna.create_study(directions=["minimize"])
    for t in study.get_trials(deepcopy=False):
        if t.number in tpot and t.params:
            view.add_trial(optuna.trial.create_trial(
                params=t.params, distributions=t.distributions, values=[float(tpot[t.number])]))
    try:
        found = optuna.importance.get_param_importances(
            view, evaluator=optuna.importance.PedAnovaImportanceEvaluator())
    except (ValueError, RuntimeError):       # too few distinct values to split on
        return {}
    return {k: float(v) for k, v in found.items()}


def differs(row: Any, baseline: dict[str, Any] | None) -> str:
    if baseline is None:
        return ""
    base = baseline["config"]
    cfg = row["config"]
    return " ".join(f"{k}={v}" for k, v in cfg.items() if base.get(k) != v) or "(baseline)"
