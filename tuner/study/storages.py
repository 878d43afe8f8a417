"""Storage, locations, the lock, a study opened to read (:class:`StudyView`, what
:func:`tuner.study.open_study` returns) and the dashboard's read-only view: how a study is
found and opened (the store's plumbing; ``tuner.study`` keeps the answer)."""

from tuner.study._lock import DriverLock
from tuner.study._lock import LockHeld
from tuner.study._open import StudyView
from tuner.study._record import ROLE
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
    "StudyView",
    "dashboard_storage",
    "is_storage_error",
    "redact_url",
    "slug",
    "storage_problem",
    "try_folder",
]
