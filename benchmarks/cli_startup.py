"""How fast ``tuner --help`` starts, against a bare interpreter start, in one run.

    .venv/bin/python benchmarks/cli_startup.py [--runs 10]

Prints the median wall time of each and their ratio. Not a test: timings vary by machine.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time


def wall(argv: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args()
    bare = wall([sys.executable, "-c", "pass"], args.runs)
    helps = {
        "tuner --help": [sys.executable, "-m", "tuner", "--help"],
        "tuner plan --help": [sys.executable, "-m", "tuner", "plan", "--help"],
    }
    print(f"python -c pass           {bare * 1000:7.1f} ms (median of {args.runs})")
    for name, argv in helps.items():
        t = wall(argv, args.runs)
        print(f"{name:24s} {t * 1000:7.1f} ms  ({t / bare:.1f}x a bare interpreter)")


if __name__ == "__main__":
    main()
