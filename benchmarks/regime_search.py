"""How close does a sweep get to the true best configuration of a load regime? Ground truth
by exhaustive enumeration, as ``search_efficiency.py`` does for batch 1.

    .venv/bin/python benchmarks/regime_search.py --seeds 6 --budget 30 --sla-ms 60 \
        --cache benchmarks/.cache

The space is the shipped Spark space, whose capacity knobs (the memory fraction and
``max_running``, 1 to 16 requests at once, the decode graphs derived from it) a regime of
16 users searches, with that one regime: 16 users, ``--requests`` GSM8K-shaped requests
(5-shot prompt of 1,600 tokens whose few-shot prefix is cached, lognormal outputs as the
simulator's GSM8K model, capped at 2,048), and a p95 TPOT SLA (``--sla-ms``). Truth per canonical
configuration: the batch-1 truth of ``search_efficiency.World`` (TPOT, whether it starts,
accept length, accuracy) and the regime's goodput (SLA-meeting requests per second) from
the simulator's own scheduler replayed without noise (``tuner_sim.load.closed_loop``: its
admission by pool and batch size, prefill and batch decode). A configuration whose p95 TPOT
misses the SLA has no goodput there.

The sweep is the product's (``Driver``, default settings: it searches the workload's own
objective, batch-1 TPOT); the trial runner answers from the truth with launch and
measurement noise (CVs as ``search_efficiency.py``'s), the regime's goodput scaled by the
launch's speed factor. Per seed: the regime's pick (``tuner.study.regime_answers``, what
``export --regime`` writes): the true best eligible goodput / the pick's true goodput (the
pick's goodput counted whether or not it truly meets the SLA), and whether it truly meets
the SLA (a measured p95 near the bound can pass by noise).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any


sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.search_efficiency import SPARK
from benchmarks.search_efficiency import Truth
from benchmarks.search_efficiency import TruthRunner
from benchmarks.search_efficiency import World
from benchmarks.search_efficiency import _lognormal
from benchmarks.search_efficiency import feasible
from tuner.space import SearchSpace
from tuner.space import parse_space
from tuner.study import locate
from tuner.study import regime_answers
from tuner.sweep._base import TrialJob
from tuner.sweep._driver import Driver
from tuner.sweep._driver import SweepSettings
from tuner.trial import RegimeResult
from tuner.trial import TrialOptions
from tuner.trial import TrialResult
from tuner.trial._stats import percentile
from tuner_sim.load import closed_loop
from tuner_sim.load import core_for


PROMPT, CACHED, CAP = 1600, 1500, 2048


def load_space(sla_ms: float, requests: int) -> SearchSpace:
    text = SPARK.read_text()
    text = text.replace("workload:\n", "workload:\n  regimes:\n    - {name: sixteen, "
                        f"concurrency: 16, requests: {requests}, "
                        f"sla: {{p95_tpot_ms: {sla_ms}}}}}\n", 1)
    return parse_space(text, file="the Spark space serving 16 at once")


class RegimeWorld(World):
    """:class:`World` plus each configuration's noise-free figures in the regime."""

    def __init__(self, space: SearchSpace, sla_ms: float, requests: int) -> None:
        # as the sweep searches it: at 16 users the memory fraction is searched too
        super().__init__(space.for_workload(space.spec.workload), speed_space=space)
        self.sla_ms, self.requests = sla_ms, requests
        self.best1_tpot = math.nan       # the true best batch-1 TPOT, once enumerated
        g = self.model.gsm8k
        rng = random.Random("regime-lengths")
        self.outputs = [min(CAP, max(2, round(g.output_tokens_median * math.exp(
            rng.gauss(0.0, g.output_tokens_sigma))))) for _ in range(requests)]
        self.regime: dict[str, RegimeResult | None] = {}
        self.regime_keys: dict[str, str] = {}      # config hash -> its key in ``regime``

    def in_regime(self, config: Any) -> RegimeResult | None:
        """The regime's noise-free figures (None: the configuration does not start). Two
        configurations of one speed that admit as many requests at once replay alike."""
        if not self.truth(config).starts:
            return None
        key = self.regime_keys.get(config.hash())
        if key is None or key not in self.regime:
            plan = self.engine.plan(self.space, config)
            core = core_for(plan.argv[plan.argv.index("--model-path"):], self.machine,
                            self.model)
            fits = min(core.limits.max_running, core.limits.pool_tokens // (PROMPT + CAP))
            key = (f"{self.speed_space.speed_key(config.as_dict())}|{max(1, fits)}|"
                   f"{core.limits.graph_bs}")            # the graphs pad what runs at once
            self.regime_keys[config.hash()] = key
            if key not in self.regime:
                self.regime[key] = self._regime(core)
        return self.regime[key]

    def cache_file(self, folder: Path) -> Path:
        """Where this truth is kept between runs: named by the space, the regime's shape
        and the source of everything that computes it (the simulator, the engine adapter,
        the space model, this file), so a change to any of them computes it afresh."""
        import hashlib

        root = Path(__file__).resolve().parent.parent
        h = hashlib.sha256(f"{self.sla_ms}|{self.requests}|".encode())
        h.update((self.space.source.read_bytes() if self.space.source else b"") +
                 repr(self.space.spec.model_dump()).encode())
        for sub in ("tuner_sim", "tuner/engines", "tuner/space", "tuner/models"):
            for f in sorted((root / sub).rglob("*.py")):
                h.update(f.read_bytes())
        h.update(Path(__file__).read_bytes())
        return folder / f"regime-truth-{h.hexdigest()[:16]}.pkl"

    def load(self, path: Path) -> bool:
        import pickle

        if not path.is_file():
            return False
        self.cache, self.perf, self.regime, self.regime_keys = pickle.loads(
            path.read_bytes())
        return True

    def save(self, path: Path) -> None:
        import pickle

        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(pickle.dumps((self.cache, self.perf, self.regime,
                                       self.regime_keys)))

    def _regime(self, core: Any) -> RegimeResult:
        r = closed_loop(core, prompts=self.requests, concurrency=16, input_tokens=PROMPT,
                        cached_tokens=CACHED, output_tokens=self.outputs, kind="sampled",
                        content="math", max_new_tokens=CAP)
        dur = r.duration_ms / 1000
        p95 = percentile(list(r.tpot_ms), 95)
        met = sum(1 for t in r.tpot_ms if t <= self.sla_ms)
        within = p95 <= self.sla_ms
        return RegimeResult(
            name="sixteen", concurrency=16, requests=self.requests, duration_s=dur,
            tpot_mean_ms=statistics.fmean(r.tpot_ms), tpot_p95_ms=p95,
            ttft_mean_s=statistics.fmean(r.ttft_ms) / 1000,
            ttft_p95_s=percentile(list(r.ttft_ms), 95) / 1000,
            throughput_tok_s=sum(r.outputs) / dur, goodput_rps=met / dur,
            sla_met=met / self.requests, within_sla=within)

    def goodput(self, config: Any, *, sla: bool = True) -> float:
        """The regime's true goodput of an eligible configuration, else 0; ``sla`` False:
        whether or not its p95 TPOT is within the SLA."""
        g = self.in_regime(config)
        ok = feasible(self.truth(config), self.baseline(), self.space)
        within = g is not None and (g.within_sla or not sla)
        return (g.goodput_rps or 0.0) if g is not None and ok and within else 0.0


class RegimeRunner(TruthRunner):
    """:class:`TruthRunner` whose launches also report the regime, with the same noise."""

    world: RegimeWorld

    def _run(self, job: TrialJob) -> TrialResult:
        res = super()._run(job)
        g = self.world.in_regime(job.config)
        if res.ok and g is not None:
            f = _lognormal(self.rng, self.launch_cv) * _lognormal(self.rng, self.cv)
            res.regimes = [g.model_copy(update={
                "duration_s": (g.duration_s or 0) * f,
                "tpot_mean_ms": (g.tpot_mean_ms or 0) * f,
                "tpot_p95_ms": (g.tpot_p95_ms or 0) * f,
                "throughput_tok_s": (g.throughput_tok_s or 0) / f,
                "goodput_rps": (g.goodput_rps or 0) / f,
                "within_sla": (g.tpot_p95_ms or 0) * f <= self.world.sla_ms})]
        return res


def one_run(world: RegimeWorld, best: float, seed: int, budget: int,
            args: argparse.Namespace, tmp: Path
            ) -> tuple[float, bool, Truth | None, bool, float, dict[str, Any]]:
    """(best goodput / the regime pick's true goodput, whether the pick truly meets the
    SLA, the pick's truth, whether the answer said the pick is near the SLA's bound, the
    batch-1 pick's true TPOT / the true best's (the same sweep's other answer), where the
    budget went: ``tuner.report`` ``budget_split``)."""
    from tuner.report._budget import budget_split

    space = world.speed_space      # as declared: the driver makes capacity searched itself
    runner = RegimeRunner(world, seed=seed, cv=args.cv, launch_cv=args.launch_cv,
                          questions=space.spec.workload.questions or 60)
    opts = TrialOptions(workdir=tmp, workload=space.spec.workload)
    name = f"regime-{seed}-{budget}"
    settings = SweepSettings(study_name=name, location=locate(str(tmp / f"{name}.db"), "x"),
                             trials=budget, seed=seed)
    study = Driver(space, world.engine, opts, settings, lambda: runner).run()
    rows = study.summaries()
    answer = study.answer(rows)
    batch1 = math.inf
    if answer.pick is not None:
        t1 = world.truth(world.engine.canonicalize(world.space, answer.pick.config))
        batch1 = t1.tpot_ms / world.best1_tpot if t1.tpot_ms else math.inf
    (g,) = regime_answers(answer, rows) or [None]
    split = budget_split(rows, ["sixteen"])
    spent = split.by_objective if split is not None else {}
    if g is None or g.pick is None:
        return math.inf, False, None, False, batch1, spent
    cfg = world.engine.canonicalize(world.space, g.pick.configuration.config)
    got = world.goodput(cfg, sla=False)
    return ((best / got if got > 0 else math.inf), world.goodput(cfg) > 0, world.truth(cfg),
            bool(g.pick.near_bound(g.sla)), batch1, spent)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, default=6)
    p.add_argument("--first-seed", type=int, default=0)
    p.add_argument("--budget", type=int, default=30)
    p.add_argument("--sla-ms", type=float, default=60.0)
    p.add_argument("--requests", type=int, default=64)
    p.add_argument("--cv", type=float, default=0.025)
    p.add_argument("--launch-cv", type=float, default=0.02)
    p.add_argument("--cache", type=Path, default=None,
                   help="a folder to keep the enumerated truth in between runs (it is "
                        "recomputed when the space, the simulator or the engine adapter "
                        "changed); by default it is computed afresh")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    world = RegimeWorld(load_space(args.sla_ms, args.requests), args.sla_ms, args.requests)
    cached = world.cache_file(args.cache) if args.cache else None
    loaded = cached is not None and world.load(cached)
    truths = world.enumerate()
    configs = {h: world.engine.canonicalize(world.space, t.config) for h, t in truths.items()}
    good = {h: world.goodput(c) for h, c in configs.items()}
    if cached is not None and not loaded:
        world.save(cached)
    best_h = max(good, key=lambda h: good[h])
    base = world.baseline()
    ok1 = [h for h, t in truths.items() if feasible(t, base, world.space)]
    best1 = min(ok1, key=lambda h: truths[h].tpot_ms)
    world.best1_tpot = truths[best1].tpot_ms
    out: dict[str, Any] = {
        "configurations": len(truths), "eligible_in_regime": sum(v > 0 for v in good.values()),
        "best_batch1": {"config": truths[best1].config, "tpot_ms": truths[best1].tpot_ms,
                        "regime_goodput_rps": good[best1]},
        "best_regime": {"config": truths[best_h].config, "goodput_rps": good[best_h],
                        "tpot_ms": truths[best_h].tpot_ms},
        "differ": best1 != best_h, "runs": []}
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            ratio, meets, pick, near, batch1, spent = one_run(
                world, good[best_h], seed, args.budget, args, Path(tmp))
            out["runs"].append({"seed": seed, "ratio": ratio, "meets_sla": meets,
                                "said_near_bound": near, "batch1_ratio": batch1,
                                "budget": spent, "pick": pick.config if pick else None})
    ratios = [r["ratio"] for r in out["runs"]]
    out["median_ratio"] = statistics.median(ratios)
    out["worst_ratio"] = max(ratios)
    b1 = [r["batch1_ratio"] for r in out["runs"]]
    out["batch1_median_ratio"], out["batch1_worst_ratio"] = statistics.median(b1), max(b1)
    out["launches_for_the_regime"] = statistics.mean(
        sum(r["budget"].get("sixteen", {}).values()) for r in out["runs"])
    out["no_pick"] = sum(r["pick"] is None for r in out["runs"])
    out["sla_missed"] = sum(r["pick"] is not None and not r["meets_sla"] for r in out["runs"])
    if args.json:
        print(json.dumps(out, indent=2, default=str))
    else:
        print(f"{out['configurations']} configurations, {out['eligible_in_regime']} eligible "
              f"at 16 users (p95 TPOT <= {args.sla_ms:g} ms)")
        print(f"true best at batch 1: {out['best_batch1']}")
        print(f"true best at 16 users: {out['best_regime']}")
        print(f"they differ: {out['differ']}")
        for r in out["runs"]:
            verdict = ("no pick" if r["pick"] is None else
                       "meets the SLA" if r["meets_sla"] else "MISSES the SLA")
            print(f"seed {r['seed']}: best goodput / the regime pick's = {r['ratio']:.4f}, "
                  f"{verdict}; batch 1 {r['batch1_ratio']:.4f}, regime launches "
                  f"{sum(r['budget'].get('sixteen', {}).values())}"
                  f"{' (said: near the bound)' if r['said_near_bound'] else ''}  {r['pick']}")
        picked = len(out["runs"]) - out["no_pick"]
        print(f"the same sweeps' batch-1 pick: median {out['batch1_median_ratio']:.4f}, worst "
              f"{out['batch1_worst_ratio']:.4f} (its true TPOT / the true best's); launches "
              f"proposed for the regime: {out['launches_for_the_regime']:.1f} of "
              f"{args.budget} on average")
        print(f"median {out['median_ratio']:.4f}, worst {out['worst_ratio']:.4f} (no pick: "
              f"inf); {out['no_pick']} of {len(out['runs'])} seeds found nothing within the "
              f"SLA (export --regime refuses); {out['sla_missed']} of {picked} picks miss "
              f"the SLA in truth (budget {args.budget})")
    return out


if __name__ == "__main__":
    main()
