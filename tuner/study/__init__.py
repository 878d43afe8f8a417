"""The persistent Optuna study: storage, the driver lock, how trials are recorded, and the
answer every output tells (:class:`Answer`). Every read and write of the study goes
through here."""

from tuner.study._answer import Answer
from tuner.study._answer import Configuration
from tuner.study._answer import answer_of
from tuner.study._answer import study_answer
from tuner.study._bridge import distribution
from tuner.study._bridge import suggest
from tuner.study._facade import Proposal
from tuner.study._facade import SweepStudy
from tuner.study._figures import Accuracy
from tuner.study._front import feasible_best
from tuner.study._front import feasible_front
from tuner.study._lock import DriverLock
from tuner.study._lock import LockHeld
from tuner.study._open import open_study
from tuner.study._pooled import Estimate
from tuner.study._pooled import behind_within_noise
from tuner.study._pooled import estimates
from tuner.study._pooled import feasible_estimates
from tuner.study._pooled import final_baseline_runs
from tuner.study._pooled import largest_capacity
from tuner.study._pooled import ties_with
from tuner.study._record import CONSTRAINT_KEYS
from tuner.study._record import ROLE
from tuner.study._record import artifact_metas
from tuner.study._record import baseline_trial
from tuner.study._record import study_id
from tuner.study._record import tell_result
from tuner.study._record import trial_at
from tuner.study._record import write_legacy_constraints
from tuner.study._regimes import RegimeAnswer
from tuner.study._regimes import RegimeRow
from tuner.study._regimes import regime_answers
from tuner.study._regimes import regime_named
from tuner.study._samplers import SAMPLERS
from tuner.study._samplers import make_sampler
from tuner.study._stand_ins import sampler_trials
from tuner.study._storage import OBJECTIVES
from tuner.study._storage import StudyLocation
from tuner.study._storage import is_storage_error
from tuner.study._storage import locate
from tuner.study._storage import redact_url
from tuner.study._storage import slug
from tuner.study._storage import storage_problem
from tuner.study._storage import try_folder
from tuner.study._summary import Role
from tuner.study._summary import StudyContext
from tuner.study._summary import TrialSummary
from tuner.study._summary import context_of
from tuner.study._summary import summaries
from tuner.study._summary import summarize
from tuner.study._view import STUDY_ID as DASHBOARD_STUDY_ID
from tuner.study._view import AnswerStorage
from tuner.study._view import dashboard_storage


__all__ = [
           "CONSTRAINT_KEYS",
           "DASHBOARD_STUDY_ID",
           "OBJECTIVES",
           "ROLE",
           "SAMPLERS",
           "Accuracy",
           "Answer",
           "AnswerStorage",
           "Configuration",
           "DriverLock",
           "Estimate",
           "LockHeld",
           "Proposal",
           "RegimeAnswer",
           "RegimeRow",
           "Role",
           "StudyContext",
           "StudyLocation",
           "SweepStudy",
           "TrialSummary",
           "answer_of",
           "artifact_metas",
           "baseline_trial",
           "behind_within_noise",
           "context_of",
           "dashboard_storage",
           "distribution",
           "estimates",
           "feasible_best",
           "feasible_estimates",
           "feasible_front",
           "final_baseline_runs",
           "is_storage_error",
           "largest_capacity",
           "locate",
           "make_sampler",
           "open_study",
           "redact_url",
           "regime_answers",
           "regime_named",
           "sampler_trials",
           "slug",
           "storage_problem",
           "study_answer",
           "study_id",
           "suggest",
           "summaries",
           "summarize",
           "tell_result",
           "ties_with",
           "trial_at",
           "try_folder",
           "write_legacy_constraints",
]
