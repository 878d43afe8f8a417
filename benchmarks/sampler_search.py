"""How fast does each sampler find a fast feasible configuration, and does it learn to avoid
failing regions? Offline: the product's driver and study bookkeeping, with a stand-in runner
that answers from the simulator's models instantly (tests/sweep_tests/model_runner.py).

    .venv/bin/python benchmarks/sampler_search.py [--seeds 10] [--trials 40]

Prints, per sampler, the median over seeds of the best feasible TPOT found within the
budget, how many seeds reached the published hand-tuned configuration's model TPOT, and the
share of proposals after the first 10 that fell in the failing region (configurations whose
launch fails: too little memory for the weights, KV pool and KDA state).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.sweep_tests.model_runner import ModelRunner
from tuner.engines import make_engine
from tuner.space import load_space
from tuner.study import feasible_best
from tuner.study._storage import locate
from tuner.sweep._driver import Driver
from tuner.sweep._driver import SweepSettings
from tuner.trial import TrialOptions


SPARK = Path(__file__).resolve().parent.parent / "search_spaces" / "ling-3.0-flash-dgx-spark.yaml"
PUBLISHED = {"moe_backend": "humming", "lm_head": "fp8", "speculative": "NEXTN",
             "spec_steps": 3, "spec_topk": 1, "spec_draft_tokens": 4}


def one(sampler: str, seed: int, trials: int, tmp: Path) -> tuple[float, float, float]:
    space = load_space(SPARK)
    engine = make_engine("sim")
    runner = ModelRunner(seed=seed)
    opts = TrialOptions(workdir=tmp, workload=space.spec.workload)
    settings = SweepSettings(study_name=f"{sampler}-{seed}",
                             location=locate(str(tmp / f"{sampler}-{seed}.db"), "x"),
                             trials=trials, sampler=sampler, seed=seed)
    study = Driver(space, engine, opts, settings, lambda: runner).run()
    best = feasible_best(study)
    ref = ModelRunner(seed=0)
    from tuner.sweep._base import TrialJob

    cfg = engine.resolve(space, PUBLISHED)
    published = ref._run(TrialJob(0, space, engine, cfg, opts, 1.0)).aggregates.tpot_ms
    fails = [t for t in study.get_trials() if t.user_attrs.get("tuner:role") in (
        "trial",) and t.number > 10 and t.state.name == "FAIL"]
    proposals = [t for t in study.get_trials() if t.user_attrs.get("tuner:role") in (
        "trial", "duplicate") and t.number > 10]
    return (best.values[0] if best else float("inf"), published,
            len(fails) / max(1, len(proposals)))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--trials", type=int, default=40)
    ap.add_argument("--samplers", default="tpe,tpe-independent,nsga2,random")
    args = ap.parse_args()
    print(f"{'sampler':16s} {'median best TPOT':>17s} {'reached published':>18s} "
          f"{'failing-region share':>21s}")
    with tempfile.TemporaryDirectory() as tmp:
        for sampler in args.samplers.split(","):
            rows = [one(sampler, s, args.trials, Path(tmp)) for s in range(args.seeds)]
            best = statistics.median(r[0] for r in rows)
            reached = sum(r[0] <= r[1] * 1.005 for r in rows)
            share = statistics.mean(r[2] for r in rows)
            print(f"{sampler:16s} {best:14.2f} ms {reached:12d}/{args.seeds:<5d} {share:20.1%}")
    print(f"published hand-tuned config (model): {rows[0][1]:.2f} ms")


if __name__ == "__main__":
    main()
