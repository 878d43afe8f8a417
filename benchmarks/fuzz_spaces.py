"""Fuzz the space loader: mutated copies of the shipped spaces, each must end in a clean
result (a valid space, or one located SpaceError) within 5 s, never a traceback or a hang.

    python benchmarks/fuzz_spaces.py [--cases 1000] [--seed 0]

Mutations: delete, duplicate or swap lines; replace a value by a hostile token (nan, inf,
huge or negative numbers, empty, a list, a mapping, a long string, an alias); indent or
dedent a line; insert hostile snippets (alias bombs, deep nesting, tabs, NUL bytes).
Prints the counts; any traceback or slow case is shown with its mutation.

Then two fixed sets: a chain of 1,500 and of 5,000 ``when`` conditions written child-first
(each knob's parent below it; valid, and a cycle of 5,000: refused), each answered within
5 s; and the must-refuse mutants (:data:`MUST_REFUSE`: plainly invalid values of the Spark
space, one key each), each of which must be refused with one located line naming its key.
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


def chain_space(n: int, *, cycle: bool = False) -> str:
    """A space of ``n`` bool knobs, each conditioned on the next (``c0`` needs ``c1``, ...),
    written child-first: resolving the first knob walks the whole chain. ``cycle``: the last
    knob needs the first."""
    head = ("schema_version: 1\nname: chain\nmodel: {id: m, path: m}\n"
            "machine: {id: x, gpu: g}\nbaseline: {}\nknobs:\n")
    knobs = []
    for i in range(n):
        parent = (i + 1) % n if cycle or i + 1 < n else None
        when = f"    when: {{c{parent}: true}}\n" if parent is not None else ""
        knobs.append(f"  c{i}:\n    type: bool\n    default: false\n{when}"
                     f"    env: CHAIN_{i}\n    evidence: {{none: a chain}}\n")
    return head + "".join(knobs)


_INT_BAD = ["four", "-1e308", ".nan", ".inf", "-.inf", "1.5", "2.0", "'0x10'", "'4 4'", "{}",
            "1" + "0" * 30, "-1" + "0" * 30, str(2**63), "9" * 400]
_POSITIVE_BAD = ["0", "-1", "-119", ".nan", ".inf", "-.inf", "''", "true", "-0.0", "'x'"]


def _line(prefix: str, values: list[str], key: str, line: str | None = None
          ) -> list[tuple[str, str, str]]:
    """Mutants replacing the Spark line starting with ``prefix`` by ``line`` (``{}``: each
    value) or ``prefix`` + value; each must be refused naming ``key``."""
    return [(prefix, (line or prefix + " {}").format(v), key) for v in values]


#: (line prefix in the Spark space, its replacement, the key the refusal must name):
#: plainly invalid values (issue 24, item 8) and the bounds already enforced, kept refused.
MUST_REFUSE: list[tuple[str, str, str]] = [
    *_line("schema_version:", ["true", "false", "2", "0", "-1", "'1'", "1.5", ".nan", "null",
                               "[1]"], "schema_version"),
    *_line("  gpus:", ["0", "-1", "-8", "true", "1.5", ".nan", "''", "two", "null",
                       "1" + "0" * 30], "machine.gpus"),
    *_line("  memory_gib:", _POSITIVE_BAD, "machine.memory_gib"),
    *_line("  bandwidth_gbs:", _POSITIVE_BAD, "machine.bandwidth_gbs"),
    *_line("  path: inclusionAI/Ling-3.0-flash-fp4", ["''", "[]", "{}", "null", "5", "true"],
           "model.path", "  path: {}"),
    *_line("  id: ling-3.0-flash-fp4", ["''", "null", "[]"], "model.id", "  id: {}"),
    *_line("  id: dgx-spark", ["''", "null"], "machine.id", "  id: {}"),
    *_line("name: ling-3.0-flash-dgx-spark", ["''", "null", "[]"], "name", "name: {}"),
    *_line("  command: [sglang, serve]", ["[]", "['']", "[sglang, '']", "''", "null", "[1]",
                                          "{}"], "engine.command", "  command: {}"),
    *_line("    choices: [1, 2, 4]", [*_INT_BAD, "true", "'x'"], "knobs.spec_topk.choices",
           "    choices: [1, 2, {}]"),
    # the integer flags the shipped Spark space fixes (--max-running-requests and the decode
    # graph sizes are its max_running knob's now, derived by the engine)
    *[m for flag in ("--chunked-prefill-size", "--page-size", "--max-mamba-cache-size")
      for m in _line(f"  {flag}:", [*_INT_BAD, "true"], f"fixed_flags.{flag}")],
    *[m for flag in ("--attention-backend", "--reasoning-parser", "--context-length")
      for m in _line(f"  {flag}:", [".nan", ".inf", "-.inf", "[.nan]"], f"fixed_flags.{flag}")],
    *_line("    default: 3", ["9" * 400, "-" + "9" * 400, "1.5", ".nan", "6", "0"],
           "knobs.spec_steps.default", "    default: {}"),     # an int knob in [1, 5]
    *_line("  mem_fraction: 0.68", ["9" * 400, ".nan", "0.75", "''"], "baseline.mem_fraction",
           "  mem_fraction: {}"),
    *_line("  questions: 60", ["0", "-1", "100001", ".nan", "true", "''"],
           "workload.questions", "  questions: {}"),
    *_line("  temperature: 0.6", ["-1", ".nan", ".inf", "11"], "workload.temperature",
           "  temperature: {}"),
    *_line("  top_k: 29", ["0", "-2", "1" + "0" * 30, "1048577", "1.5", "true"],
           "workload.top_k", "  top_k: {}"),                  # issue 34 item 4, finding 7
    *_line("    low: 0.55", ["-0.5", "0", "-1"], "knobs.mem_fraction.low", "    low: {}"),
    *_line("    high: 0.70", ["1.5"], "knobs.mem_fraction.high", "    high: {}"),
    *_line("    choices: [1, 2, 4]", ["0", "-1"], "knobs.spec_topk.choices",
           "    choices: [{}, 1, 2, 4]"),
    *_line("  top_p: 0.95", ["0", "1.5", ".nan", "-.inf"], "workload.top_p", "  top_p: {}"),
    *_line("  concurrency: 1", ["0", "-4", "5000", "1.5"], "workload.concurrency",
           "  concurrency: {}"),
    *_line("  max_tokens: 2048", ["0", "-5", ".inf", "2000000"], "workload.max_tokens",
           "  max_tokens: {}"),
    *_line("  accept_length_floor: 1.2", ["-1", ".nan", "65", ".inf"],
           "gate.accept_length_floor", "  accept_length_floor: {}"),
    *_line("  mcnemar_alpha: 0.05", ["0", "1", ".nan", "-0.5"], "gate.mcnemar_alpha",
           "  mcnemar_alpha: {}"),
]


def must_refuse_text(base: str, prefix: str, replacement: str) -> str:
    """``base`` with its first line starting with ``prefix`` replaced by ``replacement``."""
    lines = base.splitlines()
    i = next(k for k, ln in enumerate(lines) if ln.startswith(prefix))
    lines[i] = replacement
    return "\n".join(lines) + "\n"


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
    _fixed_sets(engine)
    bomb = SNIPPETS[0] * 1 + "c: &c [*b, *b, *b, *b, *b, *b, *b, *b]\n" * 1
    t0 = time.perf_counter()
    try:
        parse_space(bomb, file="bomb.yaml")
    except UserError as exc:
        print(f"alias bomb: refused in {(time.perf_counter() - t0) * 1000:.1f} ms ({exc})")


def _answer(engine: object, text: str, file: str) -> tuple[str, float]:
    """("valid" | the refusal | "TRACEBACK ..." | "over 5 s", seconds) for one file."""
    t0 = time.perf_counter()
    signal.alarm(5)
    try:
        engine.validate_space(parse_space(text, file=file))  # type: ignore[attr-defined]
        answer = "valid"
    except UserError as exc:
        answer = str(exc)
    except _Slow:
        answer = "over 5 s"
    except Exception:
        answer = "TRACEBACK " + traceback.format_exc().splitlines()[-1]
    finally:
        signal.alarm(0)
    return answer, time.perf_counter() - t0


def _fixed_sets(engine: object) -> None:
    for n, cycle in ((1500, False), (5000, False), (5000, True)):
        answer, took = _answer(engine, chain_space(n, cycle=cycle), f"chain-{n}.yaml")
        print(f"child-first chain of {n:,} conditions{' (a cycle)' if cycle else ''}: "
              f"{answer[:160]} in {took * 1000:.0f} ms")
    base = SPACES[0].read_text()
    counts = {"refused, key located": 0, "refused elsewhere": 0, "accepted": 0,
              "traceback": 0, "over 5 s": 0}
    slowest = 0.0
    for prefix, new, key in MUST_REFUSE:
        answer, took = _answer(engine, must_refuse_text(base, prefix, new), "mutant.yaml")
        slowest = max(slowest, took)
        kind = ("accepted" if answer == "valid" else "over 5 s" if answer == "over 5 s" else
                "traceback" if answer.startswith("TRACEBACK") else
                "refused, key located" if f": {key}" in answer and "\n" not in answer
                else "refused elsewhere")
        counts[kind] += 1
        if kind != "refused, key located":
            print(f"must-refuse {new.strip()!r} ({key}): {kind}: {answer[:160]}")
    print(f"{len(MUST_REFUSE)} must-refuse mutants of {SPACES[0].name}: " + ", ".join(
        f"{v} {k}" for k, v in counts.items()) + f"; slowest {slowest * 1000:.0f} ms")


if __name__ == "__main__":
    main()
