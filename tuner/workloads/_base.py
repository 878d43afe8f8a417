"""The workload contract: which requests a trial sends, and how a completion is scored.

A :class:`Workload` turns the space's workload settings (:class:`tuner.space.Workload`) into
engine-neutral :class:`Prompt` s: text or token ids plus sampling settings. The engine
adapter turns a prompt into its own request (SGLang's ``/generate`` body) and its stream
into a completion; the workload then scores the completion's text. Warm-up prompts are
never scored or timed.

Implementations are small private modules registered in :data:`tuner.workloads.KINDS`:
``gsm8k`` (few-shot GSM8K, the ``math`` class, speed and accuracy), ``code`` (HumanEval
prompts, speed and pass@1: each completion's tests run in a sandbox), ``chat`` (built-in
prose requests), ``mix`` (several classes in given shares),
``synthetic`` (random token ids from the model's vocabulary, speed only) and ``jsonl`` (a
user's own prompts file, each line optionally naming its class, speed only). Every prompt
carries its content class. Adding one is one module and one registry line
(docs/architecture.md).
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from dataclasses import field
from typing import ClassVar

from tuner.space import Workload as WorkloadSettings


@dataclass(frozen=True)
class Sampling:
    """Generation settings of one request (engine-neutral)."""

    max_new_tokens: int
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = -1
    stop: tuple[str, ...] = ()
    ignore_eos: bool = False


@dataclass(frozen=True)
class Prompt:
    """One request: ``text`` or ``token_ids`` (exactly one), its sampling settings, and the
    reference answer when the workload scores completions."""

    id: str
    sampling: Sampling
    text: str | None = None
    token_ids: tuple[int, ...] | None = None
    answer: str | None = None
    #: the content class (``math``, ``code``, ``chat``, ``random``, or a user's label): what
    #: per-class TPOT and a mix's weighted TPOT group by
    content: str | None = None


@dataclass(frozen=True)
class Prepared:
    """The prompts of one trial: warm-up (excluded from every figure), then measured."""

    warmup: list[Prompt] = field(default_factory=list)
    measured: list[Prompt] = field(default_factory=list)


@dataclass(frozen=True)
class Context:
    """What a workload may need from outside the space file."""

    gsm8k: str | None = None          # GSM8K folder, or "online"
    vocab_size: int | None = None     # token ids the model accepts, [0, vocab_size)


class Workload(abc.ABC):
    """Contract: :meth:`prepare` is deterministic for the same settings and context (the
    seed decides everything), builds every prompt before the first request is sent (a bad
    input fails before a server starts), and raises :class:`~tuner.errors.UserError` for
    missing data. :meth:`score` is deterministic and changes nothing outside it (a code
    completion's tests run in a sandbox)."""

    #: the ``workload.kind`` this implements
    kind: ClassVar[str]
    #: whether completions are scored (the study then has an accuracy objective)
    scored: ClassVar[bool] = False
    #: whether it sends token ids and so needs ``Context.vocab_size``
    needs_vocab: ClassVar[bool] = False

    @classmethod
    def scores(cls, settings: WorkloadSettings) -> bool:
        """Whether these settings give scored prompts (an accuracy objective)."""
        return cls.scored

    def __init__(self, settings: WorkloadSettings, context: Context) -> None:
        self.settings = settings
        self.context = context

    @abc.abstractmethod
    def prepare(self) -> Prepared:
        """The warm-up and measured prompts."""

    def score(self, prompt: Prompt, text: str) -> tuple[bool | None, str | None]:
        """(correct, extracted answer) of a completion; (None, None) when not scored."""
        return None, None

    def score_all(self, items: list[tuple[Prompt, str]]
                  ) -> list[tuple[bool | None, str | None]]:
        """:meth:`score` of each (prompt, completion), in order: what a trial calls once its
        requests are sent (a workload whose scoring runs programs runs several at once)."""
        return [self.score(p, t) for p, t in items]
