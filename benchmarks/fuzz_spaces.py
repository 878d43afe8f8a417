"""Fuzz the space loader: mutated copies of the shipped spaces, each must end in a clean
result (a valid space, or one located SpaceError) within 5 s, never a traceback or a hang.

    python benchmarks/fuzz_spaces.py [--cases 1000] [--seed 0]

Mutations: delete, duplicate or swap lines; replace a value by a hostile token (nan, inf,
huge or negative numbers, empty, a list, a mapping, a long string, an alias); indent or
dedent a line; insert hostile snippets (alias bombs, deep nesting, tabs, NUL bytes).
Prints the counts; any traceback or slow case is shown with its mutation.
"""

from __future__ import annotations

import argparse
import random
import signal
import sys
import time
import traceback
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tuner.engines import make_engine
from tuner.errors import UserError
from tuner.space import parse_space


SPACES = sorted((Path(__file__).resolve().parent.parent / "search_spaces").glob("*.yaml"))
TOKENS = [".nan", ".inf", "-.inf", "1e308", "-1", "0", "''", "[]", "{}", "[1, [2, [3]]]",
          "{a: {b: {c: 1}}}", "x" * 5000, "*a", "&a 1", "null", "true", "0x7f", "1_000",
          "!!python/object:os.system ls", "'\\u0000'", "9" * 400]
SNIPPETS = ["a: &a [x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\n",
            "deep: " + "[" * 300 + "]" * 300 + "\n", "\tknobs: {}\n", "x: \x00\n",
            "knobs:\n  mem_fraction:\n    type: float\n    low: 0\n    high: 1\n    step: 1e-12\n"]


def mutate(text: str, rng: random.Random) -> tuple[str, str]:
    lines = text.splitlines()
    kind = rng.choice(["delete", "duplicate", "swap", "value", "indent", "snippet", "value",
                       "value"])
    i = rng.randrange(len(lines))
    if kind == "delete":
        del lines[i]
    elif kind == "duplicate":
        lines.insert(i, lines[i])
    elif kind == "swap":
        j = rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    elif kind == "value":
        candidates = [k for k, ln in enumerate(lines) if ":" in ln and not ln.strip()
                      .startswith("#")]
        i = rng.choice(candidates)
        key = lines[i].split(":", 1)[0]
        lines[i] = f"{key}: {rng.choice(TOKENS)}"
    elif kind == "indent":
        lines[i] = ("  " + lines[i]) if rng.random() < 0.5 else lines[i].lstrip()
    else:
        lines.insert(i, rng.choice(SNIPPETS).rstrip("\n"))
    return "\n".join(lines) + "\n", f"{kind} at line {i + 1}"


class _Slow(Exception):
    pass


def _alarm(signum: int, frame: object) -> None:
    raise _Slow


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    engine = make_engine("sglang")
    texts = [p.read_text() for p in SPACES]
    counts = {"valid": 0, "refused (one located line)": 0, "traceback": 0, "over 5 s": 0}
    slowest = 0.0
    signal.signal(signal.SIGALRM, _alarm)
    for n in range(a.cases):
        text, how = mutate(rng.choice(texts), rng)
        t0 = time.perf_counter()
        signal.alarm(5)
        try:
            engine.validate_space(parse_space(text, file=f"case-{n}.yaml"))
            counts["valid"] += 1
        except UserError as exc:
            assert "\n" not in str(exc), str(exc)
            counts["refused (one located line)"] += 1
        except _Slow:
            counts["over 5 s"] += 1
            print(f"case {n} ({how}): over 5 s")
        except Exception:
            counts["traceback"] += 1
            print(f"case {n} ({how}): {traceback.format_exc().splitlines()[-1]}")
        finally:
            signal.alarm(0)
        slowest = max(slowest, time.perf_counter() - t0)
    print(f"{a.cases} mutated spaces (seed {a.seed}): " + ", ".join(
        f"{v} {k}" for k, v in counts.items()) + f"; slowest case {slowest * 1000:.0f} ms")
    bomb = SNIPPETS[0] * 1 + "c: &c [*b, *b, *b, *b, *b, *b, *b, *b]\n" * 1
    t0 = time.perf_counter()
    try:
        parse_space(bomb, file="bomb.yaml")
    except UserError as exc:
        print(f"alias bomb: refused in {(time.perf_counter() - t0) * 1000:.1f} ms ({exc})")


if __name__ == "__main__":
    main()
