"""Machine time saved by early stopping, on real simulator sweeps, in one run.

    .venv/bin/python benchmarks/early_stop.py --seeds 1 --trials 30

For each seed, the README's sweep (Spark space, simulator, 30 GSM8K questions, local runner)
runs twice, with ``--early-stop 0`` and ``--early-stop 0.25``. Printed per run: launches,
how many stopped early, mean machine seconds per launch (``total_s``: start-up, proof,
warm-up and benchmark, in simulated machine time), and the configuration the sweep picks
(what ``tuner export`` takes).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import optuna


ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tuner.study import feasible_best  # noqa: E402
from tuner.study import summarize  # noqa: E402


SPACE = ROOT / "search_spaces" / "ling-3.0-flash-dgx-spark.yaml"
GSM8K = ROOT.parent / "shared" / "data" / "gsm8k"


def sweep(tmp: Path, seed: int, trials: int, early: float) -> dict:
    db = tmp / f"s{seed}-{early}.db"
    subprocess.run([sys.executable, "-m", "tuner", "sweep", str(SPACE), "--engine", "sim",
                    "--gsm8k", str(GSM8K), "--trials", str(trials), "--questions", "30",
                    "--seed", str(seed), "--early-stop", str(early), "--ray-address", "none",
                    "--storage", str(db), "--study", "s", "--workdir", str(tmp / "runs")],
                   check=True, capture_output=True, cwd=tmp)
    study = optuna.load_study(study_name="s", storage=f"sqlite:///{db}")
    rows = [(t, summarize(t)) for t in study.get_trials(deepcopy=False)]
    launched = [(t, s) for t, s in rows if s.launched]
    seconds = [t.user_attrs.get("total_s") or 0.0 for t, _ in launched]
    pick = feasible_best(study)
    return {"launches": len(launched), "pruned": sum(s.state == "PRUNED" for _, s in launched),
            "mean_s": statistics.fmean(seconds), "sum_s": sum(seconds),
            "pick": summarize(pick).config if pick is not None else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--trials", type=int, default=30)
    a = ap.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    ratios, same = [], 0
    for seed in range(a.seeds):
        with tempfile.TemporaryDirectory() as tmp:
            off = sweep(Path(tmp), seed, a.trials, 0.0)
            on = sweep(Path(tmp), seed, a.trials, 0.25)
        for name, r in (("off", off), ("0.25", on)):
            print(f"seed {seed} early-stop {name:4s}: {r['launches']} launches, "
                  f"{r['pruned']} stopped early, {r['mean_s']:.0f} s machine time per launch "
                  f"({r['sum_s'] / 3600:.2f} h in all); pick {r['pick']}")
        ratios.append(on["mean_s"] / off["mean_s"])
        same += on["pick"] == off["pick"]
    print(f"machine time per launch, early stop / off: median {statistics.median(ratios):.2f}"
          f" over {a.seeds} seed(s); same pick in {same} of {a.seeds}")


if __name__ == "__main__":
    main()
