"""The sweep driver: schedules trials on a runner; the study's reads and writes are
:class:`tuner.study.SweepStudy`'s (twice per trial: propose, record).

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
from tuner.errors import clip
from tuner.space import SearchSpace
from tuner.study import Proposal
from tuner.study import Role
from tuner.study import StudyContext
from tuner.study import StudyLocation
from tuner.study import SweepStudy
from tuner.study import TrialSummary
from tuner.study import is_storage_error
from tuner.study import storage_problem
from tuner.sweep._base import Outcome
from tuner.sweep._base import TrialJob
from tuner.sweep._base import TrialRunner
from tuner.sweep._final_sample import FAILED
from tuner.sweep._final_sample import PENDING
from tuner.sweep._final_sample import final_baseline
from tuner.sweep._final_sample import options_for
from tuner.trial import EarlyStop
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
    #: the search plan (screens, combination, local search: _strategy.py); False: the
    #: sampler alone
    staged: bool = True
    explore_every: int = 3         # with the plan: every n-th local proposal is the sampler's
    #: share of the budget (trials, or hours) spent launching the finalists again
    #: (_finals.py); 0: the pick is the fastest single reading
    finals_share: float = 0.2
    #: judge a search trial after this share of its workload and stop it there when it is
    #: clearly slower than the best so far or its speculation collapsed (EarlyStop); 0: off
    early_stop: float = 0.0
    #: GSM8K questions of the pick's confirmation launches and of one more baseline launch,
    #: gated against each other (_final_sample.py); None: the screening sample
    final_questions: int | None = None
    #: measured requests (GSM8K questions) of each search trial, a subset of the
    #: baseline's and the finals': a cheaper first fidelity, the finals deciding; None: all
    search_questions: int | None = None
    #: the options the user ran the sweep with, stored with the study (no secrets)
    options: dict[str, Any] | None = None


@dataclass
class Progress:
    """What the display shows; updated by the driver after every event. Counts cover the
    whole study (a resumed sweep's earlier runs too); ``done_before``: launches done when
    this run started (this run's pace sets the ETA)."""

    started: float = field(default_factory=time.monotonic)
    budget: int | None = None
    hours: float | None = None
    done: int = 0                      # launches the budget counts
    done_before: int = 0
    failed: int = 0
    failures: dict[str, int] = field(default_factory=dict)    # reason -> launches
    gated: int = 0
    duplicates: int = 0
    running: int = 0
    baseline_tpot: float | None = None
    best_tpot: float | None = None
    best_number: int | None = None
    best_launches: int = 1             # the pick's launches (x N once the finals ran)
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
        self.space, self.engine, self.options, self.s = space, engine, options, settings
        context = StudyContext(
            space_name=space.name, machine=space.spec.machine.id, engine=engine.name,
            model=space.spec.model.path, workload=options.workload.model_dump(),
            space_yaml=space.source.read_text() if space.source is not None
            and space.source.is_file() else None, sweep_options=settings.options)
        self.sweep = SweepStudy(settings.location, settings.study_name, space, context=context,
                                with_accuracy=KINDS[options.workload.kind].scores(
                                    options.workload),
                                sampler=settings.sampler, seed=settings.seed)
        self.study = self.sweep.study
        self.lock = self.sweep.lock
        self.runner_factory = runner_factory
        self.on_progress = on_progress or (lambda p: None)
        self.progress = Progress(budget=settings.trials, hours=settings.hours)
        self.pending: dict[int, Proposal] = {}
        self.started: dict[int, float] = {}
        self.requeued: set[str] = set()
        self.repeats_in_a_row = 0
        self.exhausted = False
        from tuner.sweep._finals import Finals

        self.finals = Finals.for_space(space, trials=settings.trials, hours=settings.hours,
                                       share=settings.finals_share,
                                       questions=options.workload.questions,
                                       final_questions=settings.final_questions)
        self.plan = None
        if settings.staged:
            from tuner.sweep._strategy import StagedPlan

            self.plan = StagedPlan(space, lambda v: self._canonical(v)[0].hash(),
                                   seed=settings.seed, explore_every=settings.explore_every)

    def _check_baseline_alive(self) -> None:
        """Raise if the baseline was measured and failed (nothing can be judged without it)."""
        t = self.sweep.failed_baseline()
        if t is not None:
            raise FatalSweepError(
                f"the baseline (trial #{t.number}) failed: {t.reason}: "
                f"{clip(t.message, 300)}. Every speed-up and accuracy drop "
                "is relative to it: fix the space or the machine, then run again")

    # -- the loop ---------------------------------------------------------------------------
    def run(self) -> Any:
        self.sweep.claim(break_lock=self.s.break_lock)
        runner = None
        try:
            if self.sweep.repair_note:
                self.progress.last = self.sweep.repair_note
                self.on_progress(self.progress)
            recovered = self.sweep.recover()
            if recovered:
                self.progress.last = f"re-queued trials left running: {recovered}"
            self.sweep.enqueue_baseline()
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
        except Exception as exc:
            if not is_storage_error(exc):
                raise
            if runner is not None:               # nothing can be recorded: stop, clean up
                for number in list(runner.inflight):
                    runner.cancel(number)
            raise FatalSweepError(
                f"the study's storage failed mid-run ({storage_problem(exc)}); the trials in "
                "flight were stopped and nothing recorded is lost: fix the storage, then run "
                "the same command to resume") from None
        finally:
            if runner is not None:
                runner.close()
            try:
                self.lock.release()
            except Exception as exc:             # the storage is gone: a dead driver's lock
                if not is_storage_error(exc):    # is taken over on the next start
                    raise
        return self.study

    def _budget_left(self) -> bool:
        if self.exhausted:
            return False
        if self.s.hours is not None and (
                time.monotonic() - self.progress.started) > self.s.hours * 3600:
            return False
        return self.s.trials is None or self.sweep.counted() + len(self.pending) < self.s.trials

    def _loop(self, runner: TrialRunner) -> None:
        self._refresh(first=True)
        while True:
            self.lock.renew()
            baseline = self.sweep.baseline()
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
                self._record(outcome)
            self._enforce_deadlines(runner)
            self.progress.running = len(runner.inflight)
            self.on_progress(self.progress)

    def _canonical(self, values: dict[str, Any]) -> tuple[Any, str | None]:
        repaired_values, why = self.engine.repair(self.space, values)
        return self.engine.canonicalize(self.space, repaired_values), why

    def _finalist(self, baseline: TrialSummary | None
                  ) -> tuple[int, bool, dict[str, Any] | None] | None:
        elapsed = time.monotonic() - self.progress.started
        if baseline is None or not self.finals.due(
                trials=self.s.trials, launched=self.sweep.counted() + len(self.pending),
                elapsed_s=elapsed, rows=self.sweep.trials()):
            return None
        return self.finals.choose(self.sweep.trials(), elapsed_s=elapsed)

    def _submit_next(self, runner: TrialRunner, baseline: TrialSummary | None) -> bool:
        finalist = self._finalist(baseline)
        if finalist is not None:
            assert baseline is not None
            number, confirm, held = finalist
            final = self._final_questions() is not None
            first = final_baseline(self.sweep.trials(), baseline.number) if final else None
            if first == PENDING:
                return False             # the confirmations wait for the baseline's run
            if final and first is None:
                prop = self.sweep.remeasure(self._canonical, baseline.number,
                                            final_sample=True)
            else:
                prop = self.sweep.remeasure(self._canonical, number, confirm, held,
                                            final_sample=final and first != FAILED)
        else:
            planned = None
            if self.plan is not None and baseline is not None:
                planned = self.plan.next(self.sweep.measured(), self.sweep.best(), baseline)
            prop = self.sweep.propose(self._canonical, planned=planned)
            if planned is not None and self.plan is not None and (
                    prop.config_hash != self.plan.last):
                self.plan.not_taken()
        if prop.kind == "invalid":
            return True
        if prop.kind in ("repeat", "wait"):
            self.progress.last = (f"#{prop.number} repeats a configuration already "
                                  + ("measured: its result is copied, nothing launched"
                                     if prop.kind == "repeat" else "running: it waits for it"))
            self.repeats_in_a_row += 1
            if self.repeats_in_a_row >= MAX_REPEATS_IN_A_ROW:
                self.exhausted = True
                self.progress.last = (f"stopping: the sampler proposed {MAX_REPEATS_IN_A_ROW} "
                                      "measured configurations in a row (space exhausted?)")
                return False
            return True
        self.repeats_in_a_row = 0
        opts = options_for(self.options, prop, baseline, self.sweep.trials,
                           self._final_questions(), self._early_stop(prop, baseline),
                           self.s.search_questions)
        assert prop.config is not None
        job = TrialJob(key=prop.number, space=self.space, engine=self.engine,
                       config=prop.config, options=opts, deadline_s=self.s.deadline_s)
        runner.submit(job)
        self.pending[prop.number] = prop
        self.started[prop.number] = time.monotonic()
        self.progress.last = f"#{prop.number} started: {prop.config.describe()}"
        return True

    def _final_questions(self) -> int | None:
        """The final sample's size when this sweep has one (a scored workload only)."""
        return self.s.final_questions if self.options.workload.kind == "gsm8k" else None

    def _early_stop(self, prop: Proposal, baseline: TrialSummary | None) -> EarlyStop | None:
        """For a search trial once the baseline is measured: judge it against the best so
        far's TPOT interval (never the baseline's own run or the finals')."""
        if self.s.early_stop <= 0 or baseline is None or prop.role != Role.TRIAL:
            return None
        best = self.sweep.best()
        high = best.tpot_ci95[1] if best is not None and best.tpot_ci95 else None
        return EarlyStop(self.s.early_stop, slower_than_ms=high)

    def _record(self, outcome: Outcome) -> None:
        prop = self.pending.pop(outcome.key)
        self.started.pop(outcome.key, None)
        result = outcome.result
        requeue = False
        if result is None:
            reason = {"worker_lost": "worker_lost", "cancelled": "cancelled"}.get(
                outcome.kind, "launch_error")
            result = self._synthetic_failure(prop, reason, outcome.detail or outcome.kind)
            h = prop.config_hash or ""
            if outcome.kind == "worker_lost" and h not in self.requeued:
                self.requeued.add(h)
                requeue = True
        state = self.sweep.record(prop, result, requeue=requeue)
        self._after_tell(prop, result, state)
        self._refresh()

    def _after_tell(self, prop: Proposal, result: TrialResult, state: str) -> None:
        p = self.progress
        n = prop.number
        if state in ("FAIL", "RETRY"):
            p.last = f"#{n} FAILED {result.reason}: {clip(result.message, 160)}"
            if state == "RETRY":
                p.last += " (a start-up failure: launching it once more)"
        elif state == "PRUNED":
            p.last = f"#{n} {clip(result.message, 200)}"
        else:
            a = result.aggregates
            gated = result.gate is not None and not result.gate.passed
            verdict = ("gated: " + ", ".join(r.rule for r in result.gate.fired())
                       if gated and result.gate else "ok")
            acc = f", accuracy {a.accuracy:.1%}" if a and a.accuracy is not None else ""
            p.last = (f"#{n} TPOT {a.tpot_ms:.2f} ms, accept {a.accept_length or 1:.2f}"
                      f"{acc} - {verdict}") if a and a.tpot_ms else f"#{n} {verdict}"

    def _synthetic_failure(self, prop: Proposal, reason: str, detail: str) -> TrialResult:
        from datetime import UTC
        from datetime import datetime

        from tuner import __version__

        assert prop.config is not None
        plan = self.engine.plan(self.space, prop.config)
        return TrialResult(
            tuner_version=__version__, status="failed", reason=reason,  # type: ignore[arg-type]
            message=detail, space=self.space.name, machine=self.space.spec.machine.id,
            config=prop.config.as_dict(), config_hash=prop.config.hash(), plan=plan,
            engine=self.engine.name, simulated=self.engine.name.startswith("sim"),
            workload=self.options.workload.model_dump(),
            started_at=datetime.now(UTC).isoformat(timespec="seconds"), host="?")

    def _enforce_deadlines(self, runner: TrialRunner) -> None:
        now = time.monotonic()
        for number, t0 in list(self.started.items()):
            if now - t0 > self.s.deadline_s:
                runner.cancel(number)
                self._record(_cancelled(number, f"trial deadline of {self.s.deadline_s:.0f} s "
                                                f"exceeded"))

    def _cancel_all(self, runner: TrialRunner, why: str) -> None:
        """Ctrl-C: stop every trial in flight and queue it again (not a failure)."""
        for number in list(runner.inflight):
            runner.cancel(number)
        for number, prop in list(self.pending.items()):
            self.sweep.abandon(prop, why)
            del self.pending[number]
            self.started.pop(number, None)
        self.sweep.cancel_waiting("cancelled")

    def _refresh(self, first: bool = False) -> None:
        p = self.progress
        baseline = self.sweep.baseline()
        if baseline is not None:
            p.baseline_tpot = baseline.tpot_ms
        rows = self.sweep.trials()
        p.done = sum(r.launched for r in rows)
        if first:
            p.done_before = p.done
        failed = [r for r in rows if r.launched and r.state == "FAIL"]
        p.failed = len(failed)
        p.failures = {}
        for r in failed:
            p.failures[r.reason or "unknown"] = p.failures.get(r.reason or "unknown", 0) + 1
        p.gated = sum(r.launched and r.state == "COMPLETE" and bool(r.gate) for r in rows)
        p.duplicates = sum(r.role == Role.DUPLICATE for r in rows)
        pick = self.sweep.answer(rows).pick
        if pick is not None:
            p.best_tpot, p.best_number, p.best_launches = (pick.tpot_ms, pick.number,
                                                           pick.launches)


def _cancelled(number: int, why: str) -> Outcome:
    return Outcome(number, "cancelled", detail=why)
