"""GSM8K behaviour: recognise a few-shot GSM8K prompt and answer it like the model would.

Answers are chain-of-thought text of a realistic length (lognormal, median about 310
tokens) ending in a final number that is right with a probability set by the configuration.
Everything is a deterministic function of (question, numerics signature, seed), so two
trials can be compared question by question.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path
from statistics import NormalDist


FILLER = (
    "let me think about this carefully first the question asks how many we need to find "
    "each part and then combine them so start with what is given and work forward step by "
    "step checking every quantity along the way"
).split()
_CALC = re.compile(r"<<[^>]*>>")


def uniform(*parts: object) -> float:
    """A deterministic uniform in [0, 1) from the parts."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def count_tokens(text: str) -> int:
    """An approximate tokenizer: words and punctuation marks."""
    return max(1, math.ceil(len(re.findall(r"\w+|[^\w\s]", text)) * 1.05))


class Gsm8kOracle:
    """Looks GSM8K questions up in the split files under ``path`` (a directory or a file)."""

    def __init__(self, path: str | None) -> None:
        self.items: dict[str, tuple[int, str, str]] = {}
        if not path:
            return
        p = Path(path)
        files = [p] if p.is_file() else [p / "test.jsonl", p / "train.jsonl"]
        for f in files:
            if not f.is_file():
                continue
            with f.open(encoding="utf-8") as fh:
                for i, line in enumerate(fh):
                    try:
                        row = json.loads(line)
                    except json.JSONDecodeError:
                        continue
                    solution, _, final = row["answer"].rpartition("####")
                    key = " ".join(row["question"].split())
                    self.items.setdefault(key, (i, _CALC.sub("", solution).strip(),
                                                final.strip().replace(",", "")))

    def __len__(self) -> int:
        return len(self.items)

    def find(self, prompt: str) -> tuple[int, str, str] | None:
        """(index, reference reasoning, final answer) of the prompt's last question."""
        start = prompt.rfind("Question:")
        end = prompt.rfind("Answer:")
        if start < 0 or end < start:
            return None
        key = " ".join(prompt[start + len("Question:"):end].split())
        return self.items.get(key)


def is_correct(qid: object, signature: str, seed: int, accuracy: float, flip_rate: float
               ) -> bool:
    """Whether the model answers question ``qid`` right under numerics ``signature``.

    Each question has a fixed difficulty draw; a configuration redraws it with probability
    ``flip_rate`` (different numerics, different samples), so equal accuracies still differ
    on a few questions, as two real runs do.
    """
    u = uniform("u", qid, seed)
    if uniform("flip", qid, signature, seed) < flip_rate:
        u = uniform("v", qid, signature, seed)
    return u < accuracy


def output_length(qid: object, seed: int, median: float, sigma: float, signature: str
                  ) -> int:
    z = NormalDist().inv_cdf(min(max(uniform("len", qid, seed), 1e-9), 1 - 1e-9))
    jitter = NormalDist().inv_cdf(min(max(uniform("lj", qid, signature, seed), 1e-9),
                                      1 - 1e-9))
    return max(8, round(median * math.exp(sigma * z + 0.05 * jitter)))


def answer_tokens(reasoning: str, final: str, correct: bool, length: int, qid: object
                  ) -> list[str]:
    """Chain-of-thought words ending in ``The answer is N.``, ``length`` tokens long."""
    if not correct:
        try:
            value = float(final)
            delta = 1 + int(uniform("wrong", qid) * 9)
            wrong = value + delta if uniform("sign", qid) < 0.5 or value < 10 else value - delta
            final = str(int(wrong)) if wrong == int(wrong) else str(wrong)
        except ValueError:
            final = final + "1"
    tail = f"The answer is {final}.".split()
    body = reasoning.split()
    room = length - len(tail)
    if room < len(body):
        body = body[len(body) - max(room, 0):]
    filler = [FILLER[i % len(FILLER)] for i in range(max(0, room - len(body)))]
    return filler + body + tail
