"""Opening an existing study for reading (report, export, dashboard)."""

from __future__ import annotations

from typing import Any

from tuner.errors import UserError
from tuner.study._storage import StudyLocation
from tuner.study._storage import locate
from tuner.study._storage import redact_url
from tuner.study._storage import storage_errors


def open_study(name: str, storage: str | None = None, artifacts: str | None = None
               ) -> tuple[Any, StudyLocation]:
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
    return study, loc
