"""Storage, locations, the lock and the dashboard's read-only view: how a study is found and
opened (the store's plumbing; ``tuner.study`` keeps the answer)."""

from tuner.study._lock import DriverLock
from tuner.study._lock import LockHeld
from tuner.study._record import ROLE
from tuner.study._record import artifact_metas
from tuner.study._record import baseline_trial
from tuner.study._record import study_id
from tuner.study._storage import is_storage_error
from tuner.study._storage import redact_url
from tuner.study._storage import slug
from tuner.study._storage import storage_problem
from tuner.study._storage import try_folder
from tuner.study._view import STUDY_ID as DASHBOARD_STUDY_ID
from tuner.study._view import AnswerStorage
from tuner.study._view import dashboard_storage


__all__ = [
    "DASHBOARD_STUDY_ID",
    "ROLE",
    "AnswerStorage",
    "DriverLock",
    "LockHeld",
    "artifact_metas",
    "baseline_trial",
    "dashboard_storage",
    "is_storage_error",
    "redact_url",
    "slug",
    "storage_problem",
    "study_id",
    "try_folder",
]
