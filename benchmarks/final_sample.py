"""Does the exported pick carry an injected 3-point accuracy drop? Ten seeds, without and
with the final accuracy sample (``--final-questions 1000``).

    .venv/bin/python benchmarks/final_sample.py --trials 30

The product's driver, finals, gate and pick, with the model-backed runner
(tests/sweep_tests/model_runner.py) whose FP8 LM-head configurations, the fastest family,
answer 3% fewer questions right, the same ones every launch (tests/sweep_tests/
test_final_sample.py::DropsOnFp8Head). Printed: each seed's pick, by its LM-head precision.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.sweep_tests.model_runner import model_sweep
from tests.sweep_tests.test_final_sample import DropsOnFp8Head
from tuner.study import feasible_best
from tuner.study import summarize


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=30)
    ap.add_argument("--seeds", type=int, default=10)
    a = ap.parse_args()
    for final in (None, 1000):
        picks = []
        for seed in range(a.seeds):
            with tempfile.TemporaryDirectory() as tmp:
                study = model_sweep(tmp, DropsOnFp8Head(seed=seed), trials=a.trials, seed=seed,
                                    final_questions=final)
                pick = summarize(feasible_best(study))
            picks.append("baseline" if pick.role.value == "baseline" else pick.config["lm_head"])
        print(f"trials {a.trials} final_questions {final}: picks {picks}; fp8 (the 3-point "
              f"drop) in {picks.count('fp8')} of {a.seeds}")


if __name__ == "__main__":
    main()
