"""The dashboard's study per load regime: the regime's answer as optuna-dashboard reads it.

A study whose workload names load regimes answers each regime apart
(:func:`tuner.study.regime_answers`); ``tuner dashboard`` shows each as one more study,
named ``STUDY / regime NAME``: one trial per configuration that measured the regime,
numbered as in ``tuner report``, its values the regime's goodput (requests meeting the SLA
per second, maximised) and the configuration's accuracy. Only eligible configurations are
COMPLETE, so the dashboard's best trials are the regime's front; the others are FAIL with
their ``verdict`` (regime failed, SLA missed, not admissible).
"""

from __future__ import annotations

from typing import Any

from optuna.study import StudyDirection
from optuna.trial import FrozenTrial
from optuna.trial import TrialState

from tuner.study._regimes import RegimeAnswer
from tuner.study._regimes import RegimeRow


#: trial ids of regime study k are ``k * ID_STRIDE + the first launch's trial id``: unique
#: across the view's studies
ID_STRIDE = 1 << 40
NOTE = ("**Load regime {name}** ({users}, {sla}), served by `tuner dashboard`: one trial "
        "per configuration that measured it, numbered as in `tuner report`. Values: "
        "goodput (requests meeting the SLA per second, mean over launches){acc}. Only "
        "configurations eligible for the regime (admissible, every launch within the SLA) "
        "are COMPLETE, so the best trials are the regime's front; the pick "
        "(`tuner export --regime {name}`) is trial #{pick}. This view is read-only.")


def regime_study_name(study: str, regime: str) -> str:
    return f"{study} / regime {regime}"


def regime_directions(with_accuracy: bool) -> list[StudyDirection]:
    """Goodput up; accuracy up when the study measures it."""
    return [StudyDirection.MAXIMIZE] * (2 if with_accuracy else 1)


def regime_note(ra: RegimeAnswer, with_accuracy: bool) -> str:
    from tuner.errors import counted

    return NOTE.format(name=ra.name, users=counted(ra.concurrency, "user", "users"),
                       sla=ra.describe_sla(), acc=" and accuracy" if with_accuracy else "",
                       pick=ra.pick.number if ra.pick is not None else "- (none yet)")


def _verdict(ra: RegimeAnswer, row: RegimeRow) -> str:
    if row is ra.pick:
        return "pick"
    if row.eligible:
        return "eligible"
    if row.failed is not None:
        return f"regime failed: {row.failed}"
    if not row.configuration.admissible:
        return f"not admissible: {row.configuration.status}"
    if row.figures.within_sla is False:
        return "missed the SLA"
    return "no goodput measured"


def regime_trials(ra: RegimeAnswer, by_number: dict[int, FrozenTrial], index: int,
                  with_accuracy: bool) -> list[FrozenTrial]:
    """Regime ``ra`` as trials (module doc); ``index`` (1, 2...) makes the ids unique."""
    out = []
    front = {r.number for r in ra.front}
    for row in ra.rows:
        c = row.configuration
        first = by_number[c.number]
        accuracy, f = c.accuracy, row.figures
        complete = (row.eligible and f.goodput_rps is not None
                    and (accuracy is not None or not with_accuracy))
        values: list[float] | None = None
        if complete:
            assert f.goodput_rps is not None
            values = [f.goodput_rps, accuracy or 0.0] if with_accuracy else [f.goodput_rps]
        user: dict[str, Any] = {
            "verdict": _verdict(ra, row), "pick": row is ra.pick,
            "on_front": row.number in front, "launches": row.launches,
            "goodput_rps": f.goodput_rps, "throughput_tok_s": f.throughput_tok_s,
            "tpot_p95_ms": f.tpot_p95_ms, "ttft_p95_s": f.ttft_p95_s,
            "sla_met": f.sla_met, "within_sla": f.within_sla,
            "workload_verdict": c.status, "accuracy": accuracy}
        out.append(FrozenTrial(
            number=c.number, state=TrialState.COMPLETE if complete else TrialState.FAIL,
            value=None, values=values, datetime_start=first.datetime_start,
            datetime_complete=first.datetime_complete, params=first.params,
            distributions=first.distributions, user_attrs=user,
            system_attrs={"constraints": [-1.0]} if complete else {},
            intermediate_values={}, trial_id=index * ID_STRIDE + first._trial_id))
    return out
