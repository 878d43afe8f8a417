"""A study as tables: one row per configuration, the pick, the front, failures, per-knob
effects, all read from the study's :class:`tuner.study.Answer` (the terminal report, the
HTML page, the CSV and the JSON show the same figures and verdicts as export and the sweep).

Kinds: ``feasible`` (measured, every gate passed), ``gated`` (a screening gate fired:
collapse or accuracy drop), ``refused`` (the final accuracy sample refused it or a
configuration with its numerics), ``failed`` (no measurement: crash, OOM, timeout,
unsupported knob, effect mismatch...), ``pruned`` (stopped early). Repeats and the finals'
re-measurements are pooled into the row of the configuration they measured (``launches``).
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
from typing import TYPE_CHECKING
from typing import Any

import pandas as pd

from tuner.errors import clip
from tuner.errors import counted
from tuner.report._accuracy import AccuracyGate
from tuner.report._accuracy import accuracy_gate
from tuner.report._budget import BudgetSplit
from tuner.report._budget import budget_split
from tuner.report._overhead import LaunchOverhead
from tuner.report._overhead import launch_overhead
from tuner.space import value_key
from tuner.study import Answer
from tuner.study import Configuration
from tuner.study import RegimeAnswer
from tuner.study import Role
from tuner.study import StudyContext
from tuner.study import regime_answers
from tuner.trial import DERIVED_TWIN
from tuner.trial import clock_label


if TYPE_CHECKING:
    from tuner.space import Gate
    from tuner.study import TrialSummary
    from tuner.study.storages import StudyView


@dataclass
class StudyData:
    name: str
    trials: pd.DataFrame
    knobs: list[str]
    baseline: dict[str, Any] | None
    simulated: bool
    with_accuracy: bool
    #: the study's answer (configurations, front, pick, ties): :func:`tuner.study.answer_of`
    answer: Answer | None = None
    #: knob -> importance for TPOT over the measured configurations (PED-ANOVA, sums to 1);
    #: empty when there are too few of them (:func:`tpot_importance`).
    importance: dict[str, float] = field(default_factory=dict)
    #: the accuracy gate's comparisons and their power (None: no accuracy objective)
    accuracy: AccuracyGate | None = None
    #: what the study was measured on (``math (GSM8K)``, ``mix code 0.60 / chat 0.40``)
    workload: str = ""
    #: the answer of each load regime its launches measured (:func:`regime_answers`)
    regimes: list[RegimeAnswer] = field(default_factory=list)
    #: the share of the launches' machine time spent starting servers (None: unrecorded)
    overhead: LaunchOverhead | None = None
    #: where the launches went, batch 1's objective and each regime's (None: no regime)
    budget: BudgetSplit | None = None
    #: the simulator's twin of the model when one launch said DERIVED (None otherwise)
    twin: str | None = None

    @property
    def clock(self) -> str:
        """What the figures are (``simulated machine time, DERIVED twin``, ...)."""
        return clock_label(self.simulated, self.twin)

    @property
    def pick_number(self) -> int | None:
        """The configuration ``tuner export --pick fastest`` takes."""
        pick = self.answer.pick if self.answer is not None else None
        return pick.number if pick is not None else None

    @property
    def front_numbers(self) -> frozenset[int]:
        return frozenset(c.number for c in self.answer.front) if self.answer else frozenset()

    @property
    def measured(self) -> pd.DataFrame:
        return self.trials[~self.trials["kind"].isin(("failed", "pruned"))]

    @property
    def feasible(self) -> pd.DataFrame:
        return self.trials[self.trials["kind"] == "feasible"]

    def summary(self) -> str:
        """``12 configurations: 8 feasible (3 confirmed by the finals), 2 gated, ...``."""
        counts = self.trials["kind"].value_counts().to_dict() if "kind" in self.trials else {}
        total = sum(counts.values())
        parts = [f"{counts[k]} {'stopped early' if k == 'pruned' else k}"
                 for k in ("feasible", "gated", "refused", "failed", "pruned")
                 if counts.get(k)]
        confirmed = self.answer.confirmed if self.answer is not None else 0
        if counts.get("feasible"):
            parts[0] += (f" ({confirmed} confirmed by the finals)" if confirmed else
                         " (none re-measured: each is 1 launch, unconfirmed)")
        return counted(total, "configuration") + (": " + ", ".join(parts) if parts else "")

    def pick(self) -> pd.DataFrame:
        """The pick's row (empty before there is one)."""
        return self.trials[self.trials["number"] == self.pick_number]

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
                             "gated": int(grp["kind"].isin(("gated", "refused")).sum()),
                             "median_tpot_ms": feas.median() if len(feas) else None,
                             "best_tpot_ms": feas.min() if len(feas) else None})
        return pd.DataFrame(rows)


def _row(c: Configuration) -> dict[str, Any]:
    """One configuration as a table row: the figures every output shows (TPOT pooled over
    its launches, its mean accept length, its one accuracy with its sample and the paired
    comparison, its configuration at the capacity it is exported with)."""
    t = c.first
    ci: list[Any] = list(c.tpot_ci95) if c.tpot_ci95 else [None, None]
    aci: list[Any] = list(c.accuracy_ci95) if c.accuracy_ci95 else [None, None]
    acc = c.accuracy_figure
    config = c.served_config
    return {
        "number": c.number, "role": c.role.value, "kind": c.kind,
        "tpot_ms": c.tpot_ms, "tpot_lo": ci[0], "tpot_hi": ci[1], "launches": c.launches,
        "confirmed": c.confirmed, "first_reading_ms": c.first_reading_ms,
        "decode_tok_s": t.decode_tok_s, "accuracy": c.accuracy,
        "acc_lo": aci[0], "acc_hi": aci[1],
        "accuracy_questions": acc.questions if acc is not None else None,
        "accuracy_sample": acc.sample if acc is not None else None,
        "screening_accuracy": t.accuracy,
        "baseline_accuracy": acc.baseline if acc is not None else None,
        "paired_drop_pp": acc.drop_pp if acc is not None else None,
        "p_drop": acc.p_drop if acc is not None else None,
        "accuracy_by_kind": ", ".join(acc.kind_text(k) for k in acc.by_kind)
        if acc is not None and acc.by_kind else None,
        "accept_length": c.accept_length,
        "ttft_s": t.ttft_s, "class_tpot_ms": t.class_tpot_ms or None,
        "startup_s": t.startup_s,                 # its first launch's, machine seconds
        "reason": t.reason, "message": t.message,
        "gate": ", ".join(t.gate), "verdict": c.status, "pick": c.is_pick,
        "tie": c.tie, "final_sample_passed": c.final_passed, "config": config,
        "config_hash": t.config_hash, "started_at": t.started_at,
        "completed_at": t.completed_at,
        **{f"knob.{k}": value_key(v) for k, v in config.items()},
    }


def collect(study: StudyView) -> StudyData:
    every = study.summaries()
    answer = study.answer(every)
    context = study.context()
    knobs = list(dict.fromkeys(k for c in answer.configurations for k in c.served_config))
    rows = [_row(c) for c in answer.configurations]
    baseline = next((r for r in rows if r["role"] == Role.BASELINE.value
                     and r["kind"] != "failed"), None)
    df = pd.DataFrame(rows)
    if df.empty:
        df = pd.DataFrame(columns=["number", "role", "kind", "tpot_ms", "accuracy", "reason",
                                   "message", "config", "verdict", "launches"])
    df = _typed(df, knobs, frozenset(c.number for c in answer.front), baseline)
    pick = answer.pick
    regimes = regime_answers(answer, every)
    return StudyData(name=study.name, trials=df, knobs=knobs, baseline=baseline,
                     simulated=context.simulated,
                     with_accuracy=answer.with_accuracy, answer=answer,
                     importance=tpot_importance(study, df),
                     accuracy=accuracy_gate(every, _gate(context), pick.number if pick else None)
                     if answer.with_accuracy or any(c.accuracy_figure is not None for c in
                                                    answer.configurations) else None,
                     workload=workload_text(context),
                     regimes=regimes,
                     overhead=launch_overhead(every, context.simulated, _twin(every)),
                     budget=budget_split(every, [g.name for g in regimes]),
                     twin=_twin(every))


def _twin(every: list[TrialSummary]) -> str | None:
    """DERIVED when any launch ran on a twin derived from the model's config.json."""
    return DERIVED_TWIN if any(s.twin == DERIVED_TWIN for s in every) else None


def workload_text(context: StudyContext) -> str:
    """What the study's trials were measured on, in words (empty when unrecorded)."""
    from tuner.space import Workload

    wl = Workload.from_record(context.workload)
    return wl.describe_content() if wl is not None else ""


def _gate(context: StudyContext) -> Gate:
    """The gate the sweep applied: the stored space's (the defaults when it has none)."""
    from tuner.errors import UserError
    from tuner.space import Gate
    from tuner.space import parse_space

    text = context.space_yaml
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


def tpot_importance(study: StudyView, df: pd.DataFrame, min_configs: int = 6
                    ) -> dict[str, float]:
    """Each sampled knob's importance for TPOT over the measured configurations (feasible
    and gated, pooled TPOT), by Optuna's PED-ANOVA (:meth:`StudyView.importance`: no
    scikit-learn needed; conditional knobs included); empty below ``min_configs``
    configurations."""
    measured = df[df["kind"] != "failed"]
    if len(measured) < min_configs:
        return {}
    return study.importance(dict(zip(measured["number"], measured["tpot_ms"], strict=True)))


def differs(row: Any, baseline: dict[str, Any] | None) -> str:
    if baseline is None:
        return ""
    base = baseline["config"]
    cfg = row["config"]
    return " ".join(f"{k}={v}" for k, v in cfg.items() if base.get(k) != v) or "(baseline)"
