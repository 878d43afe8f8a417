"""``tuner init`` then a sweep on the simulator, for every public config fixture. One run.

    .venv/bin/python benchmarks/init_sweeps.py [--trials 20] [--only NAME ...] [--keep DIR]

For each case (a config.json under tests/fixtures/model_configs, a machine, its GPUs, a
draft where the model has one), as a user would, each a real process: ``tuner init MODEL
--machine M --out SPACE``, ``tuner space validate SPACE``, ``tuner sweep SPACE --engine sim
--trials N`` (GSM8K from ../shared/data/gsm8k or --gsm8k) and ``tuner report --json``. Prints
one row per case: the launches and trials the study holds and how they ended, the measured
configurations, the pick, its speed-up over the baseline, the twin (calibrated or DERIVED)
and the wall time. Exit status 1 when any step of any case fails, or a sweep launched fewer
than N without having measured every configuration of its space (then it says so and
ends after its finals).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path


REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures" / "model_configs"


@dataclass(frozen=True)
class Case:
    model: str
    machine: str
    gpus: int = 1
    drafts: tuple[str, ...] = field(default_factory=tuple)

    @property
    def name(self) -> str:
        return f"{self.model}@{self.machine}" + (f"x{self.gpus}" if self.gpus > 1 else "")


CASES = [
    Case("ling-3.0-flash-fp4", "dgx-spark", drafts=("ling-3.0-flash-dspark",)),
    Case("ling-3.0-flash-fp4", "h200"),
    Case("qwen3-30b-a3b", "dgx-spark"),
    Case("qwen3-30b-a3b", "h200"),
    Case("qwen3-next-80b-a3b-instruct", "h200", gpus=2),
    Case("deepseek-v3", "h200", gpus=8),
    Case("gpt-oss-120b", "dgx-spark"),
    Case("gpt-oss-120b", "h200"),
]


#: the simulator's time scale per machine: a fast twin (a few ms a token on an H200)
#: reads noisy at a high one (docs/simulator.md, "Limits")
TIME_SCALE = {"dgx-spark": 300, "h200": 20}


def tuner(cwd: Path, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tuner", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=cwd)


def run_case(case: Case, folder: Path, trials: int, gsm8k: Path, seed: int) -> dict:
    folder.mkdir(parents=True, exist_ok=True)
    space = folder / "space.yaml"
    started = time.monotonic()
    row: dict = {"case": case.name}
    init_args = ["init", str(FIXTURES / case.model), "--machine", case.machine,
                 "--out", str(space), "--gpus", str(case.gpus)]
    for draft in case.drafts:
        init_args += ["--draft", str(FIXTURES / draft)]
    steps = [
        ("init", init_args, 120),
        ("validate", ["space", "validate", str(space)], 120),
        ("sweep", ["sweep", str(space), "--engine", "sim", "--gsm8k", str(gsm8k),
                   "--storage", str(folder / "study.db"), "--study", "s",
                   "--trials", str(trials), "--questions", "6",
                   "--time-scale", str(TIME_SCALE[case.machine]),
                   "--seed", str(seed), "--ray-address", "none",
                   "--workdir", str(folder / "runs")], 3600),
        ("report", ["report", "s", "--storage", str(folder / "study.db"), "--json"], 300),
    ]
    for step, args, timeout in steps:
        proc = tuner(folder, *args, timeout=timeout)
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [""]
            row.update(failed=f"{step}: exit {proc.returncode}: {tail[0][:160]}")
            break
        if step == "sweep":
            row["exhausted"] = "every configuration of the space is measured" in proc.stdout
        if step == "report":
            row.update(summarise(json.loads(proc.stdout), folder / "study.db"))
    row["wall_s"] = round(time.monotonic() - started, 1)
    return row


def summarise(report: dict, storage: Path) -> dict:
    """The study's trials as Optuna holds them (state, twin) and the report's pick."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.load_study(study_name="s", storage=f"sqlite:///{storage}")
    trials = study.get_trials(deepcopy=False)
    states = Counter(t.state.name for t in trials)
    launches = sum(1 for t in trials if t.user_attrs.get("tuner:role") != "duplicate")
    twins = {str(t.user_attrs.get("twin")) for t in trials}
    pick = report.get("pick") or {}
    return {
        "trials": len(trials), "launches": launches, "states": dict(states),
        "configurations": len(report.get("leaderboard") or []),
        "pick": pick.get("trial"), "pick_tpot_ms": round(pick["tpot_ms"], 2)
        if pick.get("tpot_ms") is not None else None,
        "speedup": round(pick["speedup"], 3) if pick.get("speedup") is not None else None,
        "pick_config": pick.get("differs_from_baseline"),
        "twin": "/".join(sorted(twins - {"None"})) or "calibrated",
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=20)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--only", nargs="*", default=[], help="case names or model names")
    p.add_argument("--gsm8k", type=Path, default=REPO.parent / "shared" / "data" / "gsm8k")
    p.add_argument("--keep", type=Path, help="keep each case's folder under DIR")
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    cases = [c for c in CASES if not a.only or c.name in a.only or c.model in a.only]
    root = a.keep or Path(tempfile.mkdtemp(prefix="init-sweeps-"))
    rows = []
    for case in cases:
        row = run_case(case, root / case.name, a.trials, a.gsm8k, a.seed)
        rows.append(row)
        print(json.dumps(row) if a.json else line(row), flush=True)
    bad = [r for r in rows if "failed" in r
           or (r.get("launches", 0) < a.trials and not r.get("exhausted"))]
    print(f"{len(rows)} cases, {len(rows) - len(bad)} ran end to end ({a.trials} launches, "
          "or every configuration of a smaller space and its finals)"
          + (f"; failed: {', '.join(r['case'] for r in bad)}" if bad else ""))
    return 1 if bad else 0


def line(row: dict) -> str:
    if "failed" in row:
        return f"{row['case']:<40} FAILED {row['failed']} ({row['wall_s']} s)"
    states = ", ".join(f"{n} {s}" for s, n in sorted(row["states"].items()))
    spent = " (space exhausted)" if row.get("exhausted") else ""
    return (f"{row['case']:<36} {row['launches']} launches{spent}, {row['trials']} trials "
            f"({states}), "
            f"{row['configurations']} configurations, pick #{row['pick']} "
            f"{row['pick_tpot_ms']} ms ({row['speedup']}x the baseline; "
            f"{row['pick_config'] or 'baseline'}), twin {row['twin']} ({row['wall_s']} s)")


if __name__ == "__main__":
    raise SystemExit(main())
