"""How close does each search strategy get to the true optimum, and how honestly does it
report it? Ground truth by exhaustive enumeration of the Spark space.

    .venv/bin/python benchmarks/search_efficiency.py --seeds 10 --budgets 10,20,30,40 --json

The sweep is the product's own (:class:`tuner.sweep._driver.Driver`: its samplers, study,
gate, de-duplication and pick, ``feasible_best``); only the trial runner is replaced by
:class:`TruthRunner`, which answers from the simulator's noise-free performance and memory
models (``tuner_sim``: the same argparse, resolution rules, memory plan and perf model the
simulator server uses) and its GSM8K oracle (``tuner_sim.gsm8k.is_correct``: deterministic
per question and numerics), then adds noise: a per-launch speed factor (CV
``--launch-cv``, default 2%) times a per-measurement factor (CV ``--cv``, 2.5%), both
mean-1 lognormals.

Truth: every canonical configuration of the space (the engine's repair and
canonicalisation), its noise-free TPOT, whether it starts (memory plan), its expected accept
length and its expected accuracy; feasible = starts, accept length >= the gate's floor,
accuracy within ``max_accuracy_drop_pp`` of the baseline's. Per sampler and budget, over
seeds (medians, and the worst seed for pick_ratio):

- ``pick_ratio``: true TPOT of the configuration the tool would export / the true best
  feasible TPOT (an infeasible pick counts as inf);
- ``hv_ratio``: hypervolume of the tool's feasible front at its true (TPOT, accuracy) /
  the true front's, reference point (baseline TPOT, baseline accuracy - max drop);
- ``trials_to_2pct``: measured trials until the fastest feasible reading so far first lies
  within 2% of the best (in the longest run; inf when never);
- ``reported_bias``: the pick's reported TPOT (its pooled estimate,
  ``tuner.study.estimates``) / its true TPOT - 1;
- ``failing_share``: share of measured trials that failed to launch;
- ``picks_over_5pct``: seeds whose pick is more than 5% slower than the truth's best;
  ``pick_ratio_mean``: the mean pick ratio (an infeasible pick counted as 2); with
  ``--json`` each seed's ratio too (``pick_ratios``, in seed order).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import tempfile
from dataclasses import dataclass
from datetime import UTC
from datetime import datetime
from pathlib import Path
from typing import Any


sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.sweep_tests.model_runner import InstantRunner
from tuner.engines import make_engine
from tuner.space import SearchSpace
from tuner.space import load_space
from tuner.study import feasible_best
from tuner.study import locate
from tuner.study import summaries
from tuner.study.pooled import estimates
from tuner.study.pooled import feasible_front
from tuner.sweep._base import TrialJob
from tuner.sweep._driver import Driver
from tuner.sweep._driver import SweepSettings
from tuner.trial import TrialOptions
from tuner.trial import TrialResult
from tuner.trial._gate import evaluate
from tuner.trial._stats import Aggregates
from tuner.trial._stats import Interval
from tuner_sim import args as sim_args
from tuner_sim.args import LaunchError
from tuner_sim.gsm8k import is_correct
from tuner_sim.memory import plan_memory
from tuner_sim.perf import PerfModel
from tuner_sim.perf import Workload
from tuner_sim.perf import settings_from
from tuner_sim.profiles import load_machine
from tuner_sim.profiles import load_model_for_path


ROOT = Path(__file__).resolve().parent.parent
SPARK = ROOT / "search_spaces" / "ling-3.0-flash-dgx-spark.yaml"
#: GSM8K 5-shot at batch 1: prompt ~1,600 tokens, sampled decoding (as tests/ and the
#: simulator's calibration use it)
WORKLOAD = Workload("sampled", 1600)
TEST_QUESTIONS = 1319


@dataclass(frozen=True)
class Truth:
    """One canonical configuration as the noise-free models see it."""

    config: dict[str, Any]
    starts: bool
    reason: str | None = None
    tpot_ms: float = math.inf
    accept_length: float | None = None
    accuracy: float = 0.0
    numerics: str = ""


class World:
    """The space's truth, computed once per canonical configuration (by hash)."""

    def __init__(self, space: SearchSpace, *, accuracy_drop_on: str | None = None,
                 drop_pp: float = 0.0, lm_head_shared: bool = True,
                 speed_space: SearchSpace | None = None) -> None:
        self.space = space
        #: whose capacity knobs change no speed (``space`` itself unless it searches them)
        self.speed_space = speed_space or space
        #: False: the fork before its LM-head fix (an FP8 head collapses NEXTN's draft)
        self.lm_head_shared = lm_head_shared
        self.engine = make_engine("sim")
        self.machine = load_machine(space.spec.machine.id)
        self.model = load_model_for_path(space.spec.model.path)
        self.cache: dict[str, Truth] = {}
        self.perf: dict[Any, tuple[float, float | None]] = {}   # speed key -> model figures
        self.drop_on, self.drop_pp = accuracy_drop_on, drop_pp
        self.parser = sim_args.build_parser()

    def truth(self, config: Any) -> Truth:
        h = config.hash()
        if h not in self.cache:
            self.cache[h] = self._compute(config)
        return self.cache[h]

    def _compute(self, config: Any) -> Truth:
        plan = self.engine.plan(self.space, config)
        ns = self.parser.parse_args(plan.argv[plan.argv.index("--model-path"):])
        try:
            a = sim_args.resolve(ns, architecture=self.model.architecture,
                                 capability=self.machine.compute_capability,
                                 model_context=self.model.context_length, env=plan.env,
                                 memory_gb=self.machine.memory_gib).args
            mem = plan_memory(self.machine, self.model, a)
            settings = settings_from(a, plan.env.get, self.lm_head_shared)
        except LaunchError as exc:
            return Truth(config.as_dict(), False, "oom" if "memory" in exc.message.lower()
                         else "launch_error")
        if mem.hangs:
            return Truth(config.as_dict(), False, "startup_timeout")
        key = self.speed_space.speed_key(config.as_dict())
        if key not in self.perf:    # capacity knobs change no speed: computed once per key
            pm = PerfModel(self.machine, self.model, settings)
            self.perf[key] = (pm.expected_tpot_ms(WORKLOAD),
                              pm.expected_accept_length("sampled") if settings.speculative
                              else None)
        tpot, accept = self.perf[key]
        g = self.model.gsm8k
        acc = g.accuracy
        if settings.humming_w4a8:
            acc += g.accuracy_delta_pp.get("humming_w4a8", 0.0) / 100
        if settings.lm_head == "fp8":
            acc += g.accuracy_delta_pp.get("lm_head_fp8", 0.0) / 100
        if self.drop_on is not None and config.hash() == self.drop_on:
            acc -= self.drop_pp / 100
        numerics = (f"{settings.moe_backend}|{'w4a8' if settings.humming_w4a8 else 'a16'}|"
                    f"{settings.lm_head}|{'spec' if settings.speculative else 'plain'}")
        return Truth(config.as_dict(), True, None, tpot, accept, acc, numerics)

    def baseline(self) -> Truth:
        """The space's baseline configuration (trial 0 of every sweep)."""
        return self.truth(self.engine.canonicalize(self.space, self.space.complete({})))

    def enumerate(self) -> dict[str, Truth]:
        """Every canonical configuration of the space."""
        seen: dict[str, Any] = {}
        for values in self.space.iter_configs():
            repaired, _ = self.engine.repair(self.space, values)
            cfg = self.engine.canonicalize(self.space, repaired)
            seen.setdefault(cfg.hash(), cfg)
        return {h: self.truth(c) for h, c in seen.items()}


def feasible(t: Truth, baseline: Truth, space: SearchSpace) -> bool:
    gate = space.spec.gate
    if not t.starts:
        return False
    if t.accept_length is not None and t.accept_length < gate.accept_length_floor:
        return False
    return baseline.accuracy - t.accuracy <= gate.max_accuracy_drop_pp / 100 + 1e-12


def _lognormal(rng: random.Random, cv: float) -> float:
    s = math.sqrt(math.log(1 + cv * cv))
    return math.exp(rng.gauss(0.0, s) - s * s / 2)    # mean 1


class TruthRunner(InstantRunner):
    """Answers a trial from :class:`World` with launch and measurement noise, instantly."""

    def __init__(self, world: World, *, seed: int, cv: float, launch_cv: float,
                 questions: int) -> None:
        super().__init__(slots=1)
        self.world, self.cv, self.launch_cv = world, cv, launch_cv
        self.rng = random.Random(seed)
        self.qids = random.Random(f"questions-{seed}").sample(range(TEST_QUESTIONS), questions)
        self.sampling_seed = seed
        self.launches = 0

    def _run(self, job: TrialJob) -> TrialResult:
        self.launches += 1
        truth = self.world.truth(job.config)
        plan = job.engine.plan(job.space, job.config)
        res = TrialResult(
            tuner_version="benchmark", status="ok", space=job.space.name,
            machine=job.space.spec.machine.id, config=job.config.as_dict(),
            config_hash=job.config.hash(), plan=plan, engine="model", simulated=True,
            workload=job.options.workload.model_dump(),
            started_at=datetime.now(UTC).isoformat(), host="model")
        if not truth.starts:
            res.status, res.reason = "failed", truth.reason  # type: ignore[assignment]
            res.message = "out of memory" if truth.reason == "oom" else truth.reason
            return res
        g = self.world.model.gsm8k
        tpot = truth.tpot_ms * _lognormal(self.rng, self.launch_cv) * _lognormal(self.rng,
                                                                                  self.cv)
        per_q = {f"q{q}": is_correct(q, truth.numerics, self.sampling_seed, truth.accuracy,
                                     g.numerics_flip_rate) for q in self.qids}
        k = sum(per_q.values())
        half = 1.96 * self.cv * tpot      # the trial's own interval: its requests only
        agg = Aggregates(requests=len(self.qids), tpot_ms=tpot,
                         tpot_ci95=Interval(low=tpot - half, high=tpot + half),
                         decode_tok_s=1000 / tpot, accuracy=k / len(self.qids), correct=k,
                         scored=len(self.qids), per_question=per_q,
                         accept_length=truth.accept_length)
        res.aggregates = agg
        res.gate = evaluate(agg, speculative=truth.accept_length is not None,
                            cfg=job.space.spec.gate,
                            baseline_per_question=job.options.baseline_per_question)
        return res


def hypervolume(points: list[tuple[float, float]], ref: tuple[float, float]) -> float:
    """2-D hypervolume of (TPOT to minimise, accuracy to maximise) points w.r.t. ``ref``."""
    pts = sorted({p for p in points if p[0] < ref[0] and p[1] > ref[1]})
    hv, best_acc = 0.0, ref[1]
    for i, (tpot, acc) in enumerate(pts):     # ascending TPOT
        if acc <= best_acc:
            continue
        nxt = ref[0]
        for t2, a2 in pts[i + 1:]:
            if a2 > acc:
                nxt = t2
                break
        hv += (nxt - tpot) * (acc - ref[1])
        best_acc = acc
    # the staircase above counts each accuracy band once from its own TPOT
    return hv


def true_front(truths: list[Truth]) -> list[Truth]:
    """The Pareto front (min TPOT, max accuracy) of ``truths``, fastest first."""
    out: list[Truth] = []
    for t in sorted(truths, key=lambda t: (t.tpot_ms, -t.accuracy)):
        if not out or t.accuracy > out[-1].accuracy:
            out.append(t)
    return out


def hv_of(truths: list[Truth], ref: tuple[float, float]) -> float:
    return hypervolume([(t.tpot_ms, t.accuracy) for t in truths], ref)


@dataclass
class RunResult:
    pick_ratio: float
    hv_ratio: float
    reported_bias: float
    failing_share: float
    prefix_ratios: list[float]   # pick ratio after 1, 2, ... measured trials


def one_run(space: SearchSpace, world: World, best: float, true_hv: float,
            ref: tuple[float, float], base_truth: Truth, sampler: str, seed: int,
            budget: int, args: argparse.Namespace, tmp: Path) -> RunResult:
    engine = world.engine
    runner = TruthRunner(world, seed=seed, cv=args.cv, launch_cv=args.launch_cv,
                         questions=space.spec.workload.questions or 60)
    opts = TrialOptions(workdir=tmp, workload=space.spec.workload)
    name = f"{sampler}-{seed}-{budget}"
    location = locate(str(tmp / f"{name}.db"), "x")
    if sampler == "default":       # the product's defaults, whatever they are
        settings = SweepSettings(study_name=name, location=location, trials=budget,
                                 seed=seed)
    else:                          # the sampler alone: no refinement by the driver
        settings = SweepSettings(study_name=name, location=location, trials=budget,
                                 sampler=sampler, seed=seed, staged=False)
    driver = Driver(space, engine, opts, settings, lambda: runner)
    driver.run()
    study = driver.sweep.study          # the Optuna study itself: its internals are read

    def ratio_of(trial: Any) -> tuple[float, Truth | None]:
        if trial is None:
            return math.inf, None
        t = world.truth(engine.canonicalize(space, trial.user_attrs["config"]))
        return (t.tpot_ms / best if feasible(t, base_truth, space) else math.inf), t

    pick = feasible_best(study)
    pick_ratio, pick_truth = ratio_of(pick)
    # what the tool reports for its pick: the pooled estimate (the finals' mean)
    reported = estimates(study)[pick.number].tpot_ms if pick is not None else math.nan
    reported_bias = (reported / pick_truth.tpot_ms - 1) if pick_truth else math.nan
    front = [world.truth(engine.canonicalize(space, t.user_attrs["config"]))
             for t in feasible_front(study)]
    front = [t for t in front if feasible(t, base_truth, space)]
    measured = [s for s in summaries(study) if s.measured]
    launched = [s for s in summaries(study) if s.launched]
    failing = sum(1 for s in launched if s.state == "FAIL") / max(1, len(launched))
    # the pick after each prefix of measured trials (the fastest feasible reported so far)
    prefix, best_so_far = [], None
    for s in measured:
        if s.feasible and s.values is not None and (
                best_so_far is None or s.values[0] < best_so_far.values[0]):
            best_so_far = s
        if best_so_far is None:
            prefix.append(math.inf)
        else:
            t = world.truth(engine.canonicalize(space, best_so_far.config))
            prefix.append(t.tpot_ms / best if feasible(t, base_truth, space) else math.inf)
    return RunResult(pick_ratio, hv_of(front, ref) / true_hv, reported_bias, failing, prefix)


def _median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else math.nan


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--budgets", default="10,20,30,40")
    ap.add_argument("--samplers", default="default,tpe,random,nsga2,tiered",
                    help="'default': the product's default search; others: that sampler "
                         "alone ('tiered': benchmarks/tiered_grid.py)")
    ap.add_argument("--cv", type=float, default=0.025, help="per-measurement TPOT CV")
    ap.add_argument("--launch-cv", type=float, default=0.02, help="per-launch TPOT CV")
    ap.add_argument("--space", default=str(SPARK))
    ap.add_argument("--lm-head-unshared", action="store_true",
                    help="the truth of the fork before its LM-head fix: an FP8 head with "
                         "NEXTN collapses (accept 1.00) and is gated")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    budgets = [int(b) for b in args.budgets.split(",")]
    space = load_space(args.space)
    world = World(space, lm_head_shared=not args.lm_head_unshared)
    truth = world.enumerate()
    base = world.baseline()
    feas = [t for t in truth.values() if feasible(t, base, space)]
    best = min(t.tpot_ms for t in feas)
    ref = (base.tpot_ms, base.accuracy - space.spec.gate.max_accuracy_drop_pp / 100)
    true_hv = hv_of(feas, ref)
    out: dict[str, Any] = {"truth": {
        "best_tpot_ms": round(best, 4), "hypervolume": round(true_hv, 6),
        "configurations": len(truth), "feasible": len(feas),
        "best_config": min(feas, key=lambda t: t.tpot_ms).config,
        "baseline_tpot_ms": round(base.tpot_ms, 4),
        # the true front and what its fastest point alone reaches (the hv ceiling of a front
        # that cannot tell accuracies apart closer than the sample resolves)
        "front": [{"tpot_ms": round(t.tpot_ms, 4), "accuracy": round(t.accuracy, 6),
                   "numerics": t.numerics} for t in true_front(feas)],
        "best_alone_hv_ratio": round(hv_of(true_front(feas)[:1], ref) / true_hv, 4)},
        "samplers": {},
        "noise": {"cv": args.cv, "launch_cv": args.launch_cv}}
    import tiered_grid  # noqa: F401 - registers "tiered" for this benchmark

    from tuner.study.samplers import SAMPLERS

    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for sampler in args.samplers.split(","):
            if sampler != "default" and sampler not in SAMPLERS:
                raise SystemExit(f"unknown sampler {sampler}")
            per_budget: dict[str, Any] = {}
            runs = {b: [one_run(space, world, best, true_hv, ref, base, sampler,
                                args.first_seed + s, b, args, tmp)
                        for s in range(args.seeds)] for b in budgets}
            longest = runs[max(budgets)]
            to2 = []
            for r in longest:
                hit = next((i + 1 for i, x in enumerate(r.prefix_ratios) if x <= 1.02),
                           math.inf)
                to2.append(hit)
            for b in budgets:
                rs = runs[b]
                per_budget[str(b)] = {
                    "pick_ratio_median": round(_median([r.pick_ratio for r in rs]), 4),
                    "pick_ratio_worst": round(max(r.pick_ratio for r in rs), 4),
                    "hv_ratio_median": round(_median([r.hv_ratio for r in rs]), 4),
                    "trials_to_2pct_median": _median(to2),
                    "reported_bias_median": round(_median([r.reported_bias for r in rs]), 4),
                    "failing_share": round(statistics.fmean(r.failing_share for r in rs), 4),
                    # the tail: picks 5% or more off the truth, and each seed's ratio
                    "picks_over_5pct": sum(r.pick_ratio > 1.05 for r in rs),
                    "pick_ratio_mean": round(statistics.fmean(min(r.pick_ratio, 2.0)
                                                              for r in rs), 4),
                }
                if args.json:
                    per_budget[str(b)]["pick_ratios"] = [round(r.pick_ratio, 4) for r in rs]
            out["samplers"][sampler] = per_budget
            if not args.json:
                print(sampler, json.dumps(per_budget), flush=True)
    if args.json:
        print(json.dumps(out, indent=1, default=str))
    return out


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()
