"""The Searcher contract (:mod:`tuner.sweep`'s ``Searcher``) as a test suite, like Optuna's
shared sampler tests.

A subclass provides one fixture, ``make_sweep``: ``make_sweep(tmp_path, seed, watch) ->
Driver``, a sweep with a trial budget (its space, engine and settings, ``seed`` its seed, a
runner that answers at once and as a function of the seed) whose searcher is ``watch(its
searcher, the space it searches)``. The suite runs it with every suggestion watched
(:class:`Watched`): the searcher is shown a spy of the study that fails on anything but a
read (:class:`ReadOnlyStudy`), the study must be unchanged after each suggestion, and each
suggestion is checked against the space and the study.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tuner.space import SearchSpace
from tuner.study import Answer
from tuner.study import Proposal
from tuner.study import StudyReads
from tuner.study import TrialSummary
from tuner.sweep import Driver
from tuner.sweep import Planned
from tuner.sweep import Remeasure
from tuner.sweep import Searcher
from tuner.sweep import Suggestion
from tuner.sweep import Turn
from tuner.sweep import Wait


#: ``watch(searcher, space)`` -> the searcher the sweep runs (``space``: the one searched)
Watch = Callable[[Searcher, SearchSpace], Searcher]
#: ``make_sweep(tmp_path, seed, watch)`` -> a sweep whose searcher is ``watch``'s
MakeSweep = Callable[[Path, int, Watch], Driver]


class StoreWrite(AssertionError):
    """A searcher reached past the reads of the study."""


class ReadOnlyStudy:
    """The study as a searcher may see it: the reads of :class:`tuner.study.StudyReads`,
    passed to ``store``; any other member (a write, the raw Optuna study) fails."""

    def __init__(self, store: StudyReads) -> None:
        self._store = store

    def trials(self) -> list[TrialSummary]:
        return self._store.trials()

    def measured(self) -> dict[str, TrialSummary]:
        return self._store.measured()

    def best(self, trials: list[TrialSummary] | None = None) -> TrialSummary | None:
        return self._store.best(trials)

    def answer(self, trials: list[TrialSummary] | None = None) -> Answer:
        return self._store.answer(trials)

    def queued(self) -> bool:
        return self._store.queued()

    def __getattr__(self, name: str) -> Any:
        raise StoreWrite(f"a searcher asked the store for {name!r}: it may only read it "
                         "(tuner.study.StudyReads)")


class Watched(Searcher):
    """``inner`` as a sweep runs it, watched: every suggestion recorded, with what broke
    the contract (``incomplete``: a planned configuration the space does not complete as
    it is, or a re-measurement of a trial that measured nothing or of capacity the space
    does not hold; ``stalls``: a :class:`Wait` with nothing in flight)."""

    def __init__(self, inner: Searcher, space: SearchSpace) -> None:
        self.inner, self.space = inner, space
        self.suggestions: list[Suggestion] = []
        self.told: list[tuple[int, str, str | None]] = []   # (number, kind, config hash)
        self.incomplete: list[str] = []
        self.stalls: list[int] = []                         # launches counted then

    def suggest(self, study: StudyReads, turn: Turn) -> Suggestion:
        before = study.trials()
        suggestion = self.inner.suggest(ReadOnlyStudy(study), turn)
        after = study.trials()
        if after != before:
            raise StoreWrite(f"the study changed while the searcher suggested "
                             f"{suggestion!r}: {len(before)} trials before, {len(after)} "
                             "after, or one of them changed")
        self._check(suggestion, after, turn)
        self.suggestions.append(suggestion)
        return suggestion

    def _check(self, suggestion: Suggestion, rows: list[TrialSummary], turn: Turn) -> None:
        if isinstance(suggestion, Planned):
            try:
                done = self.space.complete(suggestion.values, base=suggestion.values)
            except Exception as exc:    # the space refuses it: a value off its domain...
                done = {"refused": str(exc)}
            if done != suggestion.values or not suggestion.why:
                self.incomplete.append(f"{suggestion!r} completes as {done!r}")
        elif isinstance(suggestion, Remeasure):
            ran = {s.number for s in rows if s.measured and s.state == "COMPLETE"}
            held = all(n in self.space.capacity_knobs and self.space.in_domain(n, v)
                       for n, v in suggestion.held.items())
            if suggestion.number not in ran or not held:
                self.incomplete.append(f"{suggestion!r}: trial {suggestion.number} did not "
                                       "measure its configuration, or the held capacity is "
                                       "not the space's")
        elif isinstance(suggestion, Wait) and not any(s.state == "RUNNING" for s in rows):
            self.stalls.append(turn.launched)

    def proposed(self, suggestion: Suggestion, proposal: Proposal) -> None:
        self.told.append((proposal.number, proposal.kind, proposal.config_hash))
        self.inner.proposed(suggestion, proposal)

    def exhausted(self) -> bool:
        return self.inner.exhausted()

    def finished(self, launched: int) -> str | None:
        return self.inner.finished(launched)


def watched_sweep(make_sweep: MakeSweep, tmp_path: Path, seed: int) -> Watched:
    """Run the subclass's sweep of ``seed`` in ``tmp_path`` with its searcher watched."""
    seen: list[Watched] = []
    tmp_path.mkdir(parents=True, exist_ok=True)

    def watch(searcher: Searcher, space: SearchSpace) -> Searcher:
        seen.append(Watched(searcher, space))
        return seen[-1]

    make_sweep(tmp_path, seed, watch).run()
    (watched,) = seen
    return watched


class SearcherContract:
    """Shared tests; see the module docstring for the fixture a subclass provides."""

    seed = 0

    def test_it_reads_the_study_and_never_writes_it(self, make_sweep: MakeSweep,
                                                     tmp_path: Path) -> None:
        """Every write is the scheduler's: a searcher that asks the store for anything
        but a read, or changes the study while it suggests, fails the sweep."""
        watched = watched_sweep(make_sweep, tmp_path, self.seed)
        assert watched.suggestions, "the sweep never asked its searcher"
        assert len(watched.told) == sum(not isinstance(s, Wait) for s in watched.suggestions)

    def test_it_suggests_only_what_the_space_can_complete(self, make_sweep: MakeSweep,
                                                         tmp_path: Path) -> None:
        """A planned configuration is one the space completes as it is (every active knob
        set, in its domain, nothing inactive); a re-measurement names a trial that measured
        its configuration, and holds only the space's capacity knobs, in their domains."""
        watched = watched_sweep(make_sweep, tmp_path, self.seed)
        assert watched.incomplete == []

    def test_it_waits_only_while_a_launch_is_in_flight(self, make_sweep: MakeSweep,
                                                      tmp_path: Path) -> None:
        """Nothing else would end the wait: the sweep would stop with its budget unspent."""
        watched = watched_sweep(make_sweep, tmp_path, self.seed)
        assert watched.stalls == []

    def test_its_suggestions_are_a_function_of_the_study_and_the_seed(
            self, make_sweep: MakeSweep, tmp_path: Path) -> None:
        """Two searchers of one seed, shown the same sweep (the runner answering as a
        function of the seed), suggest the same, in the same order."""
        first = watched_sweep(make_sweep, tmp_path / "first", self.seed)
        again = watched_sweep(make_sweep, tmp_path / "again", self.seed)
        assert again.suggestions == first.suggestions
        assert again.told == first.told
