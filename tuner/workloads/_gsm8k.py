"""GSM8K few-shot: speed and accuracy (exact match of the final number).

Few-shot exemplars come from the train split, never from the questions scored; the scored
subset and the warm-up questions are seeded (``workload.seed``).
"""

from __future__ import annotations

import random

from tuner.errors import UserError
from tuner.workloads import gsm8k as data
from tuner.workloads._base import Prepared
from tuner.workloads._base import Prompt
from tuner.workloads._base import Sampling
from tuner.workloads._base import Workload


class Gsm8k(Workload):
    kind = "gsm8k"
    scored = True

    def prepare(self) -> Prepared:
        w, source = self.settings, self.context.gsm8k
        if source is None:
            raise UserError("the GSM8K workload needs its data: pass --gsm8k DIR (a folder "
                            "with test.jsonl and train.jsonl) or --gsm8k online")
        test = data.load_split(source, "test")
        train = data.load_split(source, "train")
        prefix = data.few_shot_prefix(train, w.num_shots, w.seed)
        sampling = Sampling(max_new_tokens=w.max_tokens, temperature=w.temperature,
                            top_p=w.top_p, top_k=w.top_k, stop=("Question:",))
        shot_questions = {q.question for q in train if q.question in prefix}
        warm_pool = [p for p in train if p.question not in shot_questions]
        rng = random.Random(f"warmup-{w.seed}")
        warm = rng.sample(warm_pool, min(w.warmup_requests, len(warm_pool)))
        return Prepared(
            warmup=[Prompt(f"warmup-{p.index}", sampling, text=data.prompt(prefix, p),
                           content="math") for p in warm],
            measured=[Prompt(p.id, sampling, text=data.prompt(prefix, p), answer=p.answer,
                             content="math")
                      for p in data.subset(test, w.questions, w.seed)])

    def score(self, prompt: Prompt, text: str) -> tuple[bool | None, str | None]:
        return score_final_number(prompt, text)


def score_final_number(prompt: Prompt, text: str) -> tuple[bool, str | None]:
    """(correct, the final number) of a GSM8K completion against ``prompt.answer``."""
    answer = data.extract_final_number(text)
    return (answer is not None and answer == prompt.answer), answer
