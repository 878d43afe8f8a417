"""How far does a trial's TPOT on the simulator sit from the model, by time scale? One run.

    .venv/bin/python benchmarks/sim_fidelity.py [--scales 5 10 20 50 100] [--repeats 5]

Noise off, so the model's TPOT is exact: the baseline's is one decode step at the mean
context; the optimised config's (humming + FP8 LM head + NEXTN 3/1/4) is one speculative
round divided by the tokens per round the trial actually saw. What is left is the harness:
wall-clock overheads of the simulator and of the client (thread wake-ups, HTTP chunks) are
multiplied by the time scale. Prints median and largest relative error per scale.
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
CONFIGS = {
    "baseline": ({}, Settings()),
    "optimised": ({"moe_backend": "humming", "lm_head": "fp8", "speculative": "NEXTN"},
                  Settings(moe_backend="humming", lm_head="fp8", speculative=True)),
}


def errors(scale: float, repeats: int, input_len: int = 2048, output_len: int = 256,
           requests: int = 6) -> dict[str, list[float]]:
    space = load_space(SPARK)
    wl = space.spec.workload.model_copy(update={
        "kind": "synthetic", "questions": requests, "warmup_requests": 1,
        "input_len": input_len, "output_len": output_len})
    context = input_len + output_len / 2
    out: dict[str, list[float]] = {name: [] for name in CONFIGS}
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(repeats):
            for name, (config, settings) in CONFIGS.items():
                engine = make_engine("sim", sim_env={
                    "TUNER_SIM_TIME_SCALE": str(scale), "TUNER_SIM_NOISE": "0",
                    "TUNER_SIM_SEED": str(seed)})
                r = run_trial(space, engine, engine.resolve(space, config),
                              TrialOptions(workdir=Path(tmp), workload=wl,
                                           startup_timeout_s=60))
                a = r.aggregates
                assert r.ok and a is not None and a.tpot_ms, r.message
                pm = PerfModel(load_machine("dgx-spark"),
                               load_model_for_path("ling-3.0-flash-fp4"), settings)
                # one decode iteration (a step, or a round) per token the trial saw per round
                per_iteration = sum(x.completion_tokens - 1 for x in r.requests) / sum(
                    x.verify_rounds or x.completion_tokens - 1 for x in r.requests)
                expected = pm.decode_ms(context, "greedy") / per_iteration
                out[name].append(a.tpot_ms / expected - 1)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scales", type=float, nargs="+", default=[5, 10, 20, 50, 100])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    print(f"noise off, {args.repeats} trials per cell, 6 requests of 2048 in / 256 out each")
    print(f"{'time scale':>10}  {'config':<10} {'median error':>12} {'max |error|':>11}")
    for scale in args.scales:
        for name, errs in errors(scale, args.repeats).items():
            print(f"{scale:>10g}  {name:<10} {statistics.median(errs):>+12.3%} "
                  f"{max(abs(e) for e in errs):>11.3%}", flush=True)


if __name__ == "__main__":
    main()
