"""How a TrialResult is written into the Optuna study (the driver is the only writer).

* A measured trial is COMPLETE with values ``[tpot_ms, accuracy]`` (``[tpot_ms]`` for a
  synthetic workload) and **every** constraint set (``accept_length_floor``,
  ``accuracy_drop``, ``failed``), so a gated trial is infeasible everywhere: in
  ``study.best_trials``, in reports, in the dashboard.
* A failed trial (crash, OOM, timeout, unsupported knob, effect mismatch...) is FAIL with
  its reason, and nothing else: the sampler learns to avoid its region from a stand-in
  made only in its own view of the study (:mod:`tuner.study._stand_ins`), so the stored
  study (what optuna-dashboard shows) holds real measurements only. Studies written before
  that may hold stored stand-ins ("failure twins", role ``failure_twin``); every reader
  skips them.
* A trial stopped early (``pruned``: dominated or collapsed after the first part of its
  workload) is PRUNED, with its partial figures and reason as attributes; no values, so
  it is on no front. The sampler sees it as what it measured (a stand-in).
* The server log, the per-request records and the TrialResult JSON are artifacts.
"""

from __future__ import annotations

import math
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Annotated
from typing import Any

from pydantic import ConfigDict

from tuner.trial import Pool
from tuner.trial import RegimeResult
from tuner.trial import TrialResult
from tuner.trial import pools


if TYPE_CHECKING:
    import optuna
    from optuna.trial import FrozenTrial


ROLE = "tuner:role"
CONSTRAINT_KEYS = ("accept_length_floor", "accuracy_drop", "failed")


def baseline_trial(study: optuna.Study) -> Any | None:
    """The study's measured baseline (COMPLETE, role ``baseline``), or None."""
    from optuna.trial import TrialState

    return next((t for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
                 if t.user_attrs.get(ROLE) == "baseline"), None)


def trial_at(study: optuna.Study, number: int) -> Any:
    """Trial ``number`` of ``study``, not copied (``study.trials[n]`` deep-copies every
    trial of the study: seconds at 10,000 trials). Read it; never change it."""
    return study.get_trials(deepcopy=False)[number]


def study_id(study: optuna.Study) -> int:
    """The storage's id of ``study`` (what optuna-dashboard's URLs hold)."""
    return int(study._study_id)


def artifact_metas(study: optuna.Study, trial: FrozenTrial) -> list[Any]:
    """The artifacts stored for ``trial`` (Optuna's ``ArtifactMeta``: id, file name)."""
    from optuna.artifacts import get_all_artifact_meta

    return list(get_all_artifact_meta(trial, storage=study._storage))


def summary_attrs(result: TrialResult, baseline_tpot: float | None) -> dict[str, Any]:
    """Key figures for the dashboard's trial table and for reports."""
    a = result.aggregates
    attrs: dict[str, Any] = {
        "config_hash": result.config_hash, "config": result.config, "status": result.status,
        "engine": result.engine, "engine_version": result.engine_version,
        "simulated": result.simulated, "time_scale": result.time_scale, "twin": result.twin,
        "effect": {c.knob: c.verdict for c in result.effect},
        "startup_s": result.timings.startup_s, "total_s": result.timings.total_s,
        "kv_tokens": result.kv_tokens, "host": result.host,
    }
    if result.worker:
        attrs["worker"] = result.worker
    if result.reason:
        attrs["reason"] = result.reason
        attrs["message"] = (result.message or "")[:500]
    if a is not None:
        attrs.update({
            "tpot_ms": a.tpot_ms,
            "tpot_ci95": [a.tpot_ci95.low, a.tpot_ci95.high] if a.tpot_ci95 else None,
            "tpot_median_ms": a.tpot_median_ms, "tpot_p95_ms": a.tpot_p95_ms,
            "decode_tok_s": a.decode_tok_s, "ttft_s": a.ttft_mean_s, "e2e_mean_s": a.e2e_mean_s,
            "accept_length": a.accept_length, "accuracy": a.accuracy,
            "accuracy_ci95": [a.accuracy_ci95.low, a.accuracy_ci95.high]
            if a.accuracy_ci95 else None,
            "correct": a.correct, "scored": a.scored, "per_question": a.per_question,
        })
        if a.shown_classes():
            attrs["class_tpot_ms"] = {c: f.tpot_ms for c, f in a.shown_classes().items()}
        kinds = class_accuracy(a)
        if kinds:
            attrs["class_accuracy"] = kinds
        if baseline_tpot and a.tpot_ms:
            attrs["speedup"] = baseline_tpot / a.tpot_ms
    if result.regimes:
        attrs["regimes"] = regime_attrs(result)
    if result.gate is not None:
        attrs["gate"] = [r.rule for r in result.gate.fired()]
        attrs["gate_detail"] = "; ".join(r.detail for r in result.gate.rules)[:1000]
        attrs["feasible"] = result.gate.passed
    return attrs


class RegimeRecord(RegimeResult):
    """One launch's figures in one load regime as the study keeps them: the launch's
    :class:`tuner.trial.RegimeResult` and the regime's SLA as its workload declared it
    (None: no SLA). Stored in attribute ``regimes`` under the regime's name, without it
    (:meth:`stored`); a configuration's pooled figures are one record too."""

    model_config = ConfigDict(frozen=True)

    sla: Annotated[dict[str, float] | None, Pool.SAME] = None

    def stored(self) -> dict[str, object]:
        """The attribute's value: every field but the name (the attribute's key)."""
        return self.model_dump(exclude={"name"})

    @classmethod
    def read(cls, name: str, stored: dict[str, object]) -> RegimeRecord:
        """The record stored under ``name`` (a study written by any version of the tool)."""
        return cls.model_validate({**stored, "name": name})


pools(RegimeRecord)        # every field declares how it pools: one that does not fails here


def regime_attrs(result: TrialResult) -> dict[str, dict[str, object]]:
    """Each load regime's figures, by name, with its load and SLA."""
    from tuner.space import Workload

    wl = Workload.from_record(result.workload)
    slas = {r.name: r.sla.model_dump(exclude_none=True) for r in (wl.regimes if wl else [])
            if r.sla is not None}
    return {g.name: RegimeRecord(**dict(g), sla=slas.get(g.name)).stored()
            for g in result.regimes}


def regime_records(stored: dict[str, dict[str, object]] | None) -> dict[str, RegimeRecord]:
    """The attribute ``regimes`` read back: each regime's record, by name."""
    return {name: RegimeRecord.read(name, f) for name, f in (stored or {}).items()}


def upload_artifacts(study: optuna.Study, trial: optuna.Trial, store: Any, result: TrialResult,
                     folder: Path | None = None) -> list[str]:
    """Store the result JSON, the request records and the server log as artifacts of
    ``trial``; ``folder`` (the store's) is made again first if it was deleted meanwhile."""
    from optuna.artifacts import upload_artifact

    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
    ids = []
    with tempfile.TemporaryDirectory() as tmp:
        files: list[tuple[Path, str]] = []
        res = Path(tmp) / f"trial-{trial.number}-result.json"
        res.write_text(result.model_dump_json(indent=2))
        files.append((res, "application/json"))
        req = Path(tmp) / f"trial-{trial.number}-requests.jsonl"
        req.write_text("".join(r.model_dump_json() + "\n" for r in result.requests))
        files.append((req, "application/x-ndjson"))
        if result.log_path and Path(result.log_path).is_file():
            log = Path(tmp) / f"trial-{trial.number}-server.log"
            log.write_bytes(Path(result.log_path).read_bytes())
            files.append((log, "text/plain"))
        for path, mime in files:
            ids.append(upload_artifact(artifact_store=store, file_path=str(path),
                                       study_or_trial=trial, mimetype=mime))
    return ids


def _finite(values: list[float | None]) -> bool:
    return all(v is not None and math.isfinite(v) for v in values)


def objective_values(result: TrialResult, with_accuracy: bool) -> list[float] | None:
    a = result.aggregates
    if a is None or a.tpot_ms is None:
        return None
    values: list[float | None] = [a.tpot_ms, a.accuracy] if with_accuracy else [a.tpot_ms]
    finite = [v for v in values if v is not None]
    return finite if _finite(values) and len(finite) == len(values) else None


def tell_result(study: optuna.Study, trial: optuna.Trial, result: TrialResult, *,
                with_accuracy: bool, baseline_tpot: float | None, role: str, store: Any | None,
                extra_attrs: dict[str, Any] | None = None, folder: Path | None = None) -> str:
    """Record ``result`` on the running ``trial``; return the state told. Artifacts that
    cannot be written (a full disk, a folder made read-only) cost only the artifacts: the
    measurement is told, with ``artifact_error`` saying why they are missing."""
    from optuna.trial import TrialState

    trial.set_user_attr(ROLE, role)
    for k, v in {**summary_attrs(result, baseline_tpot), **(extra_attrs or {})}.items():
        trial.set_user_attr(k, v)
    if store is not None:
        try:
            upload_artifacts(study, trial, store, result, folder)
        except OSError as exc:
            trial.set_user_attr("artifact_error", f"{type(exc).__name__}: {exc}"[:300])
    if result.status == "pruned":
        study.tell(trial, state=TrialState.PRUNED)
        return "PRUNED"
    values = objective_values(result, with_accuracy) if result.ok else None
    if result.ok and values is None:
        trial.set_user_attr("reason", "bench_error")
        trial.set_user_attr("message", "no finite TPOT/accuracy could be measured")
    if values is None:
        study.tell(trial, state=TrialState.FAIL)
        return "FAIL"
    constraints = dict(result.gate.constraints if result.gate else {})
    ordered = [float(constraints.get(k, 0.0 if k == "failed" else -1.0))
               for k in CONSTRAINT_KEYS]
    for key, value in zip(CONSTRAINT_KEYS, ordered, strict=True):
        trial.set_constraint(key, value)
    write_legacy_constraints(study, trial._trial_id, ordered)
    study.tell(trial, values)
    return "COMPLETE"


def write_legacy_constraints(study: optuna.Study, trial_id: int, values: list[float]) -> None:
    """Also store the constraints in the pre-5.0 format (system attr ``constraints``, a list
    in CONSTRAINT_KEYS order): optuna-dashboard 0.21 reads only that one, and without it
    draws gated trials as feasible (docs/optuna-ray-facts.md, Optuna 3). Optuna merges both
    formats into ``trial.constraints`` with the same feasibility."""
    study._storage.set_trial_system_attr(trial_id, "constraints", values)


#: the kind of question the GSM8K accuracy sample beside a workload is (``class_accuracy``)
SAMPLE_KIND = "GSM8K sample"


def class_accuracy(a: Any) -> dict[str, list[float]]:
    """Each scored kind of question of a launch (its workload's scored classes: ``code``'s
    pass@1, ``math``'s GSM8K; and the GSM8K sample beside a workload) -> [accuracy,
    scored, Wilson low, high]; empty when at most one kind was scored on the workload alone
    (its figure is the launch's accuracy)."""
    def row(f: Any) -> list[float]:
        ci = f.accuracy_ci95
        return [f.accuracy, f.scored, ci.low if ci else f.accuracy,
                ci.high if ci else f.accuracy]

    out = {c: row(f) for c, f in (a.per_class or {}).items() if f.scored}
    if a.sample is not None and a.sample.scored:
        out[SAMPLE_KIND] = row(a.sample)
    return out if out and (len(out) > 1 or a.sample is not None
                           or next(iter(out)) != "math") else {}
