"""Does the trial's 95% TPOT interval cover the model's value? Seeded repeats, one run.

    .venv/bin/python benchmarks/tpot_ci_coverage.py [--repeats 100] [--scale 50] [--noise 0.05]

Each repeat is a full trial (a fresh simulator process with its own seed, a synthetic
batch-1 workload of fixed lengths, the baseline configuration); the model's TPOT for that
workload is known exactly. Prints the coverage count and the median relative error.

One launch's interval covers its own requests' noise, not launch-to-launch variation: the
simulator's per-launch speed factor is off here (``TUNER_SIM_LAUNCH_CV=0``); the sweep's
finals re-launch finalists for that one (docs/sweep.md).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tuner.engines import make_engine
from tuner.space import load_space
from tuner.trial import TrialOptions
from tuner.trial import run_trial
from tuner_sim.perf import PerfModel
from tuner_sim.perf import Settings
from tuner_sim.profiles import load_machine
from tuner_sim.profiles import load_model_for_path


SPARK = Path(__file__).resolve().parent.parent / "search_spaces" / "ling-3.0-flash-dgx-spark.yaml"


def coverage(repeats: int, scale: float, noise: float, requests: int = 6,
             input_len: int = 2048, output_len: int = 256, first_seed: int = 0
             ) -> tuple[int, list[float], list[float]]:
    space = load_space(SPARK)
    pm = PerfModel(load_machine("dgx-spark"), load_model_for_path("ling-3.0-flash-fp4"),
                   Settings())
    expected = pm.decode_ms(input_len + output_len / 2, "greedy")
    wl = space.spec.workload.model_copy(update={
        "kind": "synthetic", "questions": requests, "warmup_requests": 1,
        "input_len": input_len, "output_len": output_len})
    covered, errors, misses = 0, [], []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(first_seed, first_seed + repeats):
            engine = make_engine("sim", sim_env={
                "TUNER_SIM_TIME_SCALE": str(scale), "TUNER_SIM_NOISE": str(noise),
                "TUNER_SIM_SEED": str(seed), "TUNER_SIM_LAUNCH_CV": "0"})
            r = run_trial(space, engine, engine.resolve(space, {}),
                          TrialOptions(workdir=Path(tmp), workload=wl, startup_timeout_s=60))
            a = r.aggregates
            assert r.ok and a is not None and a.tpot_ci95 is not None and a.tpot_ms, r.message
            errors.append(a.tpot_ms / expected - 1)
            if a.tpot_ci95.low <= expected <= a.tpot_ci95.high:
                covered += 1
            else:
                misses.append(errors[-1])
    return covered, errors, misses


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=100)
    ap.add_argument("--scale", type=float, default=50.0)
    ap.add_argument("--noise", type=float, default=0.05)
    ap.add_argument("--first-seed", type=int, default=0,
                    help="simulator seeds run from here (the jitter draws are seeded)")
    args = ap.parse_args()
    covered, errors, misses = coverage(args.repeats, args.scale, args.noise,
                                       first_seed=args.first_seed)
    print(f"repeats {args.repeats} (seeds {args.first_seed}-{args.first_seed + args.repeats - 1}"
          f"), time scale {args.scale:g}, noise sigma {args.noise:g}")
    print(f"95% interval covered the model's TPOT in {covered} of {args.repeats} repeats")
    print(f"relative error: median {statistics.median(errors):+.3%}, "
          f"max |error| {max(abs(e) for e in errors):.3%}")
    print(f"misses: {sum(e > 0 for e in misses)} read slow, {sum(e < 0 for e in misses)} read fast"
          + (f" (errors {', '.join(f'{e:+.3%}' for e in sorted(misses))})" if misses else ""))


if __name__ == "__main__":
    main()
