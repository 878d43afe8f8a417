"""Launch profiles: what a person takes home from a sweep.

A profile folder holds

* the engine's files that serve the measured plan again (:meth:`Engine.profile_files`; for
  SGLang a ``--config`` YAML, an env file and ``launch.sh``, docs/take-home.md), with
  ``launch.sh`` running the entry point the trial was measured with; no secret is written;
* ``profile.yaml`` - what the tool knows: the canonical configuration, engine and version
  it was measured with, machine, workload, figures with intervals, speed-up over the
  baseline, and the evidence a start-up must show (``tuner verify`` checks it).
"""

from __future__ import annotations

from datetime import UTC
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

import yaml

from tuner import __version__
from tuner.engines import Engine
from tuner.errors import UserError
from tuner.study import Configuration
from tuner.trial import TrialResult
from tuner.trial import clock_label


if TYPE_CHECKING:
    from tuner.study import RegimeAnswer
    from tuner.study import TrialSummary
    from tuner.study.storages import StudyView


def pick_trial(study: StudyView, pick: str, trials: list[TrialSummary] | None = None
               ) -> TrialSummary:
    """The first trial of the configuration ``pick`` names (:meth:`tuner.study.Answer.
    choose`). ``trials``: the study's summaries when the caller has them."""
    return study.trial(study.answer(trials).choose(pick).number)


class MissingArtifacts(UserError):
    """A trial's result artifact is not where the study says it is."""


def load_result(study: StudyView, trial: TrialSummary) -> TrialResult:
    """The TrialResult JSON stored as an artifact of ``trial`` (in the study's artifact
    folder)."""
    try:
        text = study.result_json(trial.number)
    except FileNotFoundError:
        raise MissingArtifacts(f"the artifacts of trial #{trial.number} are not in "
                               f"{study.location.artifacts}") from None
    if text is None:
        raise MissingArtifacts(f"trial #{trial.number} has no stored result artifact")
    return TrialResult.model_validate_json(text)


def expectations(result: TrialResult, *, gate_floor: float, tpot_tolerance: float,
                 tpot_ms: float | None = None, accept_length: float | None = None
                 ) -> dict[str, Any]:
    """What a server started from this profile must show (``tuner verify``)."""
    server_info: dict[str, Any] = {}
    if_present: dict[str, Any] = {}
    log_evidence: list[dict[str, Any]] = []
    unobservable: dict[str, str] = {}
    for ev in result.plan.evidence:
        server_info.update(ev.server_info)
        if_present.update(ev.server_info_if_present)
        if ev.log or ev.log_absent:
            log_evidence.append({"knob": ev.knob, "value": ev.value, "log": list(ev.log),
                                 "log_absent": list(ev.log_absent)})
        if ev.none:
            unobservable[ev.knob] = ev.none
    a = result.aggregates
    out: dict[str, Any] = {
        "server_info": server_info, "server_info_if_present": if_present,
        "log_evidence": log_evidence,
        "log": [p for e in log_evidence for p in e["log"]],
        "log_absent": [p for e in log_evidence for p in e["log_absent"]],
        "unobservable": unobservable}
    tpot = tpot_ms or (a.tpot_ms if a is not None else None)
    if tpot:
        out["tpot_ms"] = {"measured": round(tpot, 3),
                          "max": round(tpot * (1 + tpot_tolerance), 3)}
    al = accept_length or (a.accept_length if a is not None else None)
    if al:
        out["accept_length"] = {"measured": round(al, 3),
                                "min": round(max(gate_floor, 0.75 * al), 3)}
    return out


def _figures(result: TrialResult, shown: Configuration | None) -> dict[str, Any]:
    """The profile's measured figures. With ``shown`` (the configuration as the study's
    answer shows it): its TPOT pooled over every launch with their count, its mean accept
    length and its one accuracy (on its largest sample, paired with the baseline), the
    figures every other output shows; the rest are the exported launch's own."""
    a = result.aggregates
    if a is None:
        return {}
    figures: dict[str, Any] = {
        "tpot_ms": a.tpot_ms, "tpot_ci95": [a.tpot_ci95.low, a.tpot_ci95.high]
        if a.tpot_ci95 else None, "tpot_launches": 1, "tpot_median_ms": a.tpot_median_ms,
        "tpot_p95_ms": a.tpot_p95_ms, "decode_tok_s": a.decode_tok_s,
        "ttft_mean_s": a.ttft_mean_s, "e2e_mean_s": a.e2e_mean_s,
        "accept_length": a.accept_length, "accuracy": a.accuracy,
        "accuracy_ci95": [a.accuracy_ci95.low, a.accuracy_ci95.high]
        if a.accuracy_ci95 else None, "requests": a.requests,
    }
    if a.shown_classes():
        figures["tpot_ms_by_class"] = {c: f.tpot_ms for c, f in a.shown_classes().items()}
        figures["accept_length_by_class"] = {c: f.accept_length
                                             for c, f in a.shown_classes().items()}
    if shown is None:
        return figures
    ci = shown.tpot_ci95
    figures.update({
        "tpot_ms": shown.tpot_ms, "tpot_ci95": list(ci) if ci else None,
        "tpot_launches": shown.launches, "tpot_first_reading_ms": shown.first_reading_ms,
        "tpot_is": (f"the mean over its {shown.launches} launches" if shown.launches > 1
                    else "1 launch, unconfirmed"),
        "accept_length": shown.accept_length})
    acc = shown.accuracy_figure
    if acc is not None:
        figures.update(acc.as_dict())
    figures["accuracy_checked"] = shown.accuracy_checked
    if not shown.accuracy_checked:
        figures["accuracy_is"] = ("not checked: no launch of it scored an answer (a workload "
                                  "without reference answers and --final-questions 0)")
    return figures


def write_profile(out: Path, engine: Engine, space_engine_command: list[str],
                  model_path: str, result: TrialResult, *, trial_number: int, study_name: str,
                  storage_url: str, baseline: TrialResult | None, gate_floor: float,
                  tpot_tolerance: float = 0.15, vocab_size: int | None = None,
                  shown: Configuration | None = None,
                  shown_baseline: Configuration | None = None,
                  regime: RegimeAnswer | None = None) -> list[Path]:
    """Write the profile of ``result``; ``shown``: its configuration as the study's answer
    shows it (:class:`tuner.study.Configuration`: pooled TPOT, accept length, the one
    accuracy), reported instead of the exported launch's own figures; ``shown_baseline``:
    the baseline's; ``regime``: the load regime it was chosen for, whose pick it is."""
    out.mkdir(parents=True, exist_ok=True)
    plan = result.plan
    files = engine.profile_files(
        plan, entry=space_engine_command, model_path=model_path,
        header=f"Serve the profile tuner exported from study {study_name!r}, trial "
               f"#{trial_number}.")
    for name, text in files.items():
        (out / name).write_text(text)
    (out / "launch.sh").chmod(0o755)
    figures = _figures(result, shown)
    profile = {
        "profile_version": 1,
        "exported_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "tuner_version": __version__,
        "source": {"study": study_name, "storage": storage_url, "trial": trial_number},
        "model": model_path,
        "vocab_size": vocab_size,
        "machine": result.machine,
        "engine": {"measured_with": result.engine, "version": result.engine_version,
                   "simulated": result.simulated, "time_scale": result.time_scale,
                   "twin": result.twin},
        "config": result.config,
        "config_hash": result.config_hash,
        "workload": result.workload,
        "tuned_for": _tuned_for(result.workload) + (
            f"; chosen for load regime {regime.name!r} ({regime.concurrency} users)"
            if regime else ""),
        "regime": regime_record(regime) if regime else None,
        "figures": figures,
        "figures_are": clock_label(result.simulated, result.twin)
        + f", {result.workload.get('concurrency', 1)} request(s) in flight",
        "baseline": _baseline(baseline, shown, shown_baseline),
        "speedup": _speedup(baseline, shown_baseline, figures.get("tpot_ms")),
        "launch": {"argv": plan.argv, "env": {k: v for k, v in plan.env.items()
                                              if not k.startswith("TUNER_SIM_")},
                   "files": sorted(files)},
        "expect": expectations(result, gate_floor=gate_floor, tpot_tolerance=tpot_tolerance,
                               tpot_ms=figures.get("tpot_ms"),
                               accept_length=figures.get("accept_length")),
    }
    (out / "profile.yaml").write_text(yaml.safe_dump(profile, sort_keys=False))
    return [out / n for n in (*files, "profile.yaml")]


def regime_record(g: RegimeAnswer) -> dict[str, object]:
    """What ``profile.yaml`` records of the load regime ``g`` a profile was chosen for: its
    load and SLA, its pick's pooled figures there and over how many launches (``tuner
    verify`` reads it back as a :class:`tuner.study.regimes.RegimeRecord`)."""
    if g.pick is None:
        raise ValueError(f"regime {g.name!r} has no pick to export")
    f = g.pick.figures
    return {"name": g.name, "concurrency": g.concurrency, "sla": g.sla,
            "goodput_rps": f.goodput_rps, "throughput_tok_s": f.throughput_tok_s,
            "tpot_p95_ms": f.tpot_p95_ms, "ttft_p95_s": f.ttft_p95_s, "sla_met": f.sla_met,
            "launches": g.pick.launches}


def _baseline(baseline: TrialResult | None, shown: Configuration | None,
              shown_baseline: Configuration | None) -> dict[str, Any] | None:
    """The baseline's figures beside the profile's: its TPOT as the study shows it, and
    its accuracy on the same questions as the profile's accuracy (the paired comparison's),
    not on another sample."""
    base = baseline.aggregates if baseline is not None else None
    if base is None and shown_baseline is None:
        return None
    out: dict[str, Any] = {
        "tpot_ms": shown_baseline.tpot_ms if shown_baseline is not None else (
            base.tpot_ms if base is not None else None),
        "tpot_launches": shown_baseline.launches if shown_baseline is not None else 1}
    acc = shown.accuracy_figure if shown is not None else None
    if acc is not None and acc.paired:
        out.update({"accuracy": acc.baseline, "accuracy_questions": acc.pairs,
                    "accuracy_is": f"on the same {acc.pairs} questions as the profile's"})
    elif shown is not None and shown is shown_baseline and acc is not None:
        out.update({"accuracy": acc.value, "accuracy_questions": acc.questions})
    elif base is not None:
        out["accuracy"] = base.accuracy
    return out


def _speedup(baseline: TrialResult | None, shown_baseline: Configuration | None,
             tpot: float | None) -> float | None:
    base = (shown_baseline.tpot_ms if shown_baseline is not None else
            baseline.aggregates.tpot_ms if baseline is not None and baseline.aggregates
            else None)
    return base / tpot if base and tpot else None


def _tuned_for(workload: dict[str, Any]) -> str:
    """The traffic the profile was tuned for, in words: speculation's gain depends on the
    content (a profile tuned on code can be the wrong one for prose)."""
    from tuner.space import Workload

    wl = Workload.from_record(workload)
    if wl is None:
        return "unrecorded"
    what = wl.describe_content()
    if wl.kind == "mix":
        what += " (the objective: each class's TPOT weighted by its share)"
    return (f"{what}; temperature {wl.temperature:g}, {wl.concurrency} request(s) in "
            "flight")


def result_of(study: StudyView, trial: TrialSummary) -> tuple[TrialResult, str | None]:
    """``trial``'s stored TrialResult; when its artifacts are gone, one rebuilt from the
    study (:mod:`tuner.export._replan`) and a note saying so (else None)."""
    from tuner.export._replan import replanned_result

    try:
        return load_result(study, trial), None
    except MissingArtifacts as exc:
        rebuilt = replanned_result(study, trial)
        return rebuilt, (f"{exc} (deleted or elsewhere: pass --artifacts); its launch plan "
                         "was made again from the stored space and configuration")
