"""How faithful is the simulator? Three views, each one run:

    .venv/bin/python benchmarks/sim_fidelity.py [--scales 5 10 20 50 100] [--repeats 5]
    .venv/bin/python benchmarks/sim_fidelity.py --table      # every published row vs the model
    .venv/bin/python benchmarks/sim_fidelity.py --lottery [--prompts 20]

``--table``: the rows ``tuner sim calibrate`` shows (Ling's tables, the GB10 cookbook cells,
the Spark rows by content, the prompt lottery, the block-size shape, Qwen3.8-Flash-Next's
cells), each with its error and whether it is checked; exit 1 when a checked one is off.

``--lottery``: one real trial on the simulator (the Spark space's DSPARK launch at gamma 8,
noise off) of same-length random-token prompts (the synthetic workload, greedy), printing
each prompt's TPOT and their min / median / max: the prompt lottery a trial measures.

The default view:
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


def table() -> int:
    """Every published row the simulator can express beside the model's, with errors."""
    from tuner_sim.calibrate import qwen38_rows
    from tuner_sim.calibrate import rows
    from tuner_sim.calibrate import spark_rows

    all_rows = rows() + spark_rows() + qwen38_rows()
    print(f"{'table':<58} {'metric':<78} {'published':>12} {'model':>12} {'error':>8}  check")
    for r in all_rows:
        verdict = {None: "info", True: "ok", False: "FAIL"}[r.ok]
        bound = f" ({r.check})" if r.check != "info" else ""
        print(f"{r.table[:58]:<58} {r.metric[:78]:<78} {r.published:>12.2f} {r.model:>12.2f} "
              f"{r.error_pct:>+7.1f}%  {verdict}{bound}")
    checked = [r for r in all_rows if r.ok is not None]
    failed = [r for r in checked if r.ok is False]
    print(f"{len(all_rows)} rows, {len(checked)} checked, {len(failed)} off their bound")
    return 1 if failed else 0


def lottery(prompts: int, scale: float, input_len: int = 8192, output_len: int = 128
            ) -> list[float]:
    """Per-prompt TPOT (machine ms) of one DSPARK trial on same-length random prompts."""
    space = load_space(SPARK)
    wl = space.spec.workload.model_copy(update={
        "kind": "synthetic", "questions": prompts, "warmup_requests": 1,
        "input_len": input_len, "output_len": output_len})
    engine = make_engine("sim", sim_env={"TUNER_SIM_TIME_SCALE": str(scale),
                                         "TUNER_SIM_NOISE": "0", "TUNER_SIM_SEED": "0"})
    config = {"speculative": "DSPARK", "dspark_block_size": 8}
    with tempfile.TemporaryDirectory() as tmp:
        r = run_trial(space, engine, engine.resolve(space, config),
                      TrialOptions(workdir=Path(tmp), workload=wl, startup_timeout_s=120))
    assert r.ok, r.message
    return [x.tpot_ms for x in r.requests if x.tpot_ms is not None]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scales", type=float, nargs="+", default=[5, 10, 20, 50, 100])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--table", action="store_true", help="every published row vs the model")
    ap.add_argument("--lottery", action="store_true",
                    help="one DSPARK trial of same-length random prompts: per-prompt TPOT")
    ap.add_argument("--prompts", type=int, default=20)
    ap.add_argument("--time-scale", type=float, default=10.0)
    args = ap.parse_args()
    if args.table:
        sys.exit(table())
    if args.lottery:
        tpots = lottery(args.prompts, args.time_scale)
        print(f"DSPARK gamma 8, {len(tpots)} random-token prompts of 8,192 tokens, greedy, "
              f"noise off, time scale {args.time_scale:g}")
        print("per prompt TPOT (ms): " + " ".join(f"{t:.2f}" for t in sorted(tpots)))
        lo, mid, hi = min(tpots), statistics.median(tpots), max(tpots)
        print(f"min {lo:.2f}  median {mid:.2f}  max {hi:.2f}  slowest / fastest {hi / lo:.2f}x")
        return
    print(f"noise off, {args.repeats} trials per cell, 6 requests of 2048 in / 256 out each")
    print(f"{'time scale':>10}  {'config':<10} {'median error':>12} {'max |error|':>11}")
    for scale in args.scales:
        for name, errs in errors(scale, args.repeats).items():
            print(f"{scale:>10g}  {name:<10} {statistics.median(errs):>+12.3%} "
                  f"{max(abs(e) for e in errs):>11.3%}", flush=True)


if __name__ == "__main__":
    main()
