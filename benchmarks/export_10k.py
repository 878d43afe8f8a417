"""``tuner export`` on a 10,000-trial study, and the trial read behind it, in one run.

    .venv/bin/python benchmarks/export_10k.py

Builds a 10,000-trial SQLite study (``report_1000.build``: feasible, gated and failed trials
with the attributes a sweep writes, no artifacts, so export plans the pick again from the
stored space), then times, in this process, one full read of its trials by Optuna's own
``RDBStorage`` and by the product's ``LeanRDBStorage`` (checking they are equal), and the
real ``tuner export`` as a subprocess.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

import optuna


sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.report_1000 import NAME
from benchmarks.report_1000 import SPARK
from benchmarks.report_1000 import build
from tuner.study._lean_read import LeanRDBStorage


def read_s(storage: optuna.storages.RDBStorage) -> tuple[float, list]:
    study_id = storage.get_study_id_from_name(NAME)
    t0 = time.perf_counter()
    trials = storage.get_all_trials(study_id, deepcopy=False)
    return time.perf_counter() - t0, trials


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "s.db"
        t0 = time.perf_counter()
        build(db, n=10_000)
        built = time.perf_counter() - t0
        url = f"sqlite:///{db}"
        optuna.load_study(study_name=NAME, storage=url).set_user_attr(
            "tuner:space_yaml", SPARK.read_text())
        optuna_s, theirs = read_s(optuna.storages.RDBStorage(url))
        lean_s, ours = read_s(LeanRDBStorage(url))
        assert ours == theirs, "the lean read differs from Optuna's"
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "tuner", "export", NAME, "--storage", str(db),
                        "--out", str(Path(tmp) / "profile")], check=True, capture_output=True)
        export_s = time.perf_counter() - t0
    print(f"study of {len(ours)} trials in SQLite (built in {built:.1f} s)")
    print(f"read all trials, Optuna's RDBStorage   {optuna_s:6.2f} s")
    print(f"read all trials, LeanRDBStorage        {lean_s:6.2f} s  "
          f"({optuna_s / lean_s:.1f}x faster, equal trials)")
    print(f"tuner export --pick fastest            {export_s:6.2f} s")


if __name__ == "__main__":
    main()
