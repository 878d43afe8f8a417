"""The store of one sweep: its Optuna study, read and written in one place.

:class:`SweepStudy` implements the reads a searcher is handed (:class:`tuner.study.
StudyReads`) and adds the writes, which the sweep's scheduler calls (``tuner/sweep/
_scheduler.py``): the start of a sweep (:meth:`SweepStudy.claim`, :meth:`SweepStudy.resume`),
then per trial :meth:`SweepStudy.enqueue` (a planned configuration) or
:meth:`SweepStudy.enqueue_remeasure`, :meth:`SweepStudy.ask` (ask, suggest, canonicalise
through the engine's callback) and :meth:`SweepStudy.record` (values, constraints,
attributes, artifacts), or :meth:`SweepStudy.copy` for a repeat of a measured configuration;
:meth:`SweepStudy.transaction` groups a trial's writes. What is in flight, and which
repeats wait on it, is the scheduler's memory, never this class's.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from dataclasses import field
from typing import TYPE_CHECKING
from typing import Any

from tuner.errors import UserError
from tuner.space import Config
from tuner.space import SearchSpace
from tuner.study._answer import Answer
from tuner.study._answer import answer_of
from tuner.study._bridge import suggest
from tuner.study._front import feasible_best
from tuner.study._lock import DriverLock
from tuner.study._queue import cancel_queued
from tuner.study._queue import copy_result
from tuner.study._queue import flaky_start
from tuner.study._queue import has_queued
from tuner.study._reads import BaselineRuns
from tuner.study._record import ROLE
from tuner.study._record import baseline_trial
from tuner.study._record import tell_result
from tuner.study._record import trial_at
from tuner.study._regime_sampler import RegimeSamplers
from tuner.study._samplers import make_sampler
from tuner.study._storage import OBJECTIVES
from tuner.study._storage import StudyLocation
from tuner.study._storage import make_artifact_dir
from tuner.study._storage import repair_torn_journal
from tuner.study._storage import storage_errors
from tuner.study._summary import CONTEXT_KEYS
from tuner.study._summary import Role
from tuner.study._summary import StudyContext
from tuner.study._summary import TrialSummary
from tuner.study._summary import summarize
from tuner.study._transaction import one_transaction
from tuner.trial import TrialResult


if TYPE_CHECKING:
    import optuna
    from optuna.trial import FrozenTrial


#: (repaired values, why or None) -> the canonical configuration; raises UserError when
#: the engine refuses it.
Canonicalize = Callable[[dict[str, Any]], tuple[Config, str | None]]


@dataclass
class Proposal:
    """A trial the study handed out (:meth:`SweepStudy.ask`), as the scheduler holds it.
    ``kind``: ``run`` (launch ``config``), ``repeat`` (answered at once from the trial that
    measured it), ``wait`` (the same configuration is in flight: answered when that trial
    is recorded) or ``invalid`` (the engine refused it; recorded FAIL). The study hands out
    ``run`` and ``invalid``; the scheduler makes a ``run`` a ``repeat`` or a ``wait``."""

    number: int
    role: Role
    kind: str
    config: Config | None = None
    config_hash: str | None = None
    trial: optuna.Trial | None = field(default=None, repr=False)
    #: a finals launch on the final accuracy sample, and the trial it launches again
    final_sample: bool = False
    remeasure_of: int | None = None


@dataclass(frozen=True)
class Resumed:
    """What :meth:`SweepStudy.resume` found: what was repaired before the study was opened
    (a torn journal record), or None; the trials a dead driver left running (failed and
    queued again)."""

    repair_note: str | None
    recovered: list[int]


class SweepStudy:
    """Create or resume the study ``name`` at ``location`` for ``space``."""

    def __init__(self, location: StudyLocation, name: str, space: SearchSpace, *,
                 context: StudyContext, with_accuracy: bool, sampler: str,
                 seed: int | None) -> None:
        import warnings

        import optuna
        from optuna.artifacts import FileSystemArtifactStore

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
        self.space, self.with_accuracy = space, with_accuracy
        chosen = make_sampler(sampler, seed, space)    # a bad --sampler: nothing created
        location.check_not_lost()
        make_artifact_dir(location, probe=True)     # checked now, created by claim()
        #: what was repaired before the study was opened (a torn journal record), or None
        self.repair_note = (repair_torn_journal(location.journal) if location.journal
                            else None)
        self.location = location
        self.store = FileSystemArtifactStore(str(location.artifacts))
        directions: list[Any] = (["minimize", "maximize"] if with_accuracy else ["minimize"])
        with storage_errors(location):
            self.study = optuna.create_study(
                study_name=name, storage=location.storage(), directions=directions,
                load_if_exists=True, sampler=chosen)
        if list(self.study.directions) != [getattr(optuna.study.StudyDirection, d.upper())
                                           for d in directions]:
            raise UserError(f"study {name!r} exists with other objectives; use another "
                            "--study name")
        self.context, self.n_objectives = context, len(directions)
        self.lock = DriverLock(self.study)
        self.regime_samplers = RegimeSamplers(seed)    # each load regime's own sampler
        self._finished: dict[int, TrialSummary] = {}   # trial number -> its summary

    # -- reads (tuner.study.StudyReads, and what the driver and the scheduler read) ---------
    def trials(self) -> list[TrialSummary]:
        """Every trial's summary, in number order. A finished trial never changes (Optuna
        refuses writes to it), so its summary is made once: the driver reads the study every
        turn, and at 10,000 trials summarising them all each time cost seconds per trial."""
        return [self._summary(t) for t in self.study.get_trials(deepcopy=False)]

    def _summary(self, trial: FrozenTrial) -> TrialSummary:
        s = self._finished.get(trial.number)
        if s is None:
            s = summarize(trial)
            if trial.state.is_finished():
                self._finished[trial.number] = s
        return s

    def measured(self) -> dict[str, TrialSummary]:
        """config hash -> the finished trial that measured it."""
        out: dict[str, TrialSummary] = {}
        for t in self.trials():
            if t.measured and t.config_hash and t.config_hash not in out:
                out[t.config_hash] = t
        return out

    def counted(self) -> int:
        """Launches that measured something (configurations and the finals'
        re-measurements): what the ``--trials`` budget counts."""
        return sum(1 for t in self.trials() if t.launched)

    def baseline(self) -> TrialSummary | None:
        """The measured baseline (COMPLETE), or None."""
        t = baseline_trial(self.study)
        return self._summary(t) if t is not None else None

    def baseline_runs(self) -> BaselineRuns:
        """The baseline's launches as the driver judges them (:class:`BaselineRuns`)."""
        return BaselineRuns.of(self.trials())

    def best(self, trials: list[TrialSummary] | None = None) -> TrialSummary | None:
        """The pick so far (:func:`tuner.study.feasible_best`); ``trials``: summaries the
        caller already read."""
        best = feasible_best(self.study, trials if trials is not None else self.trials())
        return self._summary(best) if best is not None else None

    def answer(self, trials: list[TrialSummary] | None = None) -> Answer:
        """The study's :class:`tuner.study.Answer` (``trials``: summaries already read)."""
        return answer_of(trials if trials is not None else self.trials(),
                         with_accuracy=self.with_accuracy)

    def queued(self) -> bool:
        """Whether a trial is queued (WAITING): :meth:`ask` takes it first."""
        return has_queued(self.study)

    def budget_spent(self, trials: int | None) -> bool:
        """Whether the study already holds ``trials`` launches and nothing is queued."""
        if trials is None or self.counted() < trials:
            return False
        return not any(t.state in ("WAITING", "RUNNING") for t in self.trials())

    # -- start of a sweep -------------------------------------------------------------------
    def check_identity(self) -> None:
        """Refuse (exit 2) a run that would measure differently from the study's earlier
        launches (another workload, engine, model or measurement option): pooled into one
        row they would mean nothing. Reads only."""
        from tuner.study._summary import context_of
        from tuner.study._summary import identity_differences

        if not self.study.get_trials(deepcopy=False):
            return
        diffs = identity_differences(context_of(self.study), self.context)
        if diffs:
            raise UserError(
                f"study {self.study.study_name!r} was measured differently: "
                + "; ".join(diffs) + ". Its launches and this run's cannot be compared: "
                "start a new study (--study NEW_NAME), or run with the study's options "
                "(`tuner report` shows them)")

    def claim(self, *, break_lock: bool = False) -> None:
        """Take the driver lock, then store what this sweep is (space, model, engine,
        workload) when the study is new. Nothing is written before the lock is held: a
        driver refused because another one runs leaves the study as it was; a resumed study
        keeps what it recorded at creation (its options: :meth:`note_options`)."""
        self.check_identity()
        self.lock.acquire(break_lock=break_lock)
        make_artifact_dir(self.location)     # a refused driver leaves no empty folder
        if self.study.metric_names is None:
            self.study.set_metric_names(list(OBJECTIVES[: self.n_objectives]))
        for key, attr in CONTEXT_KEYS.items():
            value = getattr(self.context, key)
            if (value is not None and key != "sweep_options"
                    and attr not in self.study.user_attrs):
                self.study.set_user_attr(attr, value)

    def note_options(self) -> None:
        """Store this run's options (the run launches something: its options are the
        study's latest)."""
        value = self.context.sweep_options
        if value is not None and self.study.user_attrs.get(CONTEXT_KEYS[
                "sweep_options"]) != value:
            self.study.set_user_attr(CONTEXT_KEYS["sweep_options"], value)

    def resume(self) -> Resumed:
        """Fail what a dead driver left RUNNING and queue those configurations again; queue
        the baseline when the study has none (measured, queued or running)."""
        from optuna.trial import TrialState

        recovered = []
        for t in self.study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
            self._requeue_unmeasured(t, t.user_attrs.get(ROLE, Role.TRIAL.value),
                                     "the driver running it died")
            recovered.append(t.number)
        if not any(t.role == Role.BASELINE and t.state in ("COMPLETE", "WAITING", "RUNNING")
                   for t in self.trials()):
            self.study.enqueue_trial(self.space.complete({}),
                                     user_attrs={ROLE: Role.BASELINE.value})
        return Resumed(self.repair_note, recovered)

    def cancel_queued(self, why: str) -> list[int]:
        """The sweep ends: FAIL what is still queued (:func:`tuner.study._queue.
        cancel_queued`), so no trial is left WAITING; their numbers."""
        return cancel_queued(self.study, self.space, why)

    # -- one trial: enqueue, ask, then record or copy ---------------------------------------
    def transaction(self) -> AbstractContextManager[None]:
        """Group the writes of this block into one transaction (:func:`tuner.study.
        _transaction.one_transaction`): all of them stored, or none."""
        return one_transaction(self.study._storage)

    def enqueue(self, values: dict[str, Any], why: str, serves: str | None = None) -> None:
        """Queue a configuration a searcher planned (``why``: its reason, kept as
        ``proposed_by``; ``serves``: the load regime it was planned for, None: batch 1)."""
        self.study.enqueue_trial(values, user_attrs={ROLE: Role.TRIAL.value, "proposed_by": why,
                                                     **({"serves": serves} if serves else {})})

    def enqueue_remeasure(self, number: int, *, confirm: bool = False,
                          held: dict[str, Any] | None = None, final_sample: bool = False,
                          contender: bool = False, serves: str | None = None) -> None:
        """Queue trial ``number``'s configuration again (the finals): a ``remeasure``
        trial, pooled with it by :func:`tuner.study._pooled.estimates`; ``confirm``: a
        launch of the chosen pick, whose mean is its reported TPOT; ``held``: capacity
        knobs set above the baseline's (the pick's largest KV pool that still serves);
        ``final_sample``: on the final accuracy sample; ``contender``: the search's own,
        before its finals (not one of the finals' race); ``serves``: a regime's pick."""
        base = trial_at(self.study, number)
        attrs: dict[str, Any] = {ROLE: Role.REMEASURE.value, "remeasure_of": number,
                                 "confirm": confirm}
        attrs.update({k: v for k, v in (("contender", contender), ("held", held),
                                        ("serves", serves)) if v})
        if final_sample:     # what its accuracy verdict holds for (_pooled.final_verdicts)
            attrs["final_sample"] = True
            config = base.user_attrs.get("config") or dict(base.params)
            attrs["numerics"] = {k: config[k] for k in self.space.numerics_knobs
                                 if k in config}
            # a pass holds for this speed configuration only, speculation included
            # (lossless in principle, not in every build); a refusal for its numerics
            attrs["speed"] = {k: v for k, v in config.items()
                              if k not in self.space.capacity_knobs}
        self.study.enqueue_trial(dict(base.params), user_attrs=attrs)

    def ask(self, canonicalize: Canonicalize, serves: str | None = None) -> Proposal:
        """The next trial: a queued one first (the baseline, a retry, what was enqueued),
        else the sampler's (``serves``: load regime ``serves``'s own, :mod:`tuner.study.
        _regime_sampler`); its values canonicalised (``invalid``, recorded FAIL, when the
        engine refuses them), its configuration hash stored. One transaction."""
        from optuna.trial import TrialState

        with one_transaction(self.study._storage), self.regime_samplers.asking(self.study,
                                                                               serves):
            trial = self.study.ask()
            if ROLE not in trial.user_attrs:      # not queued: the sampler's own proposal
                trial.set_user_attr("proposed_by", "sampler")
                if serves:
                    trial.set_user_attr("serves", serves)
            role = Role(trial.user_attrs.get(ROLE, Role.TRIAL.value))
            try:
                config, repaired = canonicalize(suggest(self.space, trial))
            except UserError as exc:
                trial.set_user_attr("reason", "launch_error")
                trial.set_user_attr("message", str(exc))
                self.study.tell(trial, state=TrialState.FAIL)
                return Proposal(trial.number, role, "invalid")
            if repaired:
                trial.set_user_attr("repaired", repaired)
            h = config.hash()
            trial.set_user_attr("config_hash", h)
            return Proposal(trial.number, role, "run", config, h, trial=trial,
                            final_sample=bool(trial.user_attrs.get("final_sample")),
                            remeasure_of=trial.user_attrs.get("remeasure_of"))

    def copy(self, proposal: Proposal, earlier_number: int) -> None:
        """Tell ``proposal``'s trial (a repeat) what trial ``earlier_number`` measured: the
        same configuration, answered without a launch."""
        assert proposal.trial is not None, "a repeat is told through its trial"
        copy_result(self.study, proposal.trial, earlier_number)

    def record(self, proposal: Proposal, result: TrialResult, *, requeue: bool = False
               ) -> str:
        """Tell ``proposal``'s result; return ``COMPLETE``, ``FAIL``, or ``RETRY`` (a FAIL
        whose flaky start-up is launched once more; another FAIL is a failure the sampler sees
        as a stand-in, :mod:`tuner.study._stand_ins`);
        ``requeue`` queues the configuration once more (a lost worker). One transaction."""
        with one_transaction(self.study._storage):
            return self._record(proposal, result, requeue)

    def _record(self, proposal: Proposal, result: TrialResult, requeue: bool) -> str:
        base = self.baseline()
        base_tpot = base.tpot_ms if base is not None else None
        assert proposal.trial is not None, "a proposal is recorded through its trial"
        flaky = not requeue and flaky_start(proposal.role, proposal.trial.user_attrs, result)
        # a lost worker measured nothing: ``recovered`` (neither counted nor a failure of
        # the configuration, no stand-in), queued once more like a dead driver's trial
        extra = {"retried": True} if flaky else {"recovered": True} if requeue else None
        state = tell_result(self.study, proposal.trial, result, with_accuracy=self.with_accuracy,
                            baseline_tpot=base_tpot, role=proposal.role.value, store=self.store,
                            folder=self.location.artifacts,
                            extra_attrs=extra)
        if state == "FAIL" and flaky:
            self.study.enqueue_trial(proposal.trial.params, user_attrs={
                ROLE: proposal.role.value, "flaky_retry_of": proposal.number})
            state = "RETRY"
        elif state == "FAIL" and requeue:
            self._enqueue_retry(proposal.trial, proposal.role.value)
        return state

    def abandon(self, proposal: Proposal, why: str) -> None:
        """The sweep stops under ``proposal`` (Ctrl-C): nothing was measured, so it is neither
        a failure nor counted; FAIL it as ``recovered`` and queue the configuration again,
        as :meth:`resume` does for a dead driver's trials."""
        assert proposal.trial is not None
        self._requeue_unmeasured(proposal.trial, proposal.role.value, why)

    def discard(self, repeats: list[Proposal], reason: str) -> None:
        """FAIL ``repeats`` that waited on a trial that will not finish (Ctrl-C)."""
        from optuna.trial import TrialState

        with one_transaction(self.study._storage):
            for repeat in repeats:
                assert repeat.trial is not None
                repeat.trial.set_user_attr("reason", reason)
                self.study.tell(repeat.trial, state=TrialState.FAIL)

    # -- inside -----------------------------------------------------------------------------
    def _requeue_unmeasured(self, trial: optuna.Trial | FrozenTrial, role: str, why: str) -> None:
        """FAIL a trial that never got measured as ``recovered`` (neither a failure nor
        counted) and queue its configuration again. ``trial``: a running or frozen trial."""
        from optuna.trial import TrialState

        storage = self.study._storage
        with one_transaction(storage):
            for key, value in {ROLE: role, "recovered": True, "reason": "cancelled",
                               "message": f"{why}; its configuration was queued again"
                               }.items():
                storage.set_trial_user_attr(trial._trial_id, key, value)
            self.study.tell(trial.number, state=TrialState.FAIL)
            self._enqueue_retry(trial, role)

    def _enqueue_retry(self, trial: optuna.Trial | FrozenTrial, role: str) -> None:
        attrs = {ROLE: role, "retry_of": trial.number}
        # a finals launch stays one
        for key in ("remeasure_of", "confirm", "held", "final_sample", "numerics", "speed",
                    "contender", "proposed_by", "serves"):
            if key in trial.user_attrs:
                attrs[key] = trial.user_attrs[key]
        self.study.enqueue_trial(trial.params, user_attrs=attrs)
