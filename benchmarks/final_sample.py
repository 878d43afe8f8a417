"""Does the exported pick carry an injected 3-point accuracy drop? Ten seeds, without and
with the final accuracy sample (``--final-questions 1000``).

    .venv/bin/python benchmarks/final_sample.py --trials 30
    .venv/bin/python benchmarks/final_sample.py --simulator --seeds 3 --final 400
    .venv/bin/python benchmarks/final_sample.py --simulator --default --jobs 8

``--default``: the sweeps run as a user's would, with no ``--final-questions`` (the final
sample the sweep sizes itself), and every ``--pick`` (fastest, most-accurate, knee) is
checked; ``--jobs``: seeds at once.

``--simulator``: real ``tuner sweep`` runs on the simulator instead (the README's sweep:
30 GSM8K questions, local runner) with its ``accuracy_drop`` fault on every FP8 LM-head
configuration, once without and once with ``--final-questions``.

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


ROOT = Path(__file__).resolve().parent.parent
DROP = '[{"kind": "accuracy_drop", "arg": 3, "when": {"SGLANG_ENABLE_FP8_LM_HEAD": "1"}}]'


GSM8K = ROOT.parent / "shared" / "data" / "gsm8k"


def simulated_pick(tmp: Path, seed: int, trials: int, final: int | None,
                   picks: tuple[str, ...] = ("fastest",)) -> str:
    """The LM-head precision each of ``picks`` exports (``baseline`` for the baseline),
    joined by ``/``; ``final`` None: no --final-questions (the sweep's default)."""
    import subprocess

    import optuna

    from tuner.study import study_answer

    db = tmp / "s.db"
    subprocess.run([sys.executable, "-m", "tuner", "sweep",
                    str(ROOT / "search_spaces" / "ling-3.0-flash-dgx-spark.yaml"),
                    "--engine", "sim", "--gsm8k", str(GSM8K),
                    "--trials", str(trials), "--questions", "30", "--seed", str(seed),
                    "--sim-faults", DROP, "--ray-address", "none", "--storage", str(db),
                    "--study", "s", "--workdir", str(tmp / "runs"),
                    *(["--final-questions", str(final)] if final is not None else [])],
                   check=True, capture_output=True, cwd=tmp)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    answer = study_answer(optuna.load_study(study_name="s", storage=f"sqlite:///{db}"))
    out = []
    for how in picks:
        c = answer.choose(how)
        out.append("baseline" if c.role.value == "baseline" else str(c.config["lm_head"]))
    return "/".join(out)


def _one(args: tuple[int, int, int | None, tuple[str, ...]]) -> str:
    seed, trials, final, picks = args
    with tempfile.TemporaryDirectory() as tmp:
        return simulated_pick(Path(tmp), seed, trials, final, picks)


def default_runs(a: argparse.Namespace) -> None:
    """Every pick of the default sweep (no --final-questions), ``--jobs`` seeds at once."""
    from concurrent.futures import ProcessPoolExecutor

    picks = ("fastest", "most-accurate", "knee")
    seeds = list(range(a.first_seed, a.first_seed + a.seeds))
    from concurrent.futures import as_completed

    got = []
    with ProcessPoolExecutor(a.jobs) as pool:
        futures = {pool.submit(_one, (s, a.trials, None, picks)): s for s in seeds}
        for f in as_completed(futures):         # each seed as it ends
            got.append(g := f.result())
            shown = " ".join(f"{p}={x}" for p, x in zip(picks, g.split("/"), strict=True))
            print(f"default sweep seed {futures[f]}: {shown}", flush=True)
    carried = sum("fp8" in g.split("/") for g in got)
    print(f"default sweep (no --final-questions), trials {a.trials}: a pick exports the "
          f"fp8 family (the 3-point drop) in {carried} of {len(seeds)} seeds", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=30)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--final", type=int, default=1000, help="final sample size")
    ap.add_argument("--simulator", action="store_true")
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--final-only", action="store_true",
                    help="only the sweeps with a final sample")
    ap.add_argument("--default", action="store_true",
                    help="(with --simulator) the default sweep, every --pick")
    ap.add_argument("--jobs", type=int, default=1, help="seeds at once")
    ap.add_argument("--gsm8k", type=Path, default=None, help="GSM8K folder")
    a = ap.parse_args()
    if a.gsm8k is not None:
        global GSM8K
        GSM8K = a.gsm8k.resolve()
    if a.simulator and a.default:
        default_runs(a)
        return
    if a.simulator:
        for final in (a.final,) if a.final_only else (None, a.final):
            picks = []
            for seed in range(a.first_seed, a.first_seed + a.seeds):
                with tempfile.TemporaryDirectory() as tmp:
                    picks.append(simulated_pick(Path(tmp), seed, a.trials, final))
                print(f"simulator seed {seed} final_questions {final}: pick {picks[-1]}",
                      flush=True)
            print(f"simulator, trials {a.trials}, final_questions {final}: fp8 (the 3-point "
                  f"drop) in {picks.count('fp8')} of {a.seeds}", flush=True)
        return
    for final in (None, a.final):
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
