"""Opening an existing study for reading (report, export, dashboard, the sweep's last
words): :class:`StudyView`, a typed read-only view that owns the Optuna study, as Optuna's
``Study`` owns its storage. Nothing outside :mod:`tuner.study` holds the Optuna study
itself: readers take the view, and every trial they see is a :class:`TrialSummary`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tuner.errors import UserError
from tuner.study._answer import Answer
from tuner.study._answer import study_answer
from tuner.study._record import baseline_trial
from tuner.study._record import trial_at
from tuner.study._storage import StudyLocation
from tuner.study._storage import locate
from tuner.study._storage import redact_url
from tuner.study._storage import storage_errors
from tuner.study._summary import StudyContext
from tuner.study._summary import TrialSummary
from tuner.study._summary import context_of
from tuner.study._summary import summaries
from tuner.study._summary import summarize


if TYPE_CHECKING:
    import optuna

    from tuner.study._facade import SweepStudy


class StudyView:
    """A stored study, read-only: its name and location, its trials as
    :class:`TrialSummary`, its :class:`Answer`, its context, the artifacts of a trial, and
    the importance of its knobs. Each read reads the study as it is now."""

    def __init__(self, study: optuna.Study, location: StudyLocation) -> None:
        self._study = study
        #: where the study and its artifacts are (the dashboard serves its storage)
        self.location = location

    @classmethod
    def of(cls, sweep: SweepStudy) -> StudyView:
        """The study a sweep wrote, to read once it is done."""
        return cls(sweep.study, sweep.location)

    @property
    def name(self) -> str:
        return self._study.study_name

    @property
    def study_id(self) -> int:
        """The storage's id of the study (what optuna-dashboard's URLs hold)."""
        from tuner.study._record import study_id

        return study_id(self._study)

    def summaries(self) -> list[TrialSummary]:
        """Every trial's summary, in number order (read once: a study may hold 10,000s)."""
        return summaries(self._study)

    def answer(self, rows: list[TrialSummary] | None = None) -> Answer:
        """The study's :class:`Answer` (``rows``: its summaries, when the caller read them)."""
        return study_answer(self._study, rows)

    def context(self) -> StudyContext:
        """What the study measured (:func:`tuner.study.context_of`)."""
        return context_of(self._study)

    def trial(self, number: int) -> TrialSummary:
        """Trial ``number``'s summary."""
        return summarize(trial_at(self._study, number))

    def baseline(self) -> TrialSummary | None:
        """The measured baseline (COMPLETE, role ``baseline``), or None."""
        t = baseline_trial(self._study)
        return summarize(t) if t is not None else None

    def largest_capacity(self, number: int, rows: list[TrialSummary] | None = None
                         ) -> TrialSummary | None:
        """The finals' launch of trial ``number`` that served at the largest capacity
        (:func:`tuner.study.pooled.largest_capacity`), or None."""
        from tuner.study._pooled import largest_capacity

        t = largest_capacity(self._study, number, rows)
        return summarize(t) if t is not None else None

    def result_json(self, number: int) -> str | None:
        """Trial ``number``'s stored TrialResult JSON (its ``*-result.json`` artifact);
        None when the study names none; FileNotFoundError when it is not in the
        location's artifact folder."""
        import tempfile
        from pathlib import Path

        from optuna.artifacts import FileSystemArtifactStore
        from optuna.artifacts import download_artifact
        from optuna.artifacts.exceptions import ArtifactNotFound

        from tuner.study._record import artifact_metas

        metas = [m for m in artifact_metas(self._study, trial_at(self._study, number))
                 if m.filename.endswith("-result.json")]
        if not metas:
            return None
        store = FileSystemArtifactStore(str(self.location.artifacts))
        with tempfile.TemporaryDirectory() as tmp:
            target = Path(tmp) / "r.json"
            try:
                download_artifact(artifact_store=store, file_path=str(target),
                                  artifact_id=metas[0].artifact_id)
            except ArtifactNotFound as exc:
                raise FileNotFoundError(str(exc)) from None
            return target.read_text()

    def importance(self, values: dict[int, float]) -> dict[str, float]:
        """Each sampled knob's importance for ``values`` (trial number -> figure, lower
        is better) by Optuna's PED-ANOVA over those trials' parameters (conditional knobs
        included); empty when there are too few distinct values to split on."""
        import optuna

        view = optuna.create_study(directions=["minimize"])
        for t in self._study.get_trials(deepcopy=False):
            if t.number in values and t.params:
                view.add_trial(optuna.trial.create_trial(
                    params=t.params, distributions=t.distributions,
                    values=[float(values[t.number])]))
        try:
            found = optuna.importance.get_param_importances(
                view, evaluator=optuna.importance.PedAnovaImportanceEvaluator())
        except (ValueError, RuntimeError):       # too few distinct values to split on
            return {}
        return {k: float(v) for k, v in found.items()}


def open_study(name: str, storage: str | None = None, artifacts: str | None = None
               ) -> StudyView:
    """The stored study ``name`` (a :class:`UserError` naming the studies there when it
    is not)."""
    import warnings

    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    loc = locate(storage, name, artifacts, writing=False)
    if loc.storage_url.startswith("sqlite:///"):
        from pathlib import Path

        db = Path(loc.storage_url[len("sqlite:///"):])
        if not db.is_file():
            raise UserError(f"no study database at {db}; give --storage (the sweep printed "
                            "its study URL)")
    with storage_errors(loc):
        storage_obj = loc.storage()
    try:
        with storage_errors(loc):
            study = optuna.load_study(study_name=name, storage=storage_obj)
    except KeyError:
        names = [s.study_name for s in optuna.get_all_study_summaries(storage_obj)]
        raise UserError(f"no study {name!r} in {redact_url(loc.storage_url)}; it holds: "
                        f"{', '.join(names) or 'none'}") from None
    return StudyView(study, loc)
