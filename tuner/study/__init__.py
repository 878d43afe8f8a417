"""The persistent Optuna study: storage, the driver lock, how trials are recorded, and the
answer every output tells (:class:`Answer`). Every read and write of the study goes
through here."""

from tuner.study._answer import Answer
from tuner.study._answer import Configuration
from tuner.study._answer import answer_of
from tuner.study._answer import study_answer
from tuner.study._facade import Proposal
from tuner.study._facade import SweepStudy
from tuner.study._front import feasible_best
from tuner.study._open import open_study
from tuner.study._reads import StudyReads
from tuner.study._record import trial_at
from tuner.study._regimes import RegimeAnswer
from tuner.study._regimes import regime_answers
from tuner.study._storage import StudyLocation
from tuner.study._storage import locate
from tuner.study._summary import Role
from tuner.study._summary import StudyContext
from tuner.study._summary import TrialSummary
from tuner.study._summary import context_of
from tuner.study._summary import summaries
from tuner.study._summary import summarize


__all__ = [
           "Answer",
           "Configuration",
           "Proposal",
           "RegimeAnswer",
           "Role",
           "StudyContext",
           "StudyLocation",
           "StudyReads",
           "SweepStudy",
           "TrialSummary",
           "answer_of",
           "context_of",
           "feasible_best",
           "locate",
           "open_study",
           "regime_answers",
           "study_answer",
           "summaries",
           "summarize",
           "trial_at",
]
