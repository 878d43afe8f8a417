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
from dataclasses import replace
from typing import Any

from tuner.engines import Engine
from tuner.errors import UserError
from tuner.errors import clip
from tuner.space import SearchSpace
from tuner.study import Proposal
from tuner.study import Role
from tuner.study import StudyContext
from tuner.study import SweepStudy
from tuner.study import TrialSummary
from tuner.study.storages import is_storage_error
from tuner.study.storages import storage_problem
from tuner.sweep._base import Outcome
from tuner.sweep._base import TrialJob
from tuner.sweep._base import TrialRunner
from tuner.sweep._base import failed_result
from tuner.sweep._final_sample import options_for
from tuner.sweep._policy import SearchPolicy
from tuner.sweep._progress import Progress
from tuner.sweep._progress import resuming
from tuner.sweep._progress import told
from tuner.sweep._settings import SweepSettings
from tuner.sweep._signals import hold_stops
from tuner.sweep._signals import stop_on_sigterm
from tuner.sweep._signals import terminated
from tuner.trial import TrialOptions
from tuner.workloads import KINDS


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
        held = space.capacity_knobs
        space = space.for_workload(options.workload)   # several users: capacity searched
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
        self.policy = SearchPolicy(space, settings, questions=options.workload.questions,
                                   scored=options.workload.kind == "gsm8k",
                                   sample_beside=options.workload.kind != "gsm8k",
                                   regimes=bool(options.workload.regimes),
                                   capacity=held if space.capacity_knobs != held else (),
                                   canonical=self._canonical)
        self.options_noted = False
        self.said_exhausted = False
        #: set when the study already holds the budget: nothing ran, nothing was written
        self.nothing_to_do = False

    def _check_baseline_alive(self) -> None:
        """Raise if the baseline was measured and failed (nothing can be judged without it)."""
        t = self.sweep.failed_baseline()
        if t is not None:
            raise FatalSweepError(
                f"the baseline (trial #{t.number}) failed: {t.reason}: "
                f"{clip(t.message, 300)}. Every speed-up and accuracy drop "
                "is relative to it: fix the space or the machine, then run again")

    def _baseline_unmeasured(self) -> None:
        """The budget ended before the baseline was measured (a failed start-up whose retry
        is still queued): a failure of the sweep (exit 1), never an empty success."""
        runs = [t for t in self.sweep.trials() if t.role == Role.BASELINE and t.state == "FAIL"]
        why = (f": its last launch (#{runs[-1].number}) failed: {runs[-1].reason}: "
               f"{clip(runs[-1].message, 300)}" if runs else "")
        raise FatalSweepError(
            f"the budget ended before the baseline was measured{why}. Fix what failed, then "
            "run again (with more --trials): the baseline is launched first")

    # -- the loop ---------------------------------------------------------------------------
    def _claim(self) -> bool:
        """Check the study's identity and budget, then take it; False: nothing to run."""
        try:
            self.sweep.check_identity()
            if self.sweep.budget_spent(self.s.trials):
                self.nothing_to_do = True       # nothing runs, nothing is written
                return False
            self.sweep.claim(break_lock=self.s.break_lock)
        except Exception as exc:                # a full disk, a read-only database...
            if not is_storage_error(exc):
                raise
            raise FatalSweepError(f"the study's storage failed at the start "
                                  f"({storage_problem(exc)}): nothing was run") from None
        return True

    def _resume(self) -> None:
        """Say where the study stands; queue what a dead driver left running, and the
        baseline when the study has none."""
        if self.sweep.repair_note:
            self.progress.last = self.sweep.repair_note
            self.on_progress(self.progress)
        self.progress.refresh(self.sweep, first=True)   # the study's counts so far
        self.progress.last = resuming(self.sweep, self.s.trials)
        recovered = self.sweep.recover()
        if recovered:
            self.progress.last += (f"; trials a dead driver left running, queued "
                                   f"again: {', '.join(f'#{n}' for n in recovered)}")
        self.on_progress(self.progress)
        self.sweep.enqueue_baseline()

    def run(self) -> Any:
        stop_on_sigterm()
        if not self._claim():
            return self.study
        runner, restore = None, lambda: None
        try:
            self._resume()
            runner = self.runner_factory()
            stop_on_sigterm()                  # again: Ray installs handlers of its own
            owner = getattr(runner, "node_id", None)
            if owner:
                self.options = replace(self.options, server_env={
                    **self.options.server_env, OWNER_ENV: owner})
            self.lock.extra = {"ray_session": getattr(runner, "session_dir", None)}
            self.lock.renew(force=True)
            self._loop(runner)
        except KeyboardInterrupt as exc:
            restore = hold_stops()                # a second Ctrl-C waits for the clean-up
            if runner is not None:
                self._cancel_all(runner, "stopped (SIGTERM)" if terminated(exc)
                                 else "interrupted (Ctrl-C)")
            raise
        except Exception as exc:
            if not is_storage_error(exc):
                raise
            if runner is not None:               # nothing can be recorded: stop, clean up
                for number in list(runner.inflight):
                    runner.cancel(number)
            loc = self.s.location
            if loc.missing_file():                # deleted under the sweep: say so
                raise FatalSweepError(
                    f"the study's file {loc.file} was deleted or moved while the sweep ran "
                    f"({storage_problem(exc)}); the trials in flight were stopped. What it "
                    "recorded went with it: put it back to resume") from None
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
            restore()
        return self.study

    def _budget_left(self) -> bool:
        if self.exhausted:
            return False
        if self.policy.finished(self.sweep.counted() + len(self.pending)):
            self.exhausted = True
            self.progress.last = ("stopping: every configuration of the space is measured "
                                  "and its finals are done (the rest of the budget is not "
                                  "needed)")
            self.on_progress(self.progress)
            return False
        if self.s.hours is not None and (
                time.monotonic() - self.progress.started) > self.s.hours * 3600:
            return False
        return self.s.trials is None or self.sweep.counted() + len(self.pending) < self.s.trials

    def _loop(self, runner: TrialRunner) -> None:
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
                try:
                    if baseline is None:
                        self._check_baseline_alive()
                        self._baseline_unmeasured()
                finally:
                    self._end_queue()       # judged first: a queued retry is no failure
                return
            for outcome in runner.poll(timeout=0.5):
                self._record(outcome)
            self._enforce_deadlines(runner)
            self.progress.running = len(runner.inflight)
            self.on_progress(self.progress)

    def _end_queue(self) -> None:
        """The sweep ends: what is still queued (a retry the budget left no room for) is
        cancelled with a reason, never left WAITING."""
        why = ("the sweep stopped (every configuration is measured, or the sampler repeats "
               "measured ones)" if self.exhausted
               else "the sweep's budget was spent before it ran")
        numbers = self.sweep.cancel_queued(why)
        if numbers:
            self.progress.last = (f"queued, never run, cancelled ({why}): "
                                  + ", ".join(f"#{n}" for n in numbers))
            self.on_progress(self.progress)

    def _canonical(self, values: dict[str, Any]) -> tuple[Any, str | None]:
        repaired_values, why = self.engine.repair(self.space, values)
        return self.engine.canonicalize(self.space, repaired_values), why

    def _submit_next(self, runner: TrialRunner, baseline: TrialSummary | None) -> bool:
        launched = self.sweep.counted() + len(self.pending) if baseline is not None else 0
        prop = self.policy.next(self.sweep, baseline, launched=launched,   # (no read before
                                started=self.progress.started)             # the baseline)
        if self.policy.exhausted_at is not None and not self.said_exhausted:
            self.said_exhausted = True
            self.progress.last = ("every configuration of the space is measured: the finals "
                                  "start now")
            self.on_progress(self.progress)
        if prop is None:
            return False             # the confirmations wait for the baseline's final run
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
                           self.policy.final_questions,
                           self.policy.early_stop(self.sweep, prop, baseline),
                           self.s.search_questions)
        assert prop.config is not None
        job = TrialJob(key=prop.number, space=self.space, engine=self.engine,
                       config=prop.config, options=opts, deadline_s=self.s.deadline_s)
        runner.submit(job)
        if not self.options_noted:         # this run launches: its options are the latest
            self.sweep.note_options()
            self.options_noted = True
        self.pending[prop.number] = prop
        self.started[prop.number] = time.monotonic()
        self.progress.last = f"#{prop.number} started: {prop.config.describe()}"
        return True

    def _record(self, outcome: Outcome) -> None:
        prop = self.pending.pop(outcome.key)
        self.started.pop(outcome.key, None)
        result = outcome.result
        requeue = False
        if result is None:
            reason = {"worker_lost": "worker_lost", "cancelled": "cancelled"}.get(
                outcome.kind, "launch_error")
            assert prop.config is not None
            result = failed_result(TrialJob(prop.number, self.space, self.engine, prop.config,
                                            self.options, self.s.deadline_s), reason,
                                   outcome.detail or outcome.kind)
            h = prop.config_hash or ""
            if outcome.kind == "worker_lost" and h not in self.requeued:
                self.requeued.add(h)
                requeue = True
        state = self.sweep.record(prop, result, requeue=requeue)
        self.progress.last = told(prop.number, result, state)
        self.progress.refresh(self.sweep)

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

def _cancelled(number: int, why: str) -> Outcome:
    return Outcome(number, "cancelled", detail=why)
