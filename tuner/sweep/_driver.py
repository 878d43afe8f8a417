"""The sweep driver: one sweep from start to end, over three parts that each hold one thing.

* The store, :class:`tuner.study.SweepStudy`: the Optuna study, read and written.
* The searcher, :class:`tuner.sweep._searcher.Searcher` (the product's:
  :class:`tuner.sweep._policy.SearchPolicy`): what to launch next, read from the study.
* The scheduler, :class:`tuner.sweep._scheduler.Scheduler`: the runner's slots, deadlines,
  what is in flight and which repeats wait on it, the driver lock, the runner's identity.

Order of business: take the study (the scheduler's lock; nothing to do when it already
holds the trial budget); fail the trials a dead driver left RUNNING and queue their
configurations again, and queue the baseline as trial 0 when the study has none (the
store's resume); run the baseline alone (every speed-up and accuracy drop is relative to
it); then keep the runner's slots busy until the budget (trials and/or hours) is spent or
the searcher is finished; then cancel what is still queued. The driver calls the store
through four members: ``resume``, ``baseline_runs``, ``cancel_queued`` and ``study``.
"""

from __future__ import annotations

from collections.abc import Callable

from tuner.engines import Engine
from tuner.errors import clip
from tuner.space import SearchSpace
from tuner.study import StudyContext
from tuner.study import SweepStudy
from tuner.study import TrialSummary
from tuner.study.storages import StudyView
from tuner.study.storages import is_storage_error
from tuner.study.storages import storage_problem
from tuner.sweep._base import TrialRunner
from tuner.sweep._policy import SearchPolicy
from tuner.sweep._progress import Progress
from tuner.sweep._progress import resuming
from tuner.sweep._scheduler import FatalSweepError
from tuner.sweep._scheduler import Scheduler
from tuner.sweep._searcher import Searcher
from tuner.sweep._settings import SweepSettings
from tuner.sweep._signals import hold_stops
from tuner.sweep._signals import stop_on_sigterm
from tuner.sweep._signals import terminated
from tuner.trial import TrialOptions
from tuner.workloads import KINDS


class Driver:
    """A sweep of ``space`` on ``engine``; ``searcher``: what decides the launches (the
    product's :class:`SearchPolicy` for these settings when None)."""

    def __init__(self, space: SearchSpace, engine: Engine, options: TrialOptions,
                 settings: SweepSettings, runner_factory: Callable[[], TrialRunner],
                 on_progress: Callable[[Progress], None] | None = None,
                 searcher: Searcher | None = None) -> None:
        searched = space.for_workload(options.workload)   # several users: capacity searched
        self.s = settings
        context = StudyContext(
            space_name=space.name, machine=space.spec.machine.id, engine=engine.name,
            model=space.spec.model.path, workload=options.workload.model_dump(),
            space_yaml=space.source.read_text() if space.source is not None
            and space.source.is_file() else None, sweep_options=settings.options)
        self.sweep = SweepStudy(settings.location, settings.study_name, searched,
                                context=context,
                                with_accuracy=KINDS[options.workload.kind].scores(
                                    options.workload),
                                sampler=settings.sampler, seed=settings.seed)
        self.runner_factory = runner_factory
        self.on_progress = on_progress or (lambda p: None)
        self.progress = Progress(budget=settings.trials, hours=settings.hours)
        self.searcher = searcher if searcher is not None else SearchPolicy.for_sweep(
            space, engine, options.workload, settings)
        self.scheduler = Scheduler(self.sweep, self.searcher, searched, engine, options,
                                   settings, self.progress, self._show)
        #: set when the study already holds the budget: nothing ran, nothing was written
        self.nothing_to_do = False
        self._restore: Callable[[], None] = lambda: None

    def _show(self) -> None:
        self.on_progress(self.progress)

    def run(self) -> StudyView:
        """Run the sweep to its end; the study, to read (Ctrl-C: KeyboardInterrupt once
        every launch in flight was stopped and queued again)."""
        stop_on_sigterm()
        try:
            with self.scheduler.claimed() as claimed:
                self.nothing_to_do = not claimed      # nothing runs, nothing is written
                if claimed:
                    self._run()
        finally:
            self._restore()
        return StudyView.of(self.sweep)

    def _run(self) -> None:
        runner = None
        try:
            self._resume()
            runner = self.runner_factory()
            stop_on_sigterm()                  # again: Ray installs handlers of its own
            self.scheduler.attach(runner)
            self._loop(runner)
        except KeyboardInterrupt as exc:
            self._restore = hold_stops()          # a second Ctrl-C waits for the clean-up
            if runner is not None:
                self.scheduler.cancel_all(runner, "stopped (SIGTERM)" if terminated(exc)
                                          else "interrupted (Ctrl-C)")
            raise
        except Exception as exc:
            if not is_storage_error(exc):
                raise
            if runner is not None:               # nothing can be recorded: stop, clean up
                self.scheduler.stop(runner)
            raise self._storage_failed(exc) from None
        finally:
            if runner is not None:
                runner.close()

    def _storage_failed(self, exc: Exception) -> FatalSweepError:
        loc = self.s.location
        if loc.missing_file():                # deleted under the sweep: say so
            return FatalSweepError(
                f"the study's file {loc.file} was deleted or moved while the sweep ran "
                f"({storage_problem(exc)}); the trials in flight were stopped. What it "
                "recorded went with it: put it back to resume")
        return FatalSweepError(
            f"the study's storage failed mid-run ({storage_problem(exc)}); the trials in "
            "flight were stopped and nothing recorded is lost: fix the storage, then run "
            "the same command to resume")

    def _resume(self) -> None:
        """Say where the study stands (as found: read first); queue what a dead driver left
        running, and the baseline when the study has none."""
        self.progress.refresh(self.sweep, first=True)   # the study's counts so far
        where = resuming(self.sweep, self.s.trials)
        resumed = self.sweep.resume()
        if resumed.repair_note:
            self.progress.last = resumed.repair_note
            self._show()
        self.progress.last = where
        if resumed.recovered:
            self.progress.last += (f"; trials a dead driver left running, queued "
                                   f"again: {', '.join(f'#{n}' for n in resumed.recovered)}")
        self._show()

    def _loop(self, runner: TrialRunner) -> None:
        while True:
            runs = self.sweep.baseline_runs()
            _check_alive(runs.failed if runs.measured is None else None)
            self.scheduler.fill(runner, runs.measured)
            if self.scheduler.idle(runner):
                try:
                    if runs.measured is None:
                        runs = self.sweep.baseline_runs()
                        _check_alive(runs.failed)
                        raise _unmeasured(runs.last_failure)
                finally:
                    self._end_queue()       # judged first: a queued retry is no failure
                return
            self.scheduler.collect(runner)

    def _end_queue(self) -> None:
        """The sweep ends: what is still queued (a retry the budget left no room for) is
        cancelled with a reason, never left WAITING."""
        why = ("the sweep stopped (every configuration is measured, or the sampler repeats "
               "measured ones)" if self.scheduler.exhausted
               else "the sweep's budget was spent before it ran")
        numbers = self.sweep.cancel_queued(why)
        if numbers:
            self.progress.last = (f"queued, never run, cancelled ({why}): "
                                  + ", ".join(f"#{n}" for n in numbers))
            self._show()


def _check_alive(failed: TrialSummary | None) -> None:
    """Raise if the baseline was measured and failed (nothing can be judged without it)."""
    if failed is not None:
        raise FatalSweepError(
            f"the baseline (trial #{failed.number}) failed: {failed.reason}: "
            f"{clip(failed.message, 300)}. Every speed-up and accuracy drop "
            "is relative to it: fix the space or the machine, then run again")


def _unmeasured(last: TrialSummary | None) -> FatalSweepError:
    """The budget ended before the baseline was measured (a failed start-up whose retry
    is still queued): a failure of the sweep (exit 1), never an empty success."""
    why = (f": its last launch (#{last.number}) failed: {last.reason}: "
           f"{clip(last.message, 300)}" if last is not None else "")
    return FatalSweepError(
        f"the budget ended before the baseline was measured{why}. Fix what failed, then "
        "run again (with more --trials): the baseline is launched first")
