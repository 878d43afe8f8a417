"""The scheduler: what runs now, and the memory of it.

It owns the runner's slots, each launch's deadline, what is in flight and which repeats
wait on it, the driver lock (:meth:`Scheduler.claimed`, a context manager) and the
runner's identity (the owner tag every server it starts carries, :data:`OWNER_ENV`). It
asks the searcher (:class:`tuner.sweep._searcher.Searcher`) for a suggestion whenever a slot
is free and the budget has room, makes it a trial through the store
(:class:`tuner.study.SweepStudy`: enqueue, ask), launches it, and records what the runner
reports.

Identical canonical configurations are measured once: a repeat of a measured configuration
is told its result at once; a repeat of one in flight waits and is told that launch's
result when it is recorded (a finals' re-measurement launches whatever runs). The store
keeps none of this: a dead driver's in-flight trials are found in the study by the next
one (:meth:`tuner.study.SweepStudy.resume`).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from tuner.engines import Engine
from tuner.errors import UserError
from tuner.space import Config
from tuner.space import SearchSpace
from tuner.study import Proposal
from tuner.study import Role
from tuner.study import SweepStudy
from tuner.study import TrialSummary
from tuner.study.storages import is_storage_error
from tuner.study.storages import storage_problem
from tuner.sweep._base import Outcome
from tuner.sweep._base import TrialJob
from tuner.sweep._base import TrialRunner
from tuner.sweep._base import failed_result
from tuner.sweep._final_sample import options_for
from tuner.sweep._progress import Progress
from tuner.sweep._progress import told
from tuner.sweep._searcher import Ask
from tuner.sweep._searcher import Planned
from tuner.sweep._searcher import Remeasure
from tuner.sweep._searcher import Searcher
from tuner.sweep._searcher import Suggestion
from tuner.sweep._searcher import Turn
from tuner.sweep._searcher import Wait
from tuner.sweep._settings import SweepSettings
from tuner.trial import EarlyStop
from tuner.trial import TrialOptions


#: Env var tagging every server a sweep starts with its runner's node id (see _reaper.py).
OWNER_ENV = "TUNER_OWNER"

#: Stop when the sampler keeps proposing configurations that were already measured.
MAX_REPEATS_IN_A_ROW = 50


class FatalSweepError(UserError):
    """The sweep cannot go on (the baseline failed, the storage failed): exit 1."""

    exit_code = 1


def canonicalizer(engine: Engine, space: SearchSpace
                  ) -> Callable[[dict[str, Any]], tuple[Config, str | None]]:
    """values -> (the canonical configuration ``engine`` launches for them in ``space``,
    why they were repaired or None); raises UserError when the engine refuses them."""
    def canonical(values: dict[str, Any]) -> tuple[Config, str | None]:
        repaired_values, why = engine.repair(space, values)
        return engine.canonicalize(space, repaired_values), why
    return canonical


class Scheduler:
    """Runs ``searcher``'s suggestions for ``store`` on a runner; ``progress`` is updated
    after every event and ``show`` shows it."""

    def __init__(self, store: SweepStudy, searcher: Searcher, space: SearchSpace,
                 engine: Engine, options: TrialOptions, settings: SweepSettings,
                 progress: Progress, show: Callable[[], None]) -> None:
        self.store, self.searcher, self.space, self.engine = store, searcher, space, engine
        self.options, self.s, self.progress, self.show = options, settings, progress, show
        self.canonical = canonicalizer(engine, space)
        self.pending: dict[int, Proposal] = {}         # trial number -> launched, in flight
        self.started: dict[int, float] = {}            # trial number -> when (its deadline)
        self.inflight: dict[str, int] = {}             # config hash -> trial number running
        self.waiting: dict[str, list[Proposal]] = {}   # config hash -> repeats waiting on it
        self.requeued: set[str] = set()                # hashes a lost worker queued again
        self.repeats_in_a_row = 0
        #: nothing is left to launch (the searcher is finished, or the sampler repeats)
        self.exhausted = False
        self.options_noted = self.said_exhausted = False

    # -- the study for this run -------------------------------------------------------------
    @contextlib.contextmanager
    def claimed(self) -> Iterator[bool]:
        """The study for this run, held while the block runs. Its identity is checked first
        (exit 2 when it was measured differently); then, unless it already holds the trial
        budget (False: nothing is written), the driver lock is taken (True) and released
        when the block ends. A storage that fails while it is taken is a
        :class:`FatalSweepError` (nothing was run); one that fails while it is released
        leaves a dead driver's lock, taken over on the next start."""
        try:
            self.store.check_identity()
            spent = self.store.budget_spent(self.s.trials)
            if not spent:
                self.store.claim(break_lock=self.s.break_lock)
        except Exception as exc:                # a full disk, a read-only database...
            if not is_storage_error(exc):
                raise
            raise FatalSweepError(f"the study's storage failed at the start "
                                  f"({storage_problem(exc)}): nothing was run") from None
        if spent:
            yield False
            return
        try:
            yield True
        finally:
            try:
                self.store.lock.release()
            except Exception as exc:             # the storage is gone: a dead driver's lock
                if not is_storage_error(exc):    # is taken over on the next start
                    raise

    def attach(self, runner: TrialRunner) -> None:
        """Launch on ``runner``: every server it starts carries its owner tag (its reaper
        ends them when the driver dies), and the lock names its Ray session."""
        owner = getattr(runner, "node_id", None)
        if owner:
            self.options = replace(self.options, server_env={
                **self.options.server_env, OWNER_ENV: owner})
        self.store.lock.extra = {"ray_session": getattr(runner, "session_dir", None)}
        self.store.lock.renew(force=True)

    # -- one turn: fill the slots, then collect ---------------------------------------------
    def fill(self, runner: TrialRunner, baseline: TrialSummary | None) -> None:
        """Renew the lock, then start what the searcher suggests while ``runner`` has a free
        slot and the budget room. Until ``baseline`` is measured it runs alone: every other
        launch is judged against it."""
        self.store.lock.renew()
        while len(runner.inflight) < runner.slots and self._budget_left():
            if baseline is None and self.pending:
                break
            if not self._submit_next(runner, baseline):
                break
            if baseline is None:
                break

    def idle(self, runner: TrialRunner) -> bool:
        """Whether nothing is in flight (after :meth:`fill`: the sweep is over)."""
        return not runner.inflight and not self.pending

    def collect(self, runner: TrialRunner) -> None:
        """Record what ``runner`` reports within half a second, stop what ran past its
        deadline, and show where the sweep stands."""
        for outcome in runner.poll(timeout=0.5):
            self._record(outcome)
        now = time.monotonic()
        for number, t0 in list(self.started.items()):
            if now - t0 > self.s.deadline_s:
                runner.cancel(number)
                self._record(Outcome(number, "cancelled", detail=(
                    f"trial deadline of {self.s.deadline_s:.0f} s exceeded")))
        self.progress.running = len(runner.inflight)
        self.show()

    def _budget_left(self) -> bool:
        if self.exhausted:
            return False
        why = self.searcher.finished(self.store.counted() + len(self.pending))
        if why is not None:
            self.exhausted = True
            self._say(f"stopping: {why} (the rest of the budget is not needed)", now=True)
            return False
        if self.s.hours is not None and (
                time.monotonic() - self.progress.started) > self.s.hours * 3600:
            return False
        return self.s.trials is None or self.store.counted() + len(self.pending) < self.s.trials

    def _submit_next(self, runner: TrialRunner, baseline: TrialSummary | None) -> bool:
        launched = self.store.counted() + len(self.pending) if baseline is not None else 0
        suggestion = self.searcher.suggest(self.store, Turn(         # (no read before the
            baseline, launched, time.monotonic() - self.progress.started))     # baseline)
        if self.searcher.exhausted() and not self.said_exhausted:
            self.said_exhausted = True
            self._say("every configuration of the space is measured: the finals start now",
                      now=True)
        if isinstance(suggestion, Wait):
            return False             # the confirmations wait for the baseline's final run
        prop = self._propose(suggestion)
        self.searcher.proposed(suggestion, prop)
        if prop.kind == "invalid":
            return True
        if prop.kind in ("repeat", "wait"):
            self._say(f"#{prop.number} repeats a configuration already "
                      + ("measured: its result is copied, nothing launched"
                         if prop.kind == "repeat" else "running: it waits for it"))
            self.repeats_in_a_row += 1
            if self.repeats_in_a_row >= MAX_REPEATS_IN_A_ROW:
                self.exhausted = True
                self._say(f"stopping: the sampler proposed {MAX_REPEATS_IN_A_ROW} "
                          "measured configurations in a row (space exhausted?)")
                return False
            return True
        self.repeats_in_a_row = 0
        self._launch(runner, prop, baseline)
        return True

    # -- a suggestion becomes a trial -------------------------------------------------------
    def _propose(self, suggestion: Suggestion) -> Proposal:
        """Make ``suggestion`` a trial through the store: a re-measurement or a planned
        configuration is queued (a trial already queued goes before a planned one), then
        the study is asked for its next trial, and that trial de-duplicated. One
        transaction, the re-measurement's queueing apart."""
        if isinstance(suggestion, Remeasure):
            self.store.enqueue_remeasure(suggestion.number, confirm=suggestion.confirm,
                                         held=suggestion.held,
                                         final_sample=suggestion.final_sample,
                                         contender=suggestion.contender,
                                         serves=suggestion.serves)
        with self.store.transaction():
            if isinstance(suggestion, Planned) and not self.store.queued():
                self.store.enqueue(suggestion.values, suggestion.why, suggestion.serves)
            prop = self.store.ask(self.canonical,
                                  suggestion.serves if isinstance(suggestion, Ask) else None)
            return prop if prop.kind == "invalid" else self._deduplicate(prop)

    def _deduplicate(self, prop: Proposal) -> Proposal:
        """A repeat of a measured configuration is told its result (``repeat``); one of a
        configuration in flight waits for it (``wait``); else it runs (a baseline or a
        finals' launch runs whatever was measured, a finals' launch whatever runs)."""
        h = prop.config_hash or ""
        earlier = self.store.measured().get(h)
        if earlier is not None and prop.role not in (Role.BASELINE, Role.REMEASURE):
            self.store.copy(prop, earlier.number)
            return replace(prop, kind="repeat")
        if h in self.inflight and prop.role != Role.REMEASURE:
            waiting = replace(prop, role=Role.DUPLICATE, kind="wait")
            self.waiting.setdefault(h, []).append(waiting)
            return waiting
        self.inflight[h] = prop.number
        return prop

    def _launch(self, runner: TrialRunner, prop: Proposal, baseline: TrialSummary | None
                ) -> None:
        opts = options_for(self.options, prop, baseline, self.store.trials,
                           self.s.final_questions, self._early_stop(prop, baseline),
                           self.s.search_questions)
        assert prop.config is not None
        runner.submit(TrialJob(key=prop.number, space=self.space, engine=self.engine,
                               config=prop.config, options=opts, deadline_s=self.s.deadline_s))
        if not self.options_noted:         # this run launches: its options are the latest
            self.store.note_options()
            self.options_noted = True
        self.pending[prop.number] = prop
        self.started[prop.number] = time.monotonic()
        self._say(f"#{prop.number} started: {prop.config.describe()}")

    def _early_stop(self, prop: Proposal, baseline: TrialSummary | None) -> EarlyStop | None:
        """For a search trial once the baseline is measured: judge it against the best so
        far's TPOT interval (never the baseline's own run or the finals')."""
        if self.s.early_stop <= 0 or baseline is None or prop.role != Role.TRIAL:
            return None
        best = self.store.best()
        high = best.tpot_ci95[1] if best is not None and best.tpot_ci95 else None
        return EarlyStop(self.s.early_stop, slower_than_ms=high)

    # -- a launch ends ----------------------------------------------------------------------
    def _record(self, outcome: Outcome) -> None:
        """Record ``outcome``'s result (a lost worker's configuration queued once more) and
        answer the repeats that waited on it: one transaction."""
        prop = self.pending.pop(outcome.key)
        self.started.pop(outcome.key, None)
        result, requeue = outcome.result, False
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
        with self.store.transaction():
            state = self.store.record(prop, result, requeue=requeue)
            h = prop.config_hash or ""
            self.inflight.pop(h, None)
            for repeat in self.waiting.pop(h, []):
                self.store.copy(repeat, prop.number)
        self._say(told(prop.number, result, state))
        self.progress.refresh(self.store)

    def cancel_all(self, runner: TrialRunner, why: str) -> None:
        """Ctrl-C: stop every trial in flight and queue it again (not a failure); fail the
        repeats that waited on them."""
        self.stop(runner)
        for number, prop in list(self.pending.items()):
            self.store.abandon(prop, why)
            self.inflight.pop(prop.config_hash or "", None)
            del self.pending[number]
            self.started.pop(number, None)
        self.store.discard([r for rs in self.waiting.values() for r in rs], "cancelled")
        self.waiting.clear()

    def stop(self, runner: TrialRunner) -> None:
        """Stop every trial in flight, recording nothing (the storage failed)."""
        for number in list(runner.inflight):
            runner.cancel(number)

    def _say(self, line: str, *, now: bool = False) -> None:
        self.progress.last = line
        if now:
            self.show()
