"""One request as the simulated scheduler holds it."""

from __future__ import annotations

import math
import random
import threading
import time
from dataclasses import dataclass
from dataclasses import field
from typing import Any


@dataclass
class SimRequest:
    rid: str
    prompt_tokens: int
    cached_tokens: int
    max_new_tokens: int
    kind: str                       # "greedy" | "sampled"
    tokens: list[str]               # what the model would say, up to its natural end
    ignore_eos: bool
    first_rate: float               # this request's depth-1 acceptance rate
    rng: random.Random
    content: str = "math"           # content class (tuner_sim.content): acceptance, routing
    joiner: str = " "               # between tokens: "" when each carries its own spacing
    t_submit: float = field(default_factory=time.monotonic)
    emitted: int = 0
    verify_ct: int = 0
    correct_drafts: int = 0
    proposed_drafts: int = 0
    hist: list[int] = field(default_factory=list)
    finished: bool = False
    finish_reason: dict[str, Any] | None = None
    t_first: float | None = None
    t_done: float | None = None
    aborted: str | None = None
    stream: bool = False            # a streaming client: the handler sets first_out
    first_out: threading.Event = field(default_factory=threading.Event)

    @property
    def limit(self) -> int:
        natural = math.inf if self.ignore_eos else len(self.tokens)
        return int(min(self.max_new_tokens, natural))

    def token(self, i: int) -> str:
        return self.tokens[i % len(self.tokens)] if self.tokens else "the"
