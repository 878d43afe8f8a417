"""The feasible Pareto front: the one definition the driver, reports and export share."""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any

from tuner.study._record import ROLE
from tuner.study._record import trial_at


if TYPE_CHECKING:
    import optuna

    from tuner.study._answer import Configuration
    from tuner.study._summary import TrialSummary


def feasible_front(study: optuna.Study, refused: list[dict[str, Any]] | None = None) -> list[Any]:
    """The Pareto front (min TPOT, max accuracy) of the feasible, measured trials: never
    failure stand-ins, copied repeats, the finals' re-measurements or gated trials.

    Computed over those trials only (not filtered from Optuna's ``best_trials``: a lucky
    re-measurement would hide the trial it re-measured), in O(n log n). A configuration
    that a launch on the final accuracy sample gated is not feasible
    (:mod:`tuner.sweep._final_sample`); ``refused``: those verdicts' signatures when the
    caller has them (:func:`tuner.study._pooled.final_verdicts`)."""
    from optuna.trial import TrialState

    from tuner.study._pooled import final_verdicts
    from tuner.study._pooled import shares

    done = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    failed = refused if refused is not None else final_verdicts(
        done, lambda t: t.user_attrs)[1]
    rows = [t for t in done
            if t.user_attrs.get(ROLE) not in ("failure_twin", "duplicate", "remeasure")
            and all(v <= 0 for v in t.constraints.values())
            and not (failed and shares(t.user_attrs.get("config") or {}, failed))]
    if not rows:
        return []
    if len(rows[0].values) == 1:
        best = min(t.values[0] for t in rows)
        return [t for t in rows if t.values[0] == best]
    out, top = [], float("-inf")
    for t in sorted(rows, key=lambda t: (t.values[0], -t.values[1])):
        if t.values[1] > top:
            out.append(t)
            top = t.values[1]
    return sorted(out, key=lambda t: t.number)


def feasible_best(study: optuna.Study, trials: list[TrialSummary] | None = None
                  ) -> Any | None:
    """The pick's first trial (None before one exists): :class:`tuner.study.Answer`'s
    pick, so the driver, the report and export name the same one. Before the finals: the
    fastest of the feasible front. After: the configuration the finals confirmed
    (:mod:`tuner.study._pooled`); never a single lucky draw once re-measured. ``trials``:
    the study's summaries when the caller has them."""
    from tuner.study._answer import study_answer

    pick = study_answer(study, trials).pick
    return trial_at(study, pick.number) if pick is not None else None


def dominates(a: Configuration, b: Configuration, with_accuracy: bool) -> bool:
    """Whether ``a`` beats ``b`` on the displayed figures (no worse on both, better on one;
    single objective: faster)."""
    ta, tb = a.tpot_ms or 0.0, b.tpot_ms or 0.0
    if not with_accuracy:
        return ta < tb
    aa, ab = a.accuracy or 0.0, b.accuracy or 0.0
    return ta <= tb and aa >= ab and (ta < tb or aa > ab)


def undominated(rows: list[Configuration], with_accuracy: bool,
                 leave_out: frozenset[int] = frozenset()) -> set[int]:
    """Numbers of the admissible ``rows`` (less ``leave_out``) no other of them beats on
    the displayed TPOT and accuracy (missing accuracy counts as 0). Single objective: the
    fastest."""
    cands = [c for c in rows if c.admissible and c.tpot_ms is not None
             and c.number not in leave_out]
    if not cands:
        return set()
    if not with_accuracy:
        best = min(c.tpot_ms for c in cands if c.tpot_ms is not None)
        return {c.number for c in cands if c.tpot_ms == best}
    keep: set[int] = set()
    top = float("-inf")
    for c in sorted(cands, key=lambda c: (c.tpot_ms, -(c.accuracy or 0.0))):
        acc = c.accuracy or 0.0
        if acc > top:
            keep.add(c.number)
            top = acc
    # rows equal to a kept one on both figures are not beaten either
    shown = {(c.tpot_ms, c.accuracy or 0.0) for c in cands if c.number in keep}
    return keep | {c.number for c in cands if (c.tpot_ms, c.accuracy or 0.0) in shown}
