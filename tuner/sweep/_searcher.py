"""The searcher contract: what a sweep launches next, decided from the study, never written.

Like Ray Tune's ``Searcher`` beside Optuna's ``Study``: the scheduler (``_scheduler.py``)
asks :meth:`Searcher.suggest` whenever a runner slot is free and the budget has room,
turns the :data:`Suggestion` into a trial through the store (:class:`tuner.study.
SweepStudy`: enqueue, ask, de-duplicate), tells the searcher what became of it
(:meth:`Searcher.proposed`) and records the launch. A searcher

* reads the study only through :class:`tuner.study.StudyReads` and never writes to it: every
  write is the scheduler's, through the store;
* suggests only what the space can complete (:class:`Planned` values are a complete
  configuration of the space searched; a :class:`Remeasure` names a trial that measured
  its configuration);
* answers :class:`Wait` only while a launch is in flight (nothing else would ever free it);
* suggests as a function of what it was shown (the study, each :class:`Turn`, what became
  of its suggestions) and its seed: two searchers of the same seed shown the same sweep
  suggest the same.

``tuner.testing.SearcherContract`` checks these on a sweep; the product's searcher is
:class:`tuner.sweep._policy.SearchPolicy`.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from tuner.study import Proposal
from tuner.study import StudyReads
from tuner.study import TrialSummary


@dataclass(frozen=True)
class Planned:
    """Launch ``values`` (a complete configuration of the space) for the reason ``why``
    (``screen``, ``combine``, ``probe``, ``neighbour``...: stored as ``proposed_by``). A
    trial already queued goes first; the scheduler then tells the searcher that its plan
    was not taken (:meth:`Searcher.proposed` sees another configuration)."""

    values: dict[str, Any]
    why: str
    #: the load regime it was planned for (a neighbour of its best), None: batch 1
    serves: str | None = None


@dataclass(frozen=True)
class Remeasure:
    """Launch trial ``number``'s configuration again (the finals, a regime's pick):
    ``confirm``: a confirmation of the chosen pick, whose mean is its reported TPOT;
    ``held``: capacity knobs set above the baseline's; ``final_sample``: on the final
    accuracy sample; ``contender``: the search's own, before its finals (the fastest so
    far launched again before the local search moves around it); ``serves``: a load
    regime's pick launched again for its SLA verdict."""

    number: int
    confirm: bool = False
    held: dict[str, Any] = field(default_factory=dict)
    final_sample: bool = False
    contender: bool = False
    serves: str | None = None


@dataclass(frozen=True)
class Ask:
    """Let the study answer: a queued trial first (the baseline, a retry), else its
    sampler's proposal; ``serves``: load regime ``serves``'s own sampler's, which learns
    the regime's goodput within its SLA (:mod:`tuner.study._regime_sampler`), None: the
    study's (batch 1)."""

    serves: str | None = None


@dataclass(frozen=True)
class Wait:
    """Nothing now: a launch in flight decides what comes next (the baseline's final-sample
    launch before the finalists')."""


#: what a searcher suggests
Suggestion = Planned | Remeasure | Ask | Wait


@dataclass(frozen=True)
class Turn:
    """What the scheduler tells a searcher besides the study: the measured baseline (None:
    not yet, and then nothing else is read: the baseline runs alone); the launches the
    budget counts, those in flight included (0 before the baseline); the sweep's seconds so
    far."""

    baseline: TrialSummary | None
    launched: int
    elapsed_s: float


class Searcher(abc.ABC):
    """Decides what to launch next from the study; see the module docstring."""

    @abc.abstractmethod
    def suggest(self, study: StudyReads, turn: Turn) -> Suggestion:
        """What to launch next."""

    def proposed(self, suggestion: Suggestion, proposal: Proposal) -> None:
        """What the study made of ``suggestion`` (not :class:`Wait`), before the next
        :meth:`suggest`: the trial handed out (``proposal.kind``: ``run``, ``repeat`` of a
        measured configuration, ``wait`` on one in flight, ``invalid``; its configuration
        hash). Nothing by default."""
        return None

    def exhausted(self) -> bool:
        """Whether every configuration of the space is measured (the scheduler says so
        once). False by default."""
        return False

    def finished(self, launched: int) -> str | None:
        """Why nothing is left to launch at ``launched`` launches (the sweep ends with
        budget left and says so), or None: go on. None by default."""
        return None
