"""GSM8K: loading the splits, few-shot prompts, final-number scoring.

Exemplars come from the train split, never from the scored questions; the scored subset is
a fixed, seeded sample of the test split, so every trial of a study sees the same
questions in the same order (paired comparisons).
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from decimal import Decimal
from decimal import InvalidOperation
from pathlib import Path

from tuner.errors import UserError


PUBLIC_URL = "https://raw.githubusercontent.com/openai/grade-school-math/master/grade_school_math/data/{split}.jsonl"
_NUMBER = re.compile(r"-?\d+(?:,\d{3})*(?:\.\d+)?|-?\.\d+")


@dataclass(frozen=True)
class Problem:
    index: int          # line number in its split file
    question: str
    solution: str       # the reference answer text, "#### N" included
    answer: str         # the reference final number, normalised

    @property
    def id(self) -> str:
        return f"test-{self.index}"


def normalise_number(text: str) -> str | None:
    """``"$1,234.50"`` -> ``"1234.5"``; None when it is not a number."""
    cleaned = text.strip().replace(",", "").replace("$", "").rstrip(".")
    try:
        value = Decimal(cleaned)
    except InvalidOperation:
        return None
    if value == value.to_integral_value():
        return str(value.quantize(Decimal(1)))
    return format(value.normalize(), "f")


def extract_final_number(completion: str) -> str | None:
    """The answer a completion commits to: after the last ``####`` if present, else the last
    number in the text. Normalised, or None when there is no number."""
    if "####" in completion:
        tail = completion.rsplit("####", 1)[1]
        found = _NUMBER.findall(tail)
        if found:
            return normalise_number(found[0])
    found = _NUMBER.findall(completion)
    return normalise_number(found[-1]) if found else None


def is_correct(completion: str, problem: Problem) -> bool:
    got = extract_final_number(completion)
    return got is not None and got == problem.answer


def _fetch(split: str, cache: Path) -> Path:
    import httpx

    target = cache / f"{split}.jsonl"
    if target.is_file():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    try:
        resp = httpx.get(PUBLIC_URL.format(split=split), timeout=60, follow_redirects=True)
        resp.raise_for_status()
    except httpx.HTTPError as exc:
        raise UserError(f"could not download GSM8K {split} split ({exc.__class__.__name__}); "
                        f"pass --gsm8k DIR with test.jsonl and train.jsonl") from None
    target.write_bytes(resp.content)
    return target


def split_file(source: str | Path, split: str) -> Path:
    """``source`` is a directory holding ``<split>.jsonl``, or ``online`` to fetch the
    public file into ``trials/.cache/gsm8k``."""
    if str(source) == "online":
        return _fetch(split, Path("trials/.cache/gsm8k"))
    path = Path(source)
    if path.is_file():      # one file cannot give both splits: the shots would be test items
        raise UserError(f"--gsm8k {source}: expected a folder holding test.jsonl and "
                        "train.jsonl (few-shot exemplars come from train), not a file")
    candidate = path / f"{split}.jsonl"
    if not candidate.is_file():
        raise UserError(f"GSM8K {split} split not found at {candidate}; pass --gsm8k DIR "
                        f"(a folder with test.jsonl and train.jsonl) or --gsm8k online")
    return candidate


def load_split(source: str | Path, split: str) -> list[Problem]:
    path = split_file(source, split)
    out = []
    with path.open(encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                answer = normalise_number(row["answer"].rsplit("####", 1)[1])
            except (json.JSONDecodeError, KeyError, IndexError):
                raise UserError(f"{path}:{i + 1}: not a GSM8K record (question/answer with "
                                f"'#### N')") from None
            if answer is None:
                raise UserError(f"{path}:{i + 1}: the final answer is not a number")
            out.append(Problem(i, row["question"], row["answer"], answer))
    if not out:
        raise UserError(f"{path}: no GSM8K records")
    return out


def subset(problems: list[Problem], n: int, seed: int) -> list[Problem]:
    """A fixed, seeded sample of ``n`` problems (all of them when n >= len)."""
    if n >= len(problems):
        return list(problems)
    rng = random.Random(f"gsm8k-subset-{seed}")
    return sorted(rng.sample(problems, n), key=lambda p: p.index)


def few_shot_prefix(train: list[Problem], k: int, seed: int) -> str:
    """``k`` worked examples from the train split, as ``Question: ...\\nAnswer: ...``."""
    rng = random.Random(f"gsm8k-shots-{seed}")
    shots = rng.sample(train, min(k, len(train)))
    return "".join(f"Question: {p.question}\nAnswer: {p.solution}\n\n" for p in shots)


def prompt(prefix: str, problem: Problem) -> str:
    return f"{prefix}Question: {problem.question}\nAnswer:"
