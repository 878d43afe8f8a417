"""A typed view of one trial's record, and the roles a trial plays in a sweep.

Everything outside :mod:`tuner.study` reads trials through :class:`TrialSummary`; the
attribute names below are the study's storage format and appear nowhere else.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from dataclasses import field
from typing import TYPE_CHECKING
from typing import Any

from tuner.study._record import ROLE
from tuner.study._record import RegimeRecord
from tuner.study._record import regime_records


if TYPE_CHECKING:
    from datetime import datetime

    import optuna
    from optuna.trial import FrozenTrial


class Role(enum.StrEnum):
    """Why a trial is in the study."""

    BASELINE = "baseline"          # trial 0: the space's baseline, measured alone first
    TRIAL = "trial"                # a configuration the search proposed and measured
    DUPLICATE = "duplicate"        # a repeat of a measured configuration: its result copied
    FAILURE_TWIN = "failure_twin"  # a stored stand-in of a FAIL trial (older studies only)
    REMEASURE = "remeasure"        # a finalist launched again (tuner/sweep/_finals.py)


@dataclass(frozen=True)
class TrialSummary:
    """One trial as the tool recorded it. ``values`` is None unless COMPLETE."""

    number: int
    state: str                                   # COMPLETE, FAIL, RUNNING, WAITING, ...
    role: Role
    values: list[float] | None = None
    feasible: bool = False                       # COMPLETE with every constraint <= 0
    config: dict[str, Any] = field(default_factory=dict)
    config_hash: str | None = None
    tpot_ms: float | None = None
    tpot_ci95: list[float] | None = None
    decode_tok_s: float | None = None
    accuracy: float | None = None
    accuracy_ci95: list[float] | None = None
    accept_length: float | None = None
    ttft_s: float | None = None
    #: TPOT per content class of a mixed workload, this launch's (ms)
    class_tpot_ms: dict[str, float | None] = field(default_factory=dict)
    #: each scored kind of question on this launch (``code``, ``math``, ``GSM8K sample``)
    #: -> [accuracy, scored, Wilson low, high] (``_record.class_accuracy``)
    class_accuracy: dict[str, list[float]] = field(default_factory=dict)
    #: each load regime's figures on this launch, by name, with its SLA
    regimes: dict[str, RegimeRecord] = field(default_factory=dict)
    speedup: float | None = None
    per_question: dict[str, bool] | None = None
    reason: str | None = None
    message: str | None = None
    gate: list[str] = field(default_factory=list)
    recovered: bool = False                      # left RUNNING by a dead driver, re-queued
    duplicate_of: int | None = None
    remeasure_of: int | None = None
    confirm: bool = False                        # a finals' confirmation launch of the pick
    #: a re-measurement the search took before its finals (the fastest so far, launched
    #: again before the local search moves around it): pooled, not one of the finals' race
    contender: bool = False
    #: a finals launch on the final (larger) accuracy sample (``--final-questions``)
    final_sample: bool = False
    #: of a final-sample launch: the knob values its accuracy verdict holds for
    numerics: dict[str, Any] | None = None
    #: of a final-sample launch: the speed configuration a pass holds for
    speed: dict[str, Any] | None = None
    retried: bool = False                        # a start-up failure launched once more
    #: why the search launched it (``screen``, ``combine``, ``probe``, ``neighbour``,
    #: ``sampler``...; None: the baseline, a finals launch, a study from before) and the
    #: load regime it was proposed for (None: batch 1's objective)
    proposed_by: str | None = None
    serves: str | None = None
    held: dict[str, Any] = field(default_factory=dict)   # capacity knobs a finals run set
    kv_tokens: int | None = None                 # the KV pool's capacity the server reported
    worker: str | None = None                    # where it ran: a Ray node id (Ray runner)
    engine: str | None = None                    # the adapter that planned it (sim:fork...)
    engine_version: str | None = None
    simulated: bool = False
    time_scale: float = 1.0
    twin: str | None = None                      # the simulator's: calibrated or DERIVED
    startup_s: float | None = None               # machine seconds: start-up, whole launch
    total_s: float | None = None
    started_at: str | None = None                # ISO times of the Optuna trial
    completed_at: str | None = None

    @property
    def launched(self) -> bool:
        """A launch the ``--trials`` budget counts: a measured configuration or a finals'
        re-measurement (not a copy, a stand-in or a dead run)."""
        return self.measured or self.retried or (
            self.role == Role.REMEASURE and not self.recovered
            and self.state in ("COMPLETE", "FAIL"))

    @property
    def measured(self) -> bool:
        """A configuration that was really run (not a copy, a stand-in or a dead run)."""
        return (self.role in (Role.BASELINE, Role.TRIAL) and not self.recovered
                and not self.retried and self.state in ("COMPLETE", "FAIL", "PRUNED"))


def summarize(trial: FrozenTrial) -> TrialSummary:
    """The :class:`TrialSummary` of an Optuna ``FrozenTrial``."""
    a = trial.user_attrs
    state = trial.state.name
    complete = state == "COMPLETE"
    role = a.get(ROLE, "trial")
    return TrialSummary(
        number=trial.number, state=state,
        role=Role(role) if role in Role._value2member_map_ else Role.TRIAL,
        values=list(trial.values) if complete else None,
        feasible=complete and all(v <= 0 for v in trial.constraints.values()),
        config=a.get("config") or dict(trial.params), config_hash=a.get("config_hash"),
        tpot_ms=a.get("tpot_ms"), tpot_ci95=a.get("tpot_ci95"),
        decode_tok_s=a.get("decode_tok_s"), accuracy=a.get("accuracy"),
        accuracy_ci95=a.get("accuracy_ci95"), accept_length=a.get("accept_length"),
        ttft_s=a.get("ttft_s"), speedup=a.get("speedup"), per_question=a.get("per_question"),
        class_tpot_ms=dict(a.get("class_tpot_ms") or {}),
        class_accuracy=dict(a.get("class_accuracy") or {}),
        regimes=regime_records(a.get("regimes")),
        reason=a.get("reason"), message=a.get("message"), gate=list(a.get("gate") or []),
        recovered=bool(a.get("recovered")), duplicate_of=a.get("duplicate_of"),
        remeasure_of=a.get("remeasure_of"), confirm=bool(a.get("confirm")),
        contender=bool(a.get("contender")),
        final_sample=bool(a.get("final_sample")), numerics=a.get("numerics"), speed=a.get("speed"),
        retried=bool(a.get("retried")), held=dict(a.get("held") or {}),
        proposed_by=a.get("proposed_by"), serves=a.get("serves"),
        kv_tokens=a.get("kv_tokens"), worker=a.get("worker"), engine=a.get("engine"),
        engine_version=a.get("engine_version"), simulated=bool(a.get("simulated")),
        time_scale=float(a.get("time_scale") or 1.0), twin=a.get("twin"),
        startup_s=a.get("startup_s"),
        total_s=a.get("total_s"), started_at=_iso(trial.datetime_start),
        completed_at=_iso(trial.datetime_complete))


def _iso(when: datetime | None) -> str | None:
    return when.isoformat(timespec="seconds") if when is not None else None


@dataclass(frozen=True)
class StudyContext:
    """What the sweep stored about itself: the space, model, engine and workload."""

    space_name: str | None = None
    machine: str | None = None
    engine: str | None = None
    model: str | None = None
    workload: dict[str, Any] = field(default_factory=dict)
    space_yaml: str | None = None
    sweep_options: dict[str, Any] | None = None   # the options of the last run (no secrets)

    @property
    def simulated(self) -> bool:
        return bool(self.engine and self.engine.startswith("sim"))


#: Sweep options that change what a launch measures: a study holds one setting of each.
MEASUREMENT_OPTIONS = ("search_questions", "final_questions", "noise", "sim_faults",
                       "sim_profiles")


def identity_differences(stored: StudyContext, run: StudyContext) -> list[str]:
    """What ``run`` would measure differently from the study (``stored``): one
    ``what: stored -> this run`` item per difference; an option the study never recorded is
    not compared."""
    out = [f"{key}: {getattr(stored, key)!r} -> {getattr(run, key)!r}"
           for key in ("engine", "machine", "model")
           if getattr(stored, key) is not None and getattr(stored, key) != getattr(run, key)]
    if stored.workload:
        for key in sorted(set(stored.workload) | set(run.workload)):
            a, b = stored.workload.get(key), run.workload.get(key)
            if key in stored.workload and a != b:
                out.append(f"workload {key}: {a!r} -> {b!r}")
    old, new = stored.sweep_options or {}, run.sweep_options or {}
    for key in MEASUREMENT_OPTIONS:
        if key in old and key in new and old[key] != new[key]:
            out.append(f"--{key.replace('_', '-')}: {old[key]!r} -> {new[key]!r}")
    return out


CONTEXT_KEYS = {"space_name": "tuner:space_name", "machine": "tuner:machine",
                "engine": "tuner:engine", "model": "tuner:model",
                "workload": "tuner:workload", "space_yaml": "tuner:space_yaml",
                "sweep_options": "tuner:sweep_options"}


def context_of(study: optuna.Study) -> StudyContext:
    attrs = study.user_attrs
    return StudyContext(**{k: v for k, key in CONTEXT_KEYS.items()
                           if (v := attrs.get(key)) is not None})


def summaries(study: optuna.Study) -> list[TrialSummary]:
    """Every trial of ``study``, in number order."""
    return [summarize(t) for t in study.get_trials(deepcopy=False)]
