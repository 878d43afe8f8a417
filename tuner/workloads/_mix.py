"""A mix of content classes in given shares (``workload.mix``): ``math`` (GSM8K, scored by
the final number), ``code`` (HumanEval, scored by its tests) and ``chat`` (not scored).
Its objective is each class's TPOT weighted by its share (:func:`tuner.trial.aggregate`),
so the pick is the fastest for that traffic; its accuracy is over every scored request
(each class's own in its per-class figures).

The measured requests are split by share (largest remainders) and interleaved so that any
first part of them holds the classes in about their shares (a search trial's first
questions, an early stop's judgement); the warm-up takes one prompt of each class in turn.
"""

from __future__ import annotations

import math

from tuner.errors import UserError
from tuner.space import Workload as WorkloadSettings
from tuner.workloads._base import Prepared
from tuner.workloads._base import Prompt
from tuner.workloads._base import Workload
from tuner.workloads._gsm8k import Gsm8k
from tuner.workloads._gsm8k import score_final_number
from tuner.workloads._prose_code import Code
from tuner.workloads._prose_code import chat_prompts
from tuner.workloads._prose_code import sample
from tuner.workloads._prose_code import score_code
from tuner.workloads._prose_code import score_code_all


def split(total: int, shares: dict[str, float]) -> dict[str, int]:
    """``total`` requests by share, largest remainders first; every class with a share gets
    at least one when ``total`` allows."""
    exact = {c: total * w for c, w in shares.items()}
    counts = {c: math.floor(x) for c, x in exact.items()}
    by_rest = sorted(shares, key=lambda c: (counts[c] - exact[c], list(shares).index(c)))
    for c in by_rest[:total - sum(counts.values())]:
        counts[c] += 1
    for c in shares:
        if counts[c] == 0 and total >= len(shares):
            donor = max(counts, key=lambda d: counts[d])
            counts[donor] -= 1
            counts[c] = 1
    return counts


def interleave(parts: dict[str, list[Prompt]], shares: dict[str, float]) -> list[Prompt]:
    """One list in which each class's running count stays close to its share (smooth
    weighted round robin)."""
    queues = {c: list(p) for c, p in parts.items() if p}
    credit = dict.fromkeys(queues, 0.0)
    out: list[Prompt] = []
    while queues:
        weight = {c: shares[c] for c in queues}
        total = sum(weight.values())
        for c in queues:
            credit[c] += weight[c]
        pick = max(queues, key=lambda c: (credit[c], -list(parts).index(c)))
        credit[pick] -= total
        out.append(queues[pick].pop(0))
        if not queues[pick]:
            del queues[pick], credit[pick]
    return out


class Mix(Workload):
    kind = "mix"

    @classmethod
    def scores(cls, settings: WorkloadSettings) -> bool:
        return bool({"math", "code"} & set(settings.shares()))

    def prepare(self) -> Prepared:
        shares = self.settings.shares()
        counts = split(self.settings.questions, shares)
        parts: dict[str, Prepared] = {}
        for c, n in counts.items():
            sub = self.settings.model_copy(update={"questions": max(n, 1), "kind": "gsm8k"
                                                   if c == "math" else c, "mix": None})
            if c == "math":
                if self.context.gsm8k is None:
                    raise UserError("this mix has math (GSM8K): pass --gsm8k DIR (a folder "
                                    "with test.jsonl and train.jsonl) or --gsm8k online")
                parts[c] = Gsm8k(sub, self.context).prepare()
            elif c == "code":
                parts[c] = Code(sub, self.context).prepare()
            else:
                parts[c] = sample(chat_prompts(), sub, c)
        measured = interleave({c: p.measured[:counts[c]] for c, p in parts.items()}, shares)
        warm_pool = interleave({c: p.warmup for c, p in parts.items()},
                               dict.fromkeys(parts, 1.0))
        return Prepared(warmup=warm_pool[:self.settings.warmup_requests], measured=measured)

    def score(self, prompt: Prompt, text: str) -> tuple[bool | None, str | None]:
        if prompt.content == "math":
            return score_final_number(prompt, text)
        if prompt.content == "code":
            return score_code(prompt, text)
        return None, None

    def score_all(self, items: list[tuple[Prompt, str]]
                  ) -> list[tuple[bool | None, str | None]]:
        out: list[tuple[bool | None, str | None]] = [self.score(p, t) if p.content != "code"
                                                     else (None, None) for p, t in items]
        code = [i for i, (p, _) in enumerate(items) if p.content == "code"]
        for i, got in zip(code, score_code_all([items[i] for i in code]), strict=True):
            out[i] = got
        return out
