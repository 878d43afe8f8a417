"""The search-space file schema (pydantic models).

One file describes one model on one machine: metadata, the baseline configuration, the knobs
the search may turn, the flags and env vars every launch carries, and per-machine limits.
``docs/search-spaces.md`` documents every key. Cross-field rules (conditions, domains, limits)
live in :mod:`tuner.space._validate`; this module only checks shapes and types.
"""

from __future__ import annotations

from typing import Annotated
from typing import Any
from typing import Literal

from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field
from pydantic import field_validator
from pydantic import model_validator


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, allow_inf_nan=False)


class DraftModel(_Strict):
    """An external draft model a speculative algorithm loads (DSPARK, DFLASH): a model fact,
    written once under ``model.drafts`` and sent as ``{model.drafts.NAME}``."""

    path: str = Field(min_length=1, description="what --speculative-draft-model-path "
                      "receives (HF id or local directory)")
    architecture: str | None = None
    block_size: int | None = Field(
        default=None, gt=0, le=1024, description="the block size the draft checkpoint "
        "declares (DSPARK: gamma, the drafted tokens per round): what the engine resolves "
        "when no flag sets it")
    weights_gib: float | None = Field(
        default=None, gt=0, description="GiB the draft's own weights hold once loaded (the "
        "unified-memory guard's prediction, docs/trials.md)")
    facts: dict[str, Any] = Field(default_factory=dict, description="free-form metadata")


class ModelMeta(_Strict):
    """The served model."""

    id: str = Field(min_length=1, description="model profile name (simulator, probe), "
                    "e.g. ling-3.0-flash-fp4")
    path: str = Field(min_length=1, description="what --model-path receives (HF id or "
                      "local directory)")
    architecture: str | None = None
    vocab_size: int | None = Field(
        default=None, gt=0, description="token ids the model accepts, [0, vocab_size): "
        "bounds the synthetic workload when model.path is not a local folder")
    weights_gib: float | None = Field(
        default=None, gt=0, description="GiB the model's weights hold once loaded: the "
        "unified-memory guard's floor when little memory is free (docs/trials.md)")
    facts: dict[str, Any] = Field(default_factory=dict, description="free-form metadata")
    drafts: dict[str, DraftModel] = Field(
        default_factory=dict, description="external draft models by name (a speculative "
        "algorithm's, e.g. DSPARK); a flag value writes {model.drafts.NAME}")


class MachineMeta(_Strict):
    """The machine the space is tuned for."""

    id: str = Field(min_length=1, description="machine profile name, e.g. dgx-spark")
    gpu: str
    compute_capability: str | None = None
    gpus: int = Field(default=1, ge=1, le=65_536)
    memory_gib: float | None = Field(default=None, gt=0)
    bandwidth_gbs: float | None = Field(default=None, gt=0)
    #: The GPU allocates from the host's memory (a GB10): launches are guarded against
    #: exhausting it (docs/trials.md). None: decided from the GPU's name and the host.
    unified_memory: bool | None = None
    #: GiB of host memory the guard keeps free (None: 5% of the host's, at least 4)
    memory_margin_gib: float | None = Field(default=None, gt=0, le=4096)


class EngineMeta(_Strict):
    """The engine the space was written for."""

    name: str = Field(default="sglang", description="an engine adapter's name "
                      "(tuner.engines.space_engines())")
    version: str = "0.5.23"
    command: list[Annotated[str, Field(min_length=1)]] = Field(
        default_factory=lambda: ["sglang", "serve"], min_length=1,
        description="the entry point the flags follow (never empty)")
    extra_flags: list[str] = Field(
        default_factory=list, description="flags of a fork that stock SGLang lacks"
    )


class Limit(_Strict):
    """A per-machine bound on a flag's value."""

    min: float | None = None
    max: float | None = None
    reason: str | None = None


class Contribution(_Strict):
    """What one knob value adds to the launch: flags (with values) and env vars."""

    flags: dict[str, Any] = Field(default_factory=dict)
    env: dict[str, str] = Field(default_factory=dict)


class Evidence(_Strict):
    """What proves a knob value took effect.

    ``server_info`` maps a ``/server_info`` field (dotted for nested) to the expected value,
    where the string ``"{value}"`` stands for the knob's value. ``log`` lists regular
    expressions that must each match a server log line; ``log_absent`` ones that must not.
    ``none`` says why nothing observable proves the value (the report then says so).
    ``note`` qualifies weak evidence (e.g. a log line printed before the effect happens).
    """

    server_info: dict[str, Any] = Field(default_factory=dict)
    log: list[str] = Field(default_factory=list)
    log_absent: list[str] = Field(default_factory=list)
    none: str | None = None
    note: str | None = None


class Knob(_Strict):
    """One searchable setting."""

    type: Literal["categorical", "int", "float", "bool"]
    help: str | None = None
    #: ``speed``: searched for TPOT. ``capacity``: decides only whether a launch fits and how
    #: large the KV pool is (memory fraction): held at the baseline's value while the search
    #: measures speed, never a reason for another speed trial (docs/search-spaces.md).
    role: Literal["speed", "capacity"] = "speed"
    #: The knob does not change what the model answers (speculative decoding, whose drafts
    #: the target model verifies): accuracy depends only on the other speed knobs, so an
    #: accuracy verdict on the final sample holds for every configuration that shares
    #: their values (docs/search-spaces.md). Capacity knobs are lossless too.
    lossless: bool = False
    #: The values that compute below the checkpoint's own precision (an activation or LM
    #: head quantized online): what the finals count against a configuration when two
    #: finalists are within noise (docs/search-spaces.md). Unset: any value other than the
    #: baseline's counts; ``[]``: no value does (every kernel keeps the precision).
    lossy_values: list[Any] | None = None
    choices: list[Any] | None = None
    low: float | None = None
    high: float | None = None
    step: float | None = None
    default: Any = None
    when: dict[str, Any] = Field(default_factory=dict)
    flag: str | None = None
    env: str | None = None
    values: dict[str, Contribution] | None = None
    evidence: Evidence | None = None
    evidence_by_value: dict[str, Evidence] | None = None


class Gate(_Strict):
    """Feasibility rules applied to every measured trial."""

    accept_length_floor: float = Field(default=1.2, ge=0.0, le=64.0)
    max_accuracy_drop_pp: float = Field(default=1.0, ge=0.0, le=100.0)
    mcnemar_alpha: float = Field(default=0.05, gt=0.0, lt=1.0)


class Sla(_Strict):
    """A latency objective a request meets or misses (docs/trials.md, "Load regimes")."""

    p95_tpot_ms: float | None = Field(default=None, gt=0.0, allow_inf_nan=False)
    p95_ttft_s: float | None = Field(default=None, gt=0.0, allow_inf_nan=False)

    def met_by(self, tpot_ms: float | None, ttft_s: float) -> bool:
        """Whether one request meets every bound given (a request of one token has no
        TPOT and meets the TPOT bound)."""
        return ((self.p95_tpot_ms is None or tpot_ms is None or tpot_ms <= self.p95_tpot_ms)
                and (self.p95_ttft_s is None or ttft_s <= self.p95_ttft_s))


class Regime(_Strict):
    """A load a trial also measures on the same launch, after its own workload: the
    workload's prompts sent ``concurrency`` at a time, ``requests`` of them (default:
    4 x concurrency, the prompts reused in order when there are fewer)."""

    name: str = Field(min_length=1, max_length=40, pattern=r"^[A-Za-z0-9][A-Za-z0-9 _.-]*$")
    concurrency: int = Field(ge=1, le=4096)
    requests: int | None = Field(default=None, ge=1, le=100_000)
    sla: Sla | None = None

    @model_validator(mode="after")
    def _enough_requests(self) -> Regime:
        if self.requests is not None and self.requests < self.concurrency:
            raise ValueError(f"regime {self.name!r}: 'requests' ({self.requests}) must be at "
                             f"least its concurrency ({self.concurrency})")
        return self

    @property
    def total(self) -> int:
        return self.requests if self.requests is not None else 4 * self.concurrency


#: Content classes a workload's prompts belong to (speculation's gain depends on them):
#: GSM8K is ``math``, the built-in HumanEval set ``code``, the built-in prose set ``chat``;
#: a synthetic workload's random token ids are ``random``.
CONTENT_CLASSES = ("math", "code", "chat")


def shares_problem(mix: dict[Any, float]) -> str | None:
    """Why a mix's shares are not what its objective weights by, or None: they must add up
    to 1 (once renormalised in silence, so ``code=0.6,chat=0.6`` ran as half and half).
    Checked where a mix is written (a space file, ``--mix``), not when a recorded one is
    read back."""
    import math

    total = sum(mix.values())
    if math.isclose(total, 1.0, rel_tol=0.0, abs_tol=1e-9):
        return None
    return (f"the shares add up to {total:g}, not 1 (each is its class's share of the "
            "requests and of the objective)")


class Workload(_Strict):
    """The deployment-shaped workload trials are measured on."""

    kind: Literal["gsm8k", "synthetic", "jsonl", "code", "chat", "mix"] = "gsm8k"
    #: the prompts file of the ``jsonl`` kind (one ``{"prompt": ...}`` object a line)
    path: str | None = None
    #: ``mix``: the share of each content class; the objective is the TPOT of each class
    #: weighted by these shares (docs/trials.md, "Content-aware workloads")
    mix: dict[Literal["math", "code", "chat"], float] | None = None
    #: ``jsonl``: the class of a line that does not name its own (``"class": ...``)
    content: str | None = Field(default=None, min_length=1, max_length=40)
    questions: int = Field(default=100, ge=1, le=100_000)
    num_shots: int = Field(default=5, ge=0, le=64)
    max_tokens: int = Field(default=2048, ge=1, le=1_048_576)
    temperature: float = Field(default=0.6, ge=0.0, le=10.0)
    top_p: float = Field(default=0.95, gt=0.0, le=1.0)
    #: sent with every request: -1 (every token) or 1 up to a vocabulary's size (SGLang
    #: refuses 0; a larger integer than its tensors hold once reached the server)
    top_k: int = Field(default=29, ge=-1, le=1_048_576)
    seed: int = 0
    warmup_requests: int = Field(default=2, ge=0, le=10_000)
    concurrency: int = Field(default=1, ge=1, le=4096)
    input_len: int = Field(default=1024, ge=1, le=1_048_576)
    output_len: int = Field(default=256, ge=1, le=1_048_576)
    #: loads measured on the same launch after the workload itself (a load ladder)
    regimes: list[Regime] = Field(default_factory=list, max_length=16)

    @property
    def peak_users(self) -> int:
        """The most requests this workload, or one of its regimes, keeps in flight."""
        return max([self.concurrency, *(r.concurrency for r in self.regimes)])

    @model_validator(mode="after")
    def _mix_matches_kind(self) -> Workload:
        if self.kind == "mix":
            if not self.mix:
                raise ValueError("a 'mix' workload needs 'mix': the share of each class, "
                                 "e.g. {code: 0.6, chat: 0.4}")
            if any(not (w >= 0) or w == float("inf") for w in self.mix.values()):
                raise ValueError("mix shares must be finite and >= 0")
            if sum(self.mix.values()) <= 0:
                raise ValueError("mix shares must add up to more than 0")
        elif self.mix is not None:
            raise ValueError(f"'mix' is for the 'mix' kind, not {self.kind!r}")
        return self

    @field_validator("top_k")
    @classmethod
    def _top_k_not_zero(cls, value: int) -> int:
        if value == 0:
            raise ValueError("top_k 0 samples nothing: -1 for every token, or at least 1")
        return value

    @field_validator("content")
    @classmethod
    def _printable_content(cls, value: str | None) -> str | None:
        if value is not None and not value.isprintable():
            raise ValueError("a class name is one printed word (no newline or control "
                             "character), like code or chat")
        return value

    @model_validator(mode="after")
    def _regime_names_differ(self) -> Workload:
        names = [r.name for r in self.regimes]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"regime names must differ: {', '.join(map(repr, twice))}")
        return self

    @classmethod
    def from_record(cls, record: Any) -> Workload | None:
        """The workload a study or a profile recorded (its ``model_dump``); None when
        nothing, or something this version cannot read, was recorded."""
        from pydantic import ValidationError

        if not record:
            return None
        try:
            return cls.model_validate(record)
        except ValidationError:
            return None

    def shares(self) -> dict[str, float]:
        """The mix's shares normalised to 1, in class order, zero shares left out (empty
        for a single-class workload)."""
        if self.kind != "mix" or not self.mix:
            return {}
        total = sum(self.mix.values())
        return {c: self.mix[c] / total for c in CONTENT_CLASSES  # type: ignore[index]
                if self.mix.get(c, 0.0) > 0}  # type: ignore[call-overload]

    def describe_content(self) -> str:
        """``math (GSM8K)``, ``mix code 0.60 / chat 0.40``...: what the workload was."""
        if self.kind == "mix":
            return "mix " + " / ".join(f"{c} {w:.2f}" for c, w in self.shares().items())
        if self.kind == "jsonl":
            return f"your prompts ({self.content or 'classes per line'})"
        return {"gsm8k": "math (GSM8K)", "code": "code (HumanEval)", "chat": "chat (prose)",
                "synthetic": "random token ids"}[self.kind]


class SpaceFile(_Strict):
    """A whole search-space file."""

    schema_version: Literal[1]
    name: str = Field(min_length=1)
    description: str | None = None
    model: ModelMeta
    machine: MachineMeta
    engine: EngineMeta = Field(default_factory=EngineMeta)
    limits: dict[str, Limit] = Field(default_factory=dict)
    fixed_flags: dict[str, Any] = Field(default_factory=dict)
    fixed_env: dict[str, str] = Field(default_factory=dict)
    knobs: dict[str, Knob]
    baseline: dict[str, Any]
    gate: Gate = Field(default_factory=Gate)
    workload: Workload = Field(default_factory=Workload)

    @field_validator("schema_version", mode="before")
    @classmethod
    def _not_a_bool(cls, value: Any) -> Any:
        if isinstance(value, bool):         # true == 1 to Python, not to a reader
            raise ValueError("expected the integer 1, not a boolean")
        return value
