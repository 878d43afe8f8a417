"""What ``tuner dashboard`` serves: a read-only Optuna storage over a study.

optuna-dashboard reads a storage and computes its "Best Trials" from the COMPLETE trials'
values. A sweep stores every launch as a trial (the finals' re-measurements too), so on the
raw study a lucky re-measurement is crowned best and the pooled figures the tool reports
appear nowhere. :class:`AnswerStorage` presents the study as the tool's
:class:`tuner.study.Answer` instead: **one trial per configuration**, numbered as in
``tuner report``, its values the displayed TPOT (the confirmed mean, else the mean of its
launches) and accuracy; COMPLETE only when admissible, so the dashboard's best trials and
``study.best_trials`` are the tool's front. Gated, refused and failed configurations are
FAIL with their verdict in the user attributes; each configuration carries the artifacts
(server logs, results) of all its launches. ``launches=True`` serves the raw study, every
launch, unchanged. A workload with load regimes adds one study per regime, ids 1, 2...
(:mod:`tuner.study._view_regimes`): the regime's goodput and accuracy, its front as the
best trials.

Both are read-only: every write (a study deleted, a note saved, an artifact uploaded) raises
:class:`ReadOnly`, whatever the dashboard's web page offers. The answer is recomputed when
the study gains or finishes a trial, so a dashboard opened during a sweep follows it.
"""

from __future__ import annotations

from collections.abc import Container
from typing import TYPE_CHECKING
from typing import Any

from optuna.storages import BaseStorage
from optuna.study import StudyDirection
from optuna.study._frozen import FrozenStudy
from optuna.trial import FrozenTrial
from optuna.trial import TrialState

from tuner.study._answer import Configuration
from tuner.study._answer import answer_of
from tuner.study._regimes import RegimeAnswer
from tuner.study._regimes import regime_answers
from tuner.study._summary import summarize
from tuner.study._view_regimes import regime_directions
from tuner.study._view_regimes import regime_note
from tuner.study._view_regimes import regime_study_name
from tuner.study._view_regimes import regime_trials


if TYPE_CHECKING:
    from tuner.study._storage import StudyLocation


#: The id of the one study the view holds.
STUDY_ID = 0
NOTE = ("**Served by `tuner dashboard`: one trial per configuration**, numbered as in "
        "`tuner report`, with the figures every output shows: TPOT the mean over all its "
        "launches (`launches`), accuracy the one on its largest sample (`accuracy_sample`, "
        "`accuracy_questions`, paired with the baseline), accept length the mean over its "
        "launches, the memory fraction it is exported at. **The pick (`tuner export --pick "
        "fastest`) is trial #{pick}**: it is always among the best trials (for one "
        "objective, the best trial), because a configuration that reads better than it "
        "only on a single launch, or within noise of it in the finals, is shown PRUNED "
        "(its `verdict` says which): one reading does not displace what the finals "
        "confirmed. Only the other admissible configurations are COMPLETE, so the best "
        "trials are the tool's Pareto front. Gated, refused and failed configurations are "
        "shown failed with their `verdict`. `tuner dashboard --launches` shows every "
        "launch. This view is read-only.")


class ReadOnly(RuntimeError):
    """A write to the dashboard's read-only storage."""


class AnswerStorage(BaseStorage):
    """Study ``name`` of ``inner`` as the dashboard should show it (module docstring)."""

    def __init__(self, inner: BaseStorage, name: str, *, launches: bool = False) -> None:
        self._inner, self._name, self._launches = inner, name, launches
        self._real_id = inner.get_study_id_from_name(name)
        self._key: tuple[int, int] | None = None
        self._trials: list[FrozenTrial] = []
        self._pick: int | None = None
        self._regimes: list[tuple[RegimeAnswer, list[FrozenTrial]]] = []   # ids 1, 2...

    # -- reads ------------------------------------------------------------------------------
    def get_all_studies(self) -> list[FrozenStudy]:
        self._refresh()
        ids = [STUDY_ID, *range(1, len(self._regimes) + 1)]
        return [FrozenStudy(study_name=self.get_study_name_from_id(i), direction=None,
                            directions=self.get_study_directions(i),
                            user_attrs=self.get_study_user_attrs(i),
                            system_attrs=self.get_study_system_attrs(i), study_id=i)
                for i in ids]

    def get_study_id_from_name(self, study_name: str) -> int:
        if study_name == self._name:
            return STUDY_ID
        self._refresh()
        for i, (ra, _) in enumerate(self._regimes, start=1):
            if study_name == regime_study_name(self._name, ra.name):
                return i
        raise KeyError(f"no study {study_name!r} here")

    def get_study_name_from_id(self, study_id: int) -> str:
        ra = self._regime(study_id)
        return self._name if ra is None else regime_study_name(self._name, ra.name)

    def get_study_directions(self, study_id: int) -> list[StudyDirection]:
        ra = self._regime(study_id)
        if ra is not None:
            return regime_directions(self._with_accuracy())
        return list(self._inner.get_study_directions(self._real_id))

    def get_study_user_attrs(self, study_id: int) -> dict[str, Any]:
        ra = self._regime(study_id)
        if ra is not None:
            return {"regime": ra.name, "concurrency": ra.concurrency, "sla": ra.sla,
                    "pick": ra.pick.number if ra.pick is not None else None}
        return dict(self._inner.get_study_user_attrs(self._real_id))

    def get_study_system_attrs(self, study_id: int) -> dict[str, Any]:
        ra = self._regime(study_id)
        if ra is not None:
            return {"dashboard:note_ver": 1,
                    "dashboard:note_str:0": regime_note(ra, self._with_accuracy())}
        attrs = dict(self._inner.get_study_system_attrs(self._real_id))
        if not self._launches and "dashboard:note_ver" not in attrs:
            self._refresh()
            attrs["dashboard:note_ver"] = 1
            attrs["dashboard:note_str:0"] = NOTE.format(
                pick=self._pick if self._pick is not None else "- (none yet)")
        return attrs

    def get_all_trials(self, study_id: int, deepcopy: bool = True,
                       states: Container[TrialState] | None = None) -> list[FrozenTrial]:
        ra = self._regime(study_id)
        trials = self._refresh() if ra is None else self._regimes[study_id - 1][1]
        return [t for t in trials if states is None or t.state in states]

    def get_trial(self, trial_id: int) -> FrozenTrial:
        for t in [*self._refresh(), *(t for _, ts in self._regimes for t in ts)]:
            if t._trial_id == trial_id:
                return t
        raise KeyError(f"no trial with id {trial_id} in this view")

    def get_best_trial(self, study_id: int) -> FrozenTrial:
        """The pick, for a study of one objective (Optuna's and the dashboard's best trial);
        a regime's study: its pick."""
        ra = self._regime(study_id)
        trials = self._refresh() if ra is None else self._regimes[study_id - 1][1]
        pick = self._pick if ra is None else (ra.pick.number if ra.pick else None)
        for t in trials:
            if t.number == pick and t.state == TrialState.COMPLETE:
                return t
        return super().get_best_trial(study_id)

    def regime_studies(self) -> list[tuple[int, str]]:
        """(study id, name) of each load regime's study, as the study stands now."""
        self._refresh()
        return [(i, regime_study_name(self._name, ra.name))
                for i, (ra, _) in enumerate(self._regimes, start=1)]

    def _regime(self, study_id: int) -> RegimeAnswer | None:
        """The regime study ``study_id`` shows; None for the study itself (id 0)."""
        if study_id == STUDY_ID:
            return None
        self._refresh()
        if not 1 <= study_id <= len(self._regimes):
            raise KeyError(f"no study with id {study_id} here")
        return self._regimes[study_id - 1][0]

    def _with_accuracy(self) -> bool:
        return len(self._inner.get_study_directions(self._real_id)) > 1

    def _refresh(self) -> list[FrozenTrial]:
        """The view's trials, rebuilt when the study gained or finished a trial."""
        raw = self._inner.get_all_trials(self._real_id, deepcopy=False)
        key = (len(raw), sum(t.state.is_finished() for t in raw))
        if key != self._key:
            self._trials = list(raw) if self._launches else self._configurations(raw)
            self._key = key
        return self._trials

    def _configurations(self, raw: list[FrozenTrial]) -> list[FrozenTrial]:
        rows = [summarize(t) for t in raw]
        acc = self._with_accuracy()
        answer = answer_of(rows, with_accuracy=acc)
        self._pick = answer.pick.number if answer.pick is not None else None
        by_number = {t.number: t for t in raw}
        self._regimes = [(ra, regime_trials(ra, by_number, i, acc))
                         for i, ra in enumerate(regime_answers(answer, rows), start=1)]
        return [_frozen(c, by_number, answer.speedup(c), acc, c.number in answer.left_off)
                for c in answer.configurations]

    # -- writes: refused --------------------------------------------------------------------
    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise ReadOnly("tuner dashboard serves the study read-only")

    create_new_study = delete_study = set_study_user_attr = set_study_system_attr = _refuse
    create_new_trial = set_trial_param = set_trial_state_values = _refuse
    set_trial_intermediate_value = set_trial_user_attr = set_trial_system_attr = _refuse


def _frozen(c: Configuration, by_number: dict[int, FrozenTrial], speedup: float | None,
            with_accuracy: bool, left_off: bool) -> FrozenTrial:
    """Configuration ``c`` as one trial: its parameters at the capacity it is exported
    with, the figures every output shows, the artifacts of all its launches; PRUNED when
    it is ``left_off`` the front (it reads better than the pick on less evidence)."""
    first = by_number[c.number]
    launches = [by_number[n] for n in c.launch_numbers if n in by_number]
    system = {k: v for t in launches for k, v in t.system_attrs.items()
              if k.startswith("artifacts:")}
    ci = c.tpot_ci95
    acc = c.accuracy_figure
    served = c.served_config
    params = {k: served.get(k, v) if _within(first.distributions.get(k), served.get(k, v))
              else v for k, v in first.params.items()}
    user = {**first.user_attrs, "verdict": c.status + (
        " (reads better than the pick on less evidence: left off the front)"
        if left_off else ""), "pick": c.is_pick,
            "on_front": c.on_front, "launches": c.launches,
            "launch_trials": list(c.launch_numbers), "tpot_ms": c.tpot_ms,
            "tpot_ci95": list(ci) if ci else None, "first_reading_ms": c.first_reading_ms,
            "accept_length": c.accept_length, "config": served,
            **(acc.as_dict() if acc is not None else {}), "speedup": speedup}
    complete = (c.admissible and not left_off and c.tpot_ms is not None
                and first.values is not None)
    values = None
    if complete:
        assert c.tpot_ms is not None and first.values is not None
        values = ([c.tpot_ms, c.accuracy if c.accuracy is not None else first.values[1]]
                  if with_accuracy and len(first.values) > 1 else [c.tpot_ms])
        system["constraints"] = [-1.0]       # the dashboard's (legacy) feasibility
    ends = [t.datetime_complete for t in launches if t.datetime_complete is not None]
    state = (TrialState.COMPLETE if complete else TrialState.PRUNED if left_off
             else TrialState.FAIL)
    return FrozenTrial(
        number=c.number, state=state, value=None, values=values,
        datetime_start=first.datetime_start,
        datetime_complete=max(ends) if ends else first.datetime_complete,
        params=params, distributions=first.distributions, user_attrs=user,
        system_attrs=system, intermediate_values={}, trial_id=first._trial_id)


def _within(dist: Any, value: Any) -> bool:
    """Whether ``value`` is a value of the Optuna distribution ``dist``."""
    if dist is None:
        return False
    try:
        return bool(dist._contains(dist.to_internal_repr(value)))
    except (ValueError, TypeError, IndexError):
        return False


def dashboard_storage(location: StudyLocation, name: str, *, launches: bool = False
                      ) -> AnswerStorage:
    """The read-only view of study ``name`` at ``location`` (a :class:`StudyLocation`)."""
    return AnswerStorage(location.storage(), name, launches=launches)
