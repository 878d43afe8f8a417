"""What kind of text a prompt asks for, as the simulated draft experiences it.

Speculative acceptance depends on content: structured text (math, code) accepts far more
draft tokens per round than open-ended prose, and a benchmark's random-token prompts behave
apart again (docs/simulator.md). A real engine never hears a class; neither does the
simulator: it reads the prompt, the way the draft's hit rate follows the text.
"""

from __future__ import annotations

import re


CODE_MARKERS = re.compile(
    r"```|\bdef \w+\(|\bclass \w+[:(]|\bimport \w+|#include\b|\bfunction \w+\(|"
    r"\breturn\b.*;|=>|\bpublic static\b|\bSELECT\b.+\bFROM\b")
MATH_MARKERS = re.compile(r"(?m)^Question: .*\nAnswer:|\\frac|\\boxed|\bsolve for\b", re.I)


def classify(text: str | None, *, token_ids: bool = False, gsm8k_hit: bool = False) -> str:
    """``random`` for token-id prompts, ``math`` for GSM8K and worked problems, ``code`` for
    programs, ``chat`` for everything else."""
    if token_ids:
        return "random"
    if gsm8k_hit:
        return "math"
    tail = (text or "")[-4000:]
    if MATH_MARKERS.search(tail):
        return "math"
    if CODE_MARKERS.search(tail):
        return "code"
    return "chat"
