"""Hardware and model profiles: data files under ``profiles/``, validated on load.

``TUNER_SIM_PROFILE_DIR`` adds a directory searched first (a calibrated twin written by
``tuner probe``, or a person's own machine).
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from typing import Annotated
from typing import Literal

import yaml
from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field
from pydantic import model_validator


_HERE = Path(__file__).parent / "profiles"


class _M(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _keyed(data: object, field: str, old: dict[str, str]) -> object:
    """``data`` (a profile section) with the fixed per-backend fields it held before issue
    35 (``old``: backend -> field) moved into its mapping ``field``; a backend the mapping
    already holds wins."""
    if not isinstance(data, dict) or not any(f in data for f in old.values()):
        return data
    rest = dict(data)
    moved = {backend: rest.pop(f) for backend, f in old.items() if f in rest}
    have = rest.get(field)
    return {**rest, field: {**moved, **have} if isinstance(have, dict) else moved}


class Efficiency(_M):
    """Achieved fraction of peak bandwidth per kernel family at decode shapes."""

    #: by MoE runner backend (SGLang's ``--moe-runner-backend`` names), any set of them
    moe: dict[str, float]
    #: a backend the profile does not list (``auto``, ``triton``, ...): ASSUMED, its
    #: source in the profile's comment (docs/simulator.md, "The derived twin")
    moe_default: float | None = None
    #: by MoE backend: the share its W4A8 mode (activations quantised on the fly: Humming's
    #: with ``SGLANG_HUMMING_INPUT_QUANT_CONFIG``) streams slower than W4A16; none listed:
    #: no penalty
    w4a8_penalty: dict[str, float] = {}
    dense_fp8: float
    #: dense weights at another precision (bf16, ...); absent: ``dense_fp8`` (ASSUMED: a
    #: batch-1 GEMV streams its weights at one efficiency whatever their dtype)
    dense: dict[str, float] = {}
    kv: float
    #: by the LM head's effective dtype: fp32 (BF16 weights, FP32 logits), bf16, fp8
    lm_head: dict[str, float]
    prefill_moe: float

    @model_validator(mode="before")
    @classmethod
    def _old_fields(cls, data: object) -> object:
        """Before issue 35 Humming's penalty was a field of its own."""
        return _keyed(data, "w4a8_penalty", {"humming": "humming_w4a8_penalty"})

    def moe_eff(self, backend: str) -> float:
        if backend in self.moe:
            return self.moe[backend]
        if self.moe_default is None:
            raise LookupError(f"the machine profile has no MoE efficiency for {backend!r} "
                              "and no moe_default")
        return self.moe_default

    def dense_eff(self, precision: str) -> float:
        return self.dense.get(precision, self.dense_fp8)


class JitBuild(_M):
    """A MoE backend's kernels compiled at its first launch on a machine (then cached)."""

    s_per_kernel: float
    kernels: int                    # per MoE shape set (gate_up, down) x activation dtype


class Startup(_M):
    process_s: float
    weight_load_gbs: float
    graph_capture_s: float
    #: by MoE backend: what its first launch compiles (Humming's JIT kernels)
    jit: dict[str, JitBuild] = {}

    @model_validator(mode="before")
    @classmethod
    def _old_fields(cls, data: object) -> object:
        """Before issue 35 Humming's build was two fields of its own."""
        old = {"s_per_kernel": "humming_jit_s_per_kernel", "kernels": "humming_kernels"}
        if not isinstance(data, dict) or not any(f in data for f in old.values()):
            return data
        rest = dict(data)
        build = {"humming": {k: rest.pop(f) for k, f in old.items() if f in rest}}
        have = rest.get("jit")
        return {**rest, "jit": {**build, **have} if isinstance(have, dict) else build}


class HostMemory(_M):
    """The host memory a unified-memory GPU allocates from (a GB10's), as the simulated
    machine's meminfo file shows it (tuner_sim.host)."""

    memory_gib: float            # MemTotal
    idle_used_gib: float         # what the OS and the rest hold at idle
    process_gib: float           # a server's own processes (Python, torch, tokenizer)
    workspace_gib: float         # activation workspace, taken at the first prefill
    #: with less than this free the machine wedges (the driver's rmapiLockAcquire)
    wedge_below_gib: float = 0.5


class DraftCosts(_M):
    """One speculative algorithm's fixed costs on this machine (``Machine.drafts``), machine
    milliseconds."""

    #: per draft forward (its launch, sampling; a NEXTN layer's, a block draft's)
    forward_ms: float
    #: per speculative round besides its forwards' bytes (tree build, accept, KV commit)
    round_ms: float
    #: a dense draft's prefill GEMMs' throughput, TFLOP/s; None: the target's
    #: ``prefill_tflops``
    prefill_tflops: float | None = None


#: The fixed fields a machine profile held before issue 35, by the algorithm they were
#: for: ``{algorithm: {DraftCosts field: old key}}`` (a user's old profile still loads).
_MACHINE_LEGACY = {
    "NEXTN": {"forward_ms": "draft_step_overhead_ms", "round_ms": "spec_round_overhead_ms"},
    "DSPARK": {"forward_ms": "dspark_draft_overhead_ms",
               "round_ms": "dspark_round_overhead_ms",
               "prefill_tflops": "draft_prefill_tflops"},
}


def _with_drafts(data: object, old: dict[str, dict[str, object]]) -> object:
    """``data`` (a profile's mapping) with ``old``'s entries added under ``drafts``, by
    algorithm; an entry ``drafts`` already holds wins."""
    have = data.get("drafts") if isinstance(data, dict) else None
    if not isinstance(data, dict) or not isinstance(have, dict | None):
        return data                     # pydantic says what is wrong with it
    drafts = dict(have or {})
    for algo, entry in old.items():
        drafts.setdefault(algo, entry)
    return {**data, "drafts": drafts}


class Machine(_M):
    id: str
    gpu: str
    compute_capability: tuple[int, int]
    memory_gib: float
    bandwidth_gbs: float
    prefill_tflops: float
    runtime_reserved_gib: float
    safe_mem_fraction_max: float
    efficiency: Efficiency
    step_overhead_ms: float
    #: each speculative algorithm's fixed costs, by its key (tuner_sim.speculative: NEXTN,
    #: DSPARK, ...); an algorithm the machine has none for is refused at start-up
    drafts: dict[str, DraftCosts] = {}
    prefill_overhead_ms: float
    startup: Startup
    #: Fixed cost per MoE layer per forward, by MoE backend (the kernels' launch and latency
    #: floor), as a GPU probe measures it; absent where the step overhead absorbs it.
    moe_layer_overhead_us: dict[str, float] = {}
    #: A prefill batch is slower by this share for each request already running (FIT to
    #: the GB10 cookbook's concurrency-16 TTFT; docs/simulator.md, "Load")
    prefill_slowdown_per_running: float = 0.0
    calibration: dict[str, object] | None = None
    #: unified memory: the GPU allocates from this host memory (None: memory of its own)
    host: HostMemory | None = None

    @model_validator(mode="before")
    @classmethod
    def _old_fields(cls, data: object) -> object:
        """A machine profile written before issue 35: its fixed NEXTN and DSPARK fields
        become ``drafts`` entries."""
        if not isinstance(data, dict):
            return data
        rest = dict(data)
        old = {algo: {f: rest.pop(key) for f, key in fields.items() if key in rest}
               for algo, fields in _MACHINE_LEGACY.items()}
        return _with_drafts(rest, {a: e for a, e in old.items() if e})


class MtpDraft(_M):
    """The checkpoint's own NEXTN (MTP) draft layer(s): a MoE decoder layer that shares the
    target's embedding and LM head (``kind: mtp``)."""

    kind: Literal["mtp"] = "mtp"
    weights_gb: float               # resident: its routed experts and the rest
    dense_active_gb: float          # read per draft forward besides the routed experts
    kv_bytes_per_token: int
    moe_layers: int = 1             # routed-expert layers one draft forward reads

    @property
    def resident_gb(self) -> float:
        return self.weights_gb

    @property
    def per_request_gb(self) -> float:
        return 0.0


class Gsm8kBehaviour(_M):
    accuracy: float
    output_tokens_median: float
    output_tokens_sigma: float
    numerics_flip_rate: float
    accuracy_delta_pp: dict[str, float]


class HumanEvalBehaviour(_M):
    """HumanEval pass@1 and reply length (``tuner_sim.humaneval``); the defaults are the
    ASSUMED figures of docs/simulator.md, for a profile that does not state its own."""

    accuracy: float = 0.85
    output_tokens_median: float = 220
    output_tokens_sigma: float = 0.5
    numerics_flip_rate: float = 0.03
    accuracy_delta_pp: dict[str, float] = {"humming_w4a8": -0.45, "lm_head_fp8": -0.05}


#: Content classes the simulator tells apart (tuner_sim.content): math reasoning, code, open
#: chat/prose, and random-token prompts (a benchmark's synthetic traffic).
CONTENT_CLASSES = ("math", "code", "chat", "random")


class AcceptanceClass(_M):
    """Per-position acceptance: depth i is accepted with probability first * decay**(i-1)
    given the earlier ones were; per request, ``first`` is Beta-distributed."""

    first: float
    decay: float
    concentration: float


class ModeAcceptance(_M):
    """One content class under sampling (temperature > 0) and greedy decoding."""

    sampled: AcceptanceClass
    greedy: AcceptanceClass


class AlgorithmAcceptance(_M):
    """One draft's acceptance, by content class."""

    math: ModeAcceptance
    code: ModeAcceptance
    chat: ModeAcceptance
    random: ModeAcceptance


class Acceptance(_M):
    topk_width_exponent: float
    #: by speculative algorithm (NEXTN: the checkpoint's MTP layer; DSPARK: a block draft)
    algorithms: dict[str, AlgorithmAcceptance]


class Overlap(_M):
    sampled: float
    greedy: float


class Overlaps(_M):
    """Routing overlap of tokens verified together, by content class and mode."""

    math: Overlap
    code: Overlap
    chat: Overlap
    random: Overlap


class BatchRouting(_M):
    """How a batch of requests routes (concurrency > 1): the share of one request's
    verify-token overlap that survives batching, and the overlap between requests (expert
    popularity). Both 0: independent routing, the model before load was calibrated."""

    cross_request_overlap: float = 0.0
    overlap_retained: float = 0.0


class DenseDraft(_M):
    """An external draft checkpoint of dense layers (``kind: dense``) sharing the target's
    embedding and LM head: DSPARK's block drafter, an EAGLE-3 head."""

    kind: Literal["dense"] = "dense"
    aliases: list[str]              # the draft paths' last parts that name it
    architecture: str
    block_size: int | None = None   # a block draft's gamma, as its config declares
    resident_gb: float              # its own layers (embedding and LM head are shared)
    dense_read_gb: float            # bytes read per draft forward, BF16
    kv_bytes_per_token: int         # its own KV cache, carved from the same pool
    params_b: float                 # of its own layers: prefill FLOPs
    per_request_gb: float = 0.0     # held per request row (max_running_requests rows)
    confidence_head: bool = False   # what a non-static ragged-verify mode needs


#: a speculative draft, by its ``kind``
Draft = Annotated[MtpDraft | DenseDraft, Field(discriminator="kind")]

#: The sections a model profile held before issue 35: old key -> (algorithm, draft kind).
_MODEL_LEGACY = {"nextn": ("NEXTN", "mtp"), "dspark": ("DSPARK", "dense")}


#: what a model profile is: calibrated to published figures, or derived from config.json
CALIBRATED, DERIVED = "calibrated", "DERIVED"


class Model(_M):
    """What the performance and memory models read of a model. A calibrated profile
    (``profiles/models/*.yaml``) states these; the derived twin (:mod:`tuner_sim.derive`)
    computes them from the checkpoint's ``config.json``."""

    id: str
    aliases: list[str]
    #: ``calibrated`` (a profile fitted to published figures) or ``DERIVED`` (from the
    #: checkpoint's config.json and the machine profile; docs/simulator.md)
    twin: str = CALIBRATED
    architecture: str
    model_type: str = ""
    served_model_name: str
    params_total_b: float
    params_active_b: float
    layers: int
    moe_layers: int
    mla_layers: int = 0
    routed_experts: int
    experts_per_token: int
    hidden_size: int
    moe_intermediate_size: int
    vocab_size: int
    context_length: int
    #: precision of each part of the checkpoint (experts, dense, lm_head, embedding)
    quantization: dict[str, str] = {}
    expert_bytes_per_param: float
    dense_active_gb: float
    embedding_gb: float
    lm_head_params_m: float
    lm_head_bytes_per_param: float = 2.0
    #: KV cache bytes per token of context (every full-attention layer), read each step
    kv_bytes_per_token: int
    #: sliding-window layers: bytes per token, over at most ``kv_window_tokens`` of context
    kv_window_bytes_per_token: int = 0
    kv_window_tokens: int = 0
    #: a fixed recurrent state per request (linear attention: KDA, GDN; Mamba)
    linear_state_gb_per_request: float = 0.0
    #: bytes of that state one decode step reads and writes per request (0: folded into
    #: the dense weights' fit, as in a calibrated profile)
    state_bytes_per_step: float = 0.0
    #: one position of the ReplaySSM spec ring, over every KDA layer (compact d/k records)
    linear_ring_bytes_per_position: int = 0
    #: prefill attention FLOPs per (new token, context token) pair, full-attention layers
    prefill_attn_flops_per_pair: float
    #: the same for sliding-window layers, over at most ``kv_window_tokens`` of context
    prefill_window_flops_per_pair: float = 0.0
    #: speculative drafts by algorithm (tuner_sim.speculative's keys: NEXTN for the
    #: checkpoint's MTP layer, DSPARK for a block drafter, ...)
    drafts: dict[str, Draft] = {}
    #: Qwen4-Exp's n-gram (PLE) tables: resident unless ``--ple-offload-embedding`` keeps
    #: them out of the GPU's pool (a file on the NVMe; pinned host memory, which a
    #: unified-memory machine counts all the same)
    ple_table_gb: float = 0.0
    #: weights resident but never read per text token (a vision tower)
    resident_extra_gb: float = 0.0
    #: per new prefill token, a cost the FLOP and byte model does not see (Qwen4-Exp: the
    #: n-gram rows gathered from the table file); 0 where none is known
    prefill_us_per_token: float = 0.0
    #: the same per token of a decode forward (every verify token counts; the draft's none)
    decode_us_per_token: float = 0.0
    gsm8k: Gsm8kBehaviour
    humaneval: HumanEvalBehaviour = HumanEvalBehaviour()
    acceptance: Acceptance
    routing_overlap: Overlaps
    batch_routing: BatchRouting = BatchRouting()

    @model_validator(mode="before")
    @classmethod
    def _old_fields(cls, data: object) -> object:
        """A model profile written before issue 35: its ``nextn`` and ``dspark`` sections
        become ``drafts`` entries (``nextn: null``: none)."""
        if not isinstance(data, dict):
            return data
        rest = dict(data)
        old = {algo: {"kind": kind, **section} for key, (algo, kind) in _MODEL_LEGACY.items()
               if isinstance(section := rest.pop(key, None), dict)}
        return _with_drafts(rest, old)

    @property
    def expert_bytes(self) -> float:
        """Bytes of one routed expert (gate, up and down projections) at its precision."""
        return 3 * self.hidden_size * self.moe_intermediate_size * self.expert_bytes_per_param

    @property
    def weights_gb(self) -> float:
        """Everything resident: all routed experts, dense weights, embedding, LM head (and
        any resident weights no token reads); the PLE tables apart (:attr:`ple_table_gb`)."""
        routed = self.moe_layers * self.routed_experts * self.expert_bytes / 1e9
        return routed + self.dense_active_gb + self.embedding_gb + (
            self.lm_head_params_m * self.lm_head_bytes_per_param * 1e-3) + (
            self.resident_extra_gb)


def _dirs() -> list[Path]:
    extra = os.environ.get("TUNER_SIM_PROFILE_DIR")
    return ([Path(extra)] if extra else []) + [_HERE]


@cache
def _read(kind: str, name: str) -> dict[str, object]:
    for d in _dirs():
        for path in (d / kind / f"{name}.yaml", d / f"{name}.yaml"):
            if path.is_file():
                data = yaml.safe_load(path.read_text())
                if isinstance(data, dict):
                    return data
    raise LookupError(name)


def machine_names() -> list[str]:
    return sorted({p.stem for d in _dirs() for p in (d / "machines").glob("*.yaml")})


def load_machine(name: str) -> Machine:
    try:
        return Machine.model_validate(_read("machines", name))
    except LookupError:
        raise LookupError(f"no machine profile {name!r} (have: "
                          f"{', '.join(machine_names())})") from None


def load_model_for_path(model_path: str) -> Model:
    """The model served for ``--model-path``: the calibrated profile whose id or alias
    matches the path's last part, else the twin DERIVED from the local checkpoint's
    ``config.json`` (the folder, or the file itself); LookupError when neither exists,
    ValueError (one line) when the config.json cannot be derived from."""
    stem = model_path.rstrip("/").split("/")[-1].lower()
    for d in _dirs():
        for path in sorted((d / "models").glob("*.yaml")):
            data = yaml.safe_load(path.read_text())
            names = [str(data.get("id", ""))] + [str(a) for a in data.get("aliases", [])]
            if stem in [n.lower() for n in names]:
                return Model.model_validate({**data, **_local_config(model_path)})
    from tuner_sim.derive import config_path
    from tuner_sim.derive import derive_model

    found = config_path(model_path)
    if found is None:
        raise LookupError(model_path)
    return derive_model(found, derived_defaults())


def derived_defaults() -> dict[str, object]:
    """What a derived twin cannot read from config.json and no machine profile holds:
    acceptance, routing overlap and answer behaviour, ASSUMED
    (profiles/defaults/derived-model.yaml)."""
    data = yaml.safe_load((_HERE / "defaults" / "derived-model.yaml").read_text())
    assert isinstance(data, dict)
    return data


def _local_config(model_path: str) -> dict[str, int]:
    """What a local model folder's ``config.json`` overrides (as SGLang reads the folder):
    the vocabulary size, so tests can serve a model whose vocabulary is small."""
    import json
    from pathlib import Path

    try:
        cfg = json.loads((Path(model_path) / "config.json").read_text())
    except (OSError, ValueError):
        return {}
    vocab = cfg.get("vocab_size") if isinstance(cfg, dict) else None
    return {"vocab_size": vocab} if isinstance(vocab, int) and vocab > 0 else {}
