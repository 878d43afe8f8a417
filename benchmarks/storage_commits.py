"""Write transactions per trial, and driver time, with a trial's writes grouped into one
transaction (the product) and with Optuna's one commit per call (grouping switched off).

An instant runner (the simulator's noise-free model, tests/sweep_tests/model_runner.py)
makes the driver's own bookkeeping the whole cost. SQLite study file in a temporary folder.

    python benchmarks/storage_commits.py --trials 40
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock


sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.study_tests.write_counter import count_writes
from tests.sweep_tests.model_runner import ModelRunner
from tests.sweep_tests.model_runner import model_sweep


def one_run(trials: int, grouped: bool) -> tuple[int, int, float]:
    """(trials in the study, write transactions, seconds)."""
    patch = (contextlib.nullcontext() if grouped else
             mock.patch("tuner.study._facade.one_transaction",
                        lambda storage: contextlib.nullcontext()))
    with tempfile.TemporaryDirectory() as tmp, patch, count_writes() as seen:
        t0 = time.perf_counter()
        study = model_sweep(tmp, ModelRunner(seed=1), trials=trials)
        took = time.perf_counter() - t0
        return len(study.trials), seen.transactions, took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=40)
    args = ap.parse_args()
    rows = {name: one_run(args.trials, grouped) for name, grouped in
            (("per call", False), ("grouped", True))}
    for name, (n, writes, took) in rows.items():
        print(f"{name:9s} {n} trials  {writes:5d} write transactions  "
              f"{writes / n:5.1f} per trial  {took:5.2f} s")
    print(f"grouped/per call driver time: {rows['grouped'][2] / rows['per call'][2]:.2f}")


if __name__ == "__main__":
    main()
