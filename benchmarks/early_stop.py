"""Machine time saved by early stopping and a cheaper search fidelity, on real simulator
sweeps, in one run.

    .venv/bin/python benchmarks/early_stop.py --seeds 3 --trials 30 --variants 0.25,0.25/10

For each seed, the README's sweep (Spark space, simulator, 30 GSM8K questions, local runner)
runs with neither (``--early-stop 0``) and then with each variant: ``F`` is
``--early-stop F``, ``F/N`` adds ``--search-questions N`` (search trials measure the first N
of the 30 questions; the baseline and the finals all 30). Printed per run: launches, how
many stopped early, and machine seconds, in two measures:

* ``engine``: start-up + proof + warm-up + benchmark, the simulated machine's own time
  (each stored TrialResult's timings). This is what a real machine spends.
* ``harness``: the whole launch as timed by the trial (``total_s``: wall time x the time
  scale). It also counts the harness's own wall time (spawning, reading GSM8K, stopping
  the server: about 1 s), which the time scale multiplies (x100 here) into minutes that a
  real Spark never spends; it is shown so that nothing is hidden.

Each as a mean per launch (every launch: baseline, search and finals) and per search trial
(the only launches early stopping and the search fidelity touch). Then the pick (what
``tuner export`` takes) and its **true** TPOT from the simulator's noise-free model over
the true best feasible (``benchmarks/search_efficiency.py``'s truth: 17.42 ms), so "the
same pick" is judged by what was picked, not by one noisy reading. "Same launches whole":
the launches each sweep made, with every stopped or shortened one priced at its full 30
questions (the rest at its own measured pace).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import optuna


ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.search_efficiency import World  # noqa: E402
from benchmarks.search_efficiency import feasible  # noqa: E402
from tuner.space import load_space  # noqa: E402
from tuner.study import Role  # noqa: E402
from tuner.study import feasible_best  # noqa: E402
from tuner.study import summarize  # noqa: E402


SPACE = ROOT / "search_spaces" / "ling-3.0-flash-dgx-spark.yaml"
GSM8K = ROOT.parent / "shared" / "data" / "gsm8k"
ENGINE_PHASES = ("startup_s", "evidence_s", "warmup_s", "benchmark_s")
OFF = "0"   # neither early stopping nor a cheaper search fidelity


def _timings(study: Any, trial: Any, store: Any) -> dict[str, float]:
    """The stored TrialResult's timings (machine seconds per phase), and ``unsent_s``: for
    a measured launch that stopped early or measured only the first questions, the machine
    time the rest of the workload would have taken at its own benchmark pace so far."""
    from optuna.artifacts import download_artifact
    from optuna.artifacts import get_all_artifact_meta

    for meta in get_all_artifact_meta(trial, storage=study._storage):
        if meta.filename.endswith("-result.json"):
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / meta.filename
                download_artifact(artifact_store=store, file_path=str(path),
                                  artifact_id=meta.artifact_id)
                res = json.loads(path.read_text())
                out = {k: float(v or 0.0) for k, v in res["timings"].items()}
                sent, whole = len(res["requests"]), int(res["workload"]["questions"])
                out["unsent_s"] = (out["benchmark_s"] / sent * (whole - sent)
                                   if res["status"] in ("ok", "pruned") and sent else 0.0)
                return out
    raise LookupError(f"trial {trial.number}: no stored result")


def sweep(tmp: Path, seed: int, trials: int, variant: str, gsm8k: str) -> dict[str, Any]:
    from optuna.artifacts import FileSystemArtifactStore

    early, _, search = variant.partition("/")
    tag = variant.replace("/", "q")
    db = tmp / f"s{seed}-{tag}.db"
    proc = subprocess.run([
        sys.executable, "-m", "tuner", "sweep", str(SPACE), "--engine", "sim", "--gsm8k", gsm8k,
        "--trials", str(trials), "--questions", "30", "--seed", str(seed), "--early-stop",
        early, *(["--search-questions", search] if search else []), "--ray-address",
        "none", "--storage", str(db), "--study", "s",
        "--workdir", str(tmp / f"runs-{seed}-{tag}")],
        capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"seed {seed} {variant}: sweep failed\n{proc.stderr[-2000:]}")
    study = optuna.load_study(study_name="s", storage=f"sqlite:///{db}")
    store = FileSystemArtifactStore(str(db.with_suffix(".artifacts")))
    launched = [(t, s) for t in study.get_trials(deepcopy=False)
                if (s := summarize(t)).launched]
    times = [(s, _timings(study, t, store)) for t, s in launched]
    engine = [sum(tm[k] for k in ENGINE_PHASES) for _, tm in times]
    harness = [tm["total_s"] for _, tm in times]
    search = [i for i, (s, _) in enumerate(times) if s.role == Role.TRIAL]
    unsent = sum(tm["unsent_s"] for _, tm in times)
    pick = feasible_best(study)
    return {"launches": len(launched), "search": len(search),
            "pruned": sum(s.state == "PRUNED" for _, s in launched),
            "engine_s": statistics.fmean(engine), "harness_s": statistics.fmean(harness),
            "engine_search_s": statistics.fmean(engine[i] for i in search),
            "harness_search_s": statistics.fmean(harness[i] for i in search),
            "same_launches_cut": unsent / (sum(engine) + unsent),
            "pick": summarize(pick).config if pick is not None else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--trials", type=int, default=30)
    ap.add_argument("--variants", default="0.25", help="comma-separated: F (--early-stop F) "
                    "or F/N (and --search-questions N), each against neither")
    ap.add_argument("--gsm8k", default=str(GSM8K), help="folder with GSM8K's test.jsonl")
    ap.add_argument("--keep", help="copy each sweep's study database here (to read later)")
    ap.add_argument("--jobs", type=int, default=1, help="sweeps run at once (each is mostly "
                    "simulated sleep; machine time is wall time x the time scale, so keep "
                    "them under the cores)")
    a = ap.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    variants = a.variants.split(",")
    space = load_space(SPACE)
    world = World(space)
    truth = world.enumerate()
    base = world.baseline()
    best = min(t.tpot_ms for t in truth.values() if feasible(t, base, space))

    def true_ratio(config: dict[str, Any] | None) -> float:
        if config is None:
            return float("nan")
        cfg = world.engine.canonicalize(space, space.complete(config))
        return world.truth(cfg).tpot_ms / best

    every = [OFF, *variants]
    ratios: dict[str, dict[str, list[float]]] = {v: {} for v in variants}
    picks: dict[str, list[float]] = {v: [] for v in every}
    seeds = range(a.first_seed, a.first_seed + a.seeds)
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(a.jobs) as pool:
        futures = {(seed, v): pool.submit(sweep, Path(tmp), seed, a.trials, v, a.gsm8k)
                   for seed in seeds for v in every}
        results = {k: v.result() for k, v in futures.items()}
        if a.keep:
            import shutil

            Path(a.keep).mkdir(parents=True, exist_ok=True)
            for db in Path(tmp).glob("*.db"):
                shutil.copy(db, Path(a.keep) / db.name)
    for seed in seeds:
        runs = {v: results[seed, v] for v in every}
        for v, r in runs.items():
            picks[v].append(true_ratio(r["pick"]))
            print(f"seed {seed} {v:<7}: {r['launches']} launches ({r['search']} "
                  f"search), {r['pruned']} stopped early; machine s per launch: engine "
                  f"{r['engine_s']:.0f}, harness {r['harness_s']:.0f}; per search trial: "
                  f"engine {r['engine_search_s']:.0f}, harness {r['harness_search_s']:.0f};"
                  f" same launches whole: {r['same_launches_cut']:.0%} less engine time;"
                  f" pick true TPOT / best {picks[v][-1]:.4f}", flush=True)
        for v in variants:
            for key in ("engine_s", "harness_s", "engine_search_s", "harness_search_s"):
                ratios[v].setdefault(key, []).append(runs[v][key] / runs[OFF][key])
            ratios[v].setdefault("same", []).append(1 - runs[v]["same_launches_cut"])
    for v in variants:
        cut = {k: 1 - statistics.median(x) for k, x in ratios[v].items()}
        print(f"{v}: machine time cut (median over {a.seeds} seeds): per launch "
              f"engine {cut['engine_s']:.0%}, harness {cut['harness_s']:.0%}; per search "
              f"trial engine {cut['engine_search_s']:.0%}, harness "
              f"{cut['harness_search_s']:.0%}; against the same launches whole: engine "
              f"{cut['same']:.0%}; pick true ratio median {statistics.median(picks[v]):.4f}"
              f" (off: {statistics.median(picks[OFF]):.4f})")


if __name__ == "__main__":
    main()
