"""The sweep driver: an ask/tell Optuna loop over a trial runner. The only study writer.

Order of business on start: take the driver lock; fail the trials a dead driver left RUNNING
and re-queue their configurations; enqueue the baseline as trial 0 if the study has none;
run the baseline alone (every speed-up and accuracy drop is relative to it); then keep the
runner's slots busy until the budget (trials and/or hours) is spent. Identical canonical
configurations are measured once: a repeat copies the earlier result.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from tuner.engines import Engine
from tuner.errors import UserError
from tuner.space import SearchSpace
from tuner.study import CONSTRAINT_KEYS
from tuner.study import OBJECTIVES
from tuner.study import ROLE
from tuner.study import DriverLock
from tuner.study import StudyLocation
from tuner.study import add_failure_twin
from tuner.study import baseline_trial
from tuner.study import feasible_best
from tuner.study import make_sampler
from tuner.study import suggest
from tuner.study import tell_result
from tuner.study import write_legacy_constraints
from tuner.sweep._base import Outcome
from tuner.sweep._base import TrialJob
from tuner.sweep._base import TrialRunner
from tuner.trial import TrialOptions
from tuner.trial import TrialResult
from tuner.workloads import KINDS


@dataclass
class SweepSettings:
    study_name: str
    location: StudyLocation
    trials: int | None = None
    hours: float | None = None
    sampler: str = "tpe"
    seed: int | None = None
    break_lock: bool = False
    deadline_s: float = 6 * 3600.0
    refine_every: int = 3          # 0: never propose neighbours of the incumbent
    refine_after: int = 12


@dataclass
class Progress:
    """What the display shows; updated by the driver after every event."""

    started: float = field(default_factory=time.monotonic)
    budget: int | None = None
    done: int = 0
    failed: int = 0
    gated: int = 0
    duplicates: int = 0
    running: int = 0
    baseline_tpot: float | None = None
    best_tpot: float | None = None
    best_number: int | None = None
    last: str = ""


#: Env var tagging every server a sweep starts with its Ray node id (see _reaper.py).
OWNER_ENV = "TUNER_OWNER"

#: Stop when the sampler keeps proposing configurations that were already measured.
MAX_REPEATS_IN_A_ROW = 50


class FatalSweepError(UserError):
    exit_code = 1


class Driver:
    def __init__(self, space: SearchSpace, engine: Engine, options: TrialOptions,
                 settings: SweepSettings, runner_factory: Callable[[], TrialRunner],
                 on_progress: Callable[[Progress], None] | None = None) -> None:
        import warnings

        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
        self.space, self.engine, self.options, self.s = space, engine, options, settings
        self.with_accuracy = KINDS[space.spec.workload.kind].scored
        self.storage = settings.location.storage()
        settings.location.artifacts.mkdir(parents=True, exist_ok=True)
        from optuna.artifacts import FileSystemArtifactStore

        self.store = FileSystemArtifactStore(str(settings.location.artifacts))
        directions: list[Any] = (["minimize", "maximize"] if self.with_accuracy
                                 else ["minimize"])
        self.study = optuna.create_study(
            study_name=settings.study_name, storage=self.storage, directions=directions,
            load_if_exists=True, sampler=make_sampler(settings.sampler, settings.seed, space))
        if list(self.study.directions) != [getattr(optuna.study.StudyDirection, d.upper())
                                           for d in directions]:
            raise UserError(f"study {settings.study_name!r} exists with other objectives; "
                            "use another --study name")
        self.study.set_metric_names(list(OBJECTIVES[: len(directions)]))
        context = {"tuner:space_name": space.name, "tuner:machine": space.spec.machine.id,
                   "tuner:engine": engine.name, "tuner:model": space.spec.model.path,
                   "tuner:workload": options.workload.model_dump()}
        if space.source is not None and space.source.is_file():
            context["tuner:space_yaml"] = space.source.read_text()
        for key, value in context.items():
            if self.study.user_attrs.get(key) != value:
                self.study.set_user_attr(key, value)
        self.runner_factory = runner_factory
        self.on_progress = on_progress or (lambda p: None)
        self.progress = Progress(budget=settings.trials)
        self.lock = DriverLock(self.study)
        self.pending: dict[int, tuple[Any, str, str]] = {}   # number -> (trial, hash, role)
        self.started: dict[int, float] = {}
        self.waiting_dupes: dict[str, list[Any]] = {}
        self.requeued: set[str] = set()
        self.repeats_in_a_row = 0
        self.exhausted = False
        self.proposals = 0
        import random

        self.rng = random.Random(settings.seed)

    # -- study bookkeeping ------------------------------------------------------------------
    def _trials(self) -> list[Any]:
        return self.study.get_trials(deepcopy=False)

    def _measured(self) -> dict[str, Any]:
        """config hash -> the finished trial that measured it (not twins, not recovered)."""
        from optuna.trial import TrialState

        out: dict[str, Any] = {}
        for t in self._trials():
            if t.state not in (TrialState.COMPLETE, TrialState.FAIL):
                continue
            role = t.user_attrs.get(ROLE)
            if role in ("failure_twin", "duplicate") or t.user_attrs.get("recovered"):
                continue
            h = t.user_attrs.get("config_hash")
            if h and h not in out:
                out[h] = t
        return out

    def _counted(self) -> int:
        """Measured trials: the budget counts configurations that were run (repeats of a
        measured configuration, failure twins and trials a dead driver left do not)."""
        from optuna.trial import TrialState

        return sum(1 for t in self._trials()
                   if t.state in (TrialState.COMPLETE, TrialState.FAIL)
                   and t.user_attrs.get(ROLE) in ("baseline", "trial")
                   and not t.user_attrs.get("recovered"))

    def _baseline(self) -> Any | None:
        return baseline_trial(self.study)

    def _check_baseline_alive(self) -> None:
        """Raise if the baseline was measured and failed (nothing can be judged without it)."""
        from optuna.trial import TrialState

        roles = [(t.state, t) for t in self._trials() if t.user_attrs.get(ROLE) == "baseline"
                 and not t.user_attrs.get("recovered")]
        if any(s in (TrialState.WAITING, TrialState.RUNNING) for s, _ in roles):
            return
        failed = [t for s, t in roles if s == TrialState.FAIL]
        if failed:
            t = failed[-1]
            raise FatalSweepError(
                f"the baseline (trial #{t.number}) failed: {t.user_attrs.get('reason')}: "
                f"{t.user_attrs.get('message', '')[:300]}. Every speed-up and accuracy drop "
                "is relative to it: fix the space or the machine, then run again")

    def recover(self) -> list[int]:
        """Fail what a dead driver left RUNNING and queue those configurations again."""
        from optuna.trial import TrialState

        failed = []
        for t in self.study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
            self.study._storage.set_trial_user_attr(t._trial_id, "recovered", True)
            self.study._storage.set_trial_user_attr(
                t._trial_id, "reason", "cancelled")
            self.study._storage.set_trial_user_attr(
                t._trial_id, "message", "the driver running it died; its configuration was "
                                        "queued again")
            self.study.tell(t.number, state=TrialState.FAIL)
            attrs = {ROLE: t.user_attrs.get(ROLE, "trial"), "retry_of": t.number}
            self.study.enqueue_trial(t.params, user_attrs=attrs)
            failed.append(t.number)
        return failed

    def enqueue_baseline(self) -> None:
        from optuna.trial import TrialState

        for t in self._trials():
            if t.user_attrs.get(ROLE) == "baseline" and t.state in (
                    TrialState.COMPLETE, TrialState.WAITING, TrialState.RUNNING):
                return
        self.study.enqueue_trial(self.space.complete({}), user_attrs={ROLE: "baseline"})

    # -- the loop ---------------------------------------------------------------------------
    def run(self) -> Any:
        self.lock.acquire(break_lock=self.s.break_lock)
        runner = None
        try:
            recovered = self.recover()
            if recovered:
                self.progress.last = f"re-queued trials left running: {recovered}"
            self.enqueue_baseline()
            runner = self.runner_factory()
            owner = getattr(runner, "node_id", None)
            if owner:
                self.options.server_env = {**self.options.server_env, OWNER_ENV: owner}
            self.lock.extra = {"ray_session": getattr(runner, "session_dir", None)}
            self.lock.renew(force=True)
            self._loop(runner)
        except KeyboardInterrupt:
            if runner is not None:
                self._cancel_all(runner, "interrupted (Ctrl-C)")
            raise
        finally:
            if runner is not None:
                runner.close()
            self.lock.release()
        return self.study

    def _budget_left(self) -> bool:
        if self.exhausted:
            return False
        if self.s.hours is not None and (
                time.monotonic() - self.progress.started) > self.s.hours * 3600:
            return False
        running = sum(1 for _, _, role in self.pending.values() if role != "duplicate")
        return self.s.trials is None or self._counted() + running < self.s.trials

    def _loop(self, runner: TrialRunner) -> None:
        baseline = self._baseline()
        self._refresh(baseline)
        while True:
            self.lock.renew()
            baseline = self._baseline()
            if baseline is None:
                self._check_baseline_alive()
            while len(runner.inflight) < runner.slots and self._budget_left():
                if baseline is None and self.pending:
                    break   # the baseline runs alone: the others are judged against it
                if not self._submit_next(runner, baseline):
                    break
                if baseline is None:
                    break
            if not runner.inflight and not self.pending:
                if baseline is None:
                    self._check_baseline_alive()
                return
            for outcome in runner.poll(timeout=0.5):
                self._record(outcome, baseline)
            self._enforce_deadlines(runner)
            self.progress.running = len(runner.inflight)
            self.on_progress(self.progress)

    def _maybe_enqueue_neighbour(self) -> None:
        """Every ``refine_every``-th proposal after the start-up phase is a one-knob
        neighbour of the best feasible configuration (see _neighbours.py)."""
        if not self.s.refine_every or self._counted() < self.s.refine_after:
            return
        self.proposals += 1
        if self.proposals % self.s.refine_every:
            return
        best = feasible_best(self.study)
        if best is None:
            return
        from optuna.trial import TrialState

        if any(t.state == TrialState.WAITING for t in self._trials()):
            return
        from tuner.sweep._neighbours import pick

        cand = pick(self.space, self.engine, best.user_attrs.get("config") or {},
                    set(self._measured()), self.rng)
        if cand is not None:
            self.study.enqueue_trial(cand, user_attrs={ROLE: "trial",
                                                       "proposed_by": "neighbour"})

    def _submit_next(self, runner: TrialRunner, baseline: Any | None) -> bool:
        if baseline is not None:
            self._maybe_enqueue_neighbour()
        trial = self.study.ask()
        role = trial.user_attrs.get(ROLE, "trial")
        values, repaired = self.engine.repair(self.space, suggest(self.space, trial))
        if repaired:
            trial.set_user_attr("repaired", repaired)
        try:
            config = self.engine.canonicalize(self.space, values)
        except UserError as exc:
            trial.set_user_attr("reason", "launch_error")
            trial.set_user_attr("message", str(exc))
            from optuna.trial import TrialState

            self.study.tell(trial, state=TrialState.FAIL)
            return True
        h = config.hash()
        trial.set_user_attr("config_hash", h)
        earlier = self._measured().get(h)
        if earlier is not None and role != "baseline":
            self._copy(trial, earlier)
            self.repeats_in_a_row += 1
            if self.repeats_in_a_row >= MAX_REPEATS_IN_A_ROW:
                self.exhausted = True
                self.progress.last = (f"stopping: the sampler proposed {MAX_REPEATS_IN_A_ROW} "
                                      "measured configurations in a row (space exhausted?)")
                return False
            return True
        self.repeats_in_a_row = 0
        inflight_same = [n for n, (_, hh, _) in self.pending.items() if hh == h]
        if inflight_same:
            self.waiting_dupes.setdefault(h, []).append(trial)
            self.pending[trial.number] = (trial, h, "duplicate")
            return True
        base_pq = baseline.user_attrs.get("per_question") if baseline is not None else None
        opts = TrialOptions(**{**self.options.__dict__, "baseline_per_question": base_pq})
        job = TrialJob(key=trial.number, space=self.space, engine=self.engine, config=config,
                       options=opts, deadline_s=self.s.deadline_s)
        runner.submit(job)
        self.pending[trial.number] = (trial, h, role)
        self.started[trial.number] = time.monotonic()
        self.progress.last = f"#{trial.number} started: {config.describe()}"
        return True

    def _copy(self, trial: Any, earlier: Any) -> None:
        """Tell ``trial`` what ``earlier`` measured (same canonical configuration)."""
        from optuna.trial import TrialState

        trial.set_user_attr(ROLE, "duplicate")
        trial.set_user_attr("duplicate_of", earlier.number)
        for k, v in earlier.user_attrs.items():
            if k not in (ROLE, "retry_of"):
                trial.set_user_attr(k, v)
        self.progress.duplicates += 1
        if earlier.state == TrialState.COMPLETE:
            values = [float(earlier.constraints.get(k, 0.0)) for k in CONSTRAINT_KEYS]
            for k, v in zip(CONSTRAINT_KEYS, values, strict=True):
                trial.set_constraint(k, v)
            write_legacy_constraints(self.study, trial._trial_id, values)
            self.study.tell(trial, list(earlier.values))
        else:
            self.study.tell(trial, state=TrialState.FAIL)

    def _record(self, outcome: Outcome, baseline: Any | None) -> None:
        trial, h, role = self.pending.pop(outcome.key)
        self.started.pop(outcome.key, None)
        result = outcome.result
        if result is None:
            reason = {"worker_lost": "worker_lost", "cancelled": "cancelled"}.get(
                outcome.kind, "launch_error")
            result = self._synthetic_failure(trial, reason, outcome.detail or outcome.kind)
            if outcome.kind == "worker_lost" and h not in self.requeued:
                self.requeued.add(h)
                self.study.enqueue_trial(trial.params, user_attrs={ROLE: role,
                                                                   "retry_of": trial.number})
        base_tpot = baseline.user_attrs.get("tpot_ms") if baseline is not None else None
        state = tell_result(self.study, trial, result, with_accuracy=self.with_accuracy,
                            baseline_tpot=base_tpot, role=role, store=self.store)
        self._after_tell(trial, result, state)
        for dup in self.waiting_dupes.pop(h, []):
            self.pending.pop(dup.number, None)
            self._copy(dup, self.study.trials[trial.number])
        self._refresh(self._baseline())

    def _after_tell(self, trial: Any, result: TrialResult, state: str) -> None:
        p = self.progress
        if state == "FAIL":
            p.failed += 1
            base = self._baseline()
            pess = 10.0 * (base.user_attrs.get("tpot_ms") if base is not None else 100.0)
            add_failure_twin(self.study, self.study.trials[trial.number],
                             with_accuracy=self.with_accuracy, pessimistic_tpot=pess,
                             reason=result.reason)
            p.last = f"#{trial.number} FAILED {result.reason}: {(result.message or '')[:120]}"
        else:
            a = result.aggregates
            gated = result.gate is not None and not result.gate.passed
            p.gated += gated
            verdict = ("gated: " + ", ".join(r.rule for r in result.gate.fired())
                       if gated and result.gate else "ok")
            p.last = (f"#{trial.number} TPOT {a.tpot_ms:.2f} ms, accept "
                      f"{a.accept_length or 1:.2f}, accuracy "
                      f"{(a.accuracy if a.accuracy is not None else float('nan')):.1%} - "
                      f"{verdict}") if a and a.tpot_ms else f"#{trial.number} {verdict}"
        p.done += 1

    def _synthetic_failure(self, trial: Any, reason: str, detail: str) -> TrialResult:
        from datetime import UTC
        from datetime import datetime

        from tuner import __version__

        values, _ = self.engine.repair(self.space, dict(trial.params))
        config = self.engine.canonicalize(self.space, values)
        plan = self.engine.plan(self.space, config)
        return TrialResult(
            tuner_version=__version__, status="failed", reason=reason,  # type: ignore[arg-type]
            message=detail, space=self.space.name, machine=self.space.spec.machine.id,
            config=config.as_dict(), config_hash=config.hash(), plan=plan,
            engine=self.engine.name, simulated=self.engine.name.startswith("sim"),
            workload=self.options.workload.model_dump(),
            started_at=datetime.now(UTC).isoformat(timespec="seconds"), host="?")

    def _enforce_deadlines(self, runner: TrialRunner) -> None:
        now = time.monotonic()
        for number, t0 in list(self.started.items()):
            if now - t0 > self.s.deadline_s:
                runner.cancel(number)
                self._record(_cancelled(number, f"trial deadline of {self.s.deadline_s:.0f} s "
                                                f"exceeded"), self._baseline())

    def _cancel_all(self, runner: TrialRunner, why: str) -> None:
        for number in list(runner.inflight):
            runner.cancel(number)
            if number in self.pending:
                self._record(_cancelled(number, why), self._baseline())
        from optuna.trial import TrialState

        for number, (trial, _, _) in list(self.pending.items()):
            trial.set_user_attr("reason", "cancelled")
            self.study.tell(trial, state=TrialState.FAIL)
            del self.pending[number]

    def _refresh(self, baseline: Any | None) -> None:
        p = self.progress
        if baseline is not None:
            p.baseline_tpot = baseline.user_attrs.get("tpot_ms")
        best = feasible_best(self.study)
        if best is not None:
            p.best_tpot, p.best_number = best.values[0], best.number


def _cancelled(number: int, why: str) -> Outcome:
    return Outcome(number, "cancelled", detail=why)


