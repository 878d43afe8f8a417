"""The accuracy gate's power at the sample sizes a sweep uses (exact, tuner/trial/_power.py).

    .venv/bin/python benchmarks/gate_power.py

For the shipped Spark space's gate (drop > 1 pp and one-sided McNemar p < 0.05), prints the
probability that a true 3-point drop is refused, and the smallest drop refused with 80%
probability, by number of paired questions and discordance rate (the share of questions the
configuration and the baseline answer differently: near the drop itself for a deterministic
engine, ~10% or more when both sample at temperature 0.6).
"""

from __future__ import annotations

import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tuner.space import load_space  # noqa: E402
from tuner.trial import detectable_drop  # noqa: E402
from tuner.trial import gate_power  # noqa: E402


def main() -> None:
    gate = load_space(ROOT / "search_spaces" / "ling-3.0-flash-dgx-spark.yaml").spec.gate
    print(f"gate: drop > {gate.max_accuracy_drop_pp:g} pp and one-sided McNemar p < "
          f"{gate.mcnemar_alpha:g}")
    print("questions  discordance  P(refuse a 3 pp drop)  80%-power drop")
    for n in (30, 60, 200, 400, 1000, 1319):
        for r in (0.03, 0.05, 0.10, 0.15):
            d = detectable_drop(n, r, gate)
            print(f"{n:9d}  {r:11.0%}  {gate_power(n, r, 3.0, gate):21.2f}  "
                  + (f"{d:.1f} pp" if d is not None else "none up to 100 pp"))


if __name__ == "__main__":
    main()
