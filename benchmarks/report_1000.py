"""``tuner report`` on a 1,000-trial study: wall time of the real command, in one run.

    .venv/bin/python benchmarks/report_1000.py

Builds a study of 1,000 measured trials (feasible, gated and failed, with$
the user attributes a sweep writes) in a temporary SQLite file, then times
``tuner report`` (rich tables) and ``tuner report --html`` as subprocesses, against a bare
``tuner --help`` start.
"""

from __future__ import annotations

import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import optuna


sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tuner.space import load_space
from tuner.study._bridge import distribution
from tuner.study._transaction import one_transaction


SPARK = Path(__file__).resolve().parent.parent / "search_spaces" / "ling-3.0-flash-dgx-spark.yaml"
NAME = "bench-1000"


def build(db: Path, n: int = 1000) -> None:
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    space = load_space(SPARK)
    study = optuna.create_study(study_name=NAME, storage=f"sqlite:///{db}",
                                directions=["minimize", "maximize"])
    study.set_user_attr("tuner:engine", "sim:fork")
    rng = random.Random(0)
    configs = list(space.iter_configs(limit=20000))
    trials = []
    for i in range(n):
        cfg = configs[rng.randrange(len(configs))]
        dists = {k: distribution(space, k) for k in cfg}
        role = "baseline" if i == 0 else "trial"
        kind = rng.random()
        attrs = {"tuner:role": role, "config": cfg, "config_hash": f"{i:012x}",
                 "engine": "sim"}
        if kind < 0.15:
            trials.append(optuna.trial.create_trial(
                state=optuna.trial.TrialState.FAIL, params=cfg, distributions=dists,
                user_attrs={**attrs, "reason": "oom", "message": "Not enough memory"}))
            continue
        tpot = rng.uniform(16, 40)
        acc = rng.uniform(0.9, 1.0)
        gated = kind > 0.9
        attrs.update({"tpot_ms": tpot, "tpot_ci95": [tpot * 0.98, tpot * 1.02],
                      "decode_tok_s": 1000 / tpot, "accuracy": acc,
                      "accuracy_ci95": [acc - 0.04, min(1, acc + 0.02)],
                      "accept_length": rng.uniform(1, 3), "gate": ["collapse"] if gated else [],
                      "per_question": {f"test-{q}": True for q in range(60)}})
        trials.append(optuna.trial.create_trial(
            params=cfg, distributions=dists, values=[tpot, acc], user_attrs=attrs,
            constraints={"accept_length_floor": 0.5 if gated else -1.0,
                         "accuracy_drop": -1.0, "failed": 0.0}))
    with one_transaction(study._storage):     # one commit, not one per attribute
        study.add_trials(trials)


def timed(argv: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True)
    return time.perf_counter() - t0


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "s.db"
        build(db)
        tuner = [sys.executable, "-m", "tuner"]
        bare = timed([*tuner, "--help"])
        plain = timed([*tuner, "report", NAME, "--storage", str(db)])
        html = timed([*tuner, "report", NAME, "--storage", str(db), "--html",
                      str(Path(tmp) / "r.html")])
    print("study of 1000 measured trials in SQLite")
    print(f"tuner --help              {bare:6.2f} s")
    print(f"tuner report              {plain:6.2f} s  ({plain / bare:.1f}x a bare start)")
    print(f"tuner report --html       {html:6.2f} s  ({html / bare:.1f}x a bare start)")


if __name__ == "__main__":
    main()
