"""Synthetic: random token ids from the model's own vocabulary, fixed lengths, speed only.

Ids outside the vocabulary kill a real server (docs/real-sglang-h200.md), so the bound is
required (:mod:`tuner.workloads.vocab` finds it).
"""

from __future__ import annotations

import random

from tuner.workloads._base import Prepared
from tuner.workloads._base import Prompt
from tuner.workloads._base import Sampling
from tuner.workloads._base import Workload
from tuner.workloads.vocab import synthetic_id_range


class Synthetic(Workload):
    kind = "synthetic"
    needs_vocab = True

    def prepare(self) -> Prepared:
        w, vocab = self.settings, self.context.vocab_size
        if vocab is None:
            raise ValueError("the synthetic workload needs the model's vocabulary size")
        low, high = synthetic_id_range(vocab)
        rng = random.Random(f"synthetic-{w.seed}")
        sampling = Sampling(max_new_tokens=w.output_len, temperature=0.0, ignore_eos=True)

        def ids() -> tuple[int, ...]:
            return tuple(rng.randrange(low, high) for _ in range(w.input_len))

        return Prepared(
            warmup=[Prompt(f"warmup-{i}", sampling, token_ids=ids(), content="random")
                    for i in range(w.warmup_requests)],
            measured=[Prompt(f"synthetic-{i}", sampling, token_ids=ids(), content="random")
                      for i in range(w.questions)])
