"""What one sweep is asked to do: its study, budget, sampler and search settings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tuner.study import StudyLocation


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
