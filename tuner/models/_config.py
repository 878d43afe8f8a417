"""A checkpoint's ``config.json`` read into a typed :class:`ModelShape`.

Each architecture ``tuner init`` understands has one reader below (the keys its Hugging
Face config uses, as SGLang 0.5.23's model classes read them); anything else is refused
with one located line naming what was not understood, never guessed. A reader takes the
keys it needs and refuses a missing or mistyped one (``FILE: hidden_size: missing``).

What is read: layers, hidden size, vocabulary, the routed and shared experts and their
sizes, the attention kind (GQA or MLA) and any linear-attention family (KDA, GDN) with how
many layers attend in full, the MTP/NEXTN layers the checkpoint carries and where that
count came from, and the quantization (see :func:`_quantization`). Qwen3.8-Flash-Next
(``Qwen4ExpForConditionalGeneration``) adds its Qwen Sparse Attention indexer, its
hyper-connection streams, its per-layer n-gram embedding (PLE) tables and its vision tower
(:func:`_qwen4_exp`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any
from typing import Literal

from pydantic import BaseModel
from pydantic import ConfigDict

from tuner.errors import UserError
from tuner.errors import printable


#: Quantization layouts the tool knows (each maps to its MoE runner backends in the
#: engine adapter): BF16 weights; FP8 with 128x128 block scales; FP8 block with MXFP4
#: routed experts (``routed_experts_quant_method: mxfp4``, SGLang 0.5.23
#: ``configs/model_config.py``); MXFP4 experts (``quant_method: mxfp4``, gpt-oss).
#: ModelOpt NVFP4 routed experts with the rest in the model dtype (``quant_method:
#: modelopt``, ``quant_algo: NVFP4``; Qwen3.8-Flash-Next's RadixArk export, which SGLang
#: loads as ``--quantization modelopt_fp4``).
Quantization = Literal["bf16", "fp8_block", "fp8_block_mxfp4_experts", "mxfp4",
                       "modelopt_nvfp4"]


class ModelShape(BaseModel):
    """What one checkpoint is, as far as choosing its launch knobs needs."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: str                       # the config.json read
    folder: str                       # the checkpoint folder (--model-path)
    architecture: str                 # architectures[0]
    family: str                       # the reader that understood it
    layers: int
    hidden_size: int
    vocab_size: int
    context_length: int
    routed_experts: int
    experts_per_token: int
    shared_experts: int
    moe_intermediate_size: int
    shared_intermediate_size: int
    dense_layers: int                 # leading layers with a dense MLP
    dense_intermediate_size: int
    attention: Literal["gqa", "mla"]
    heads: int
    kv_heads: int
    head_dim: int
    kv_lora_rank: int = 0
    q_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    qk_nope_head_dim: int = 0
    v_head_dim: int = 0
    linear_attention: Literal["kda", "gdn"] | None = None
    full_attention_layers: int
    linear_heads: int = 0
    linear_head_dim: int = 0
    nextn_layers: int
    nextn_source: str
    quantization: Quantization
    tie_word_embeddings: bool = False
    #: GDN key heads and width (0: unknown, the value heads' are used)
    linear_key_heads: int = 0
    linear_key_head_dim: int = 0
    #: Qwen Sparse Attention on the full-attention layers: its indexer's query heads, key
    #: heads and width (0: plain attention)
    indexer_heads: int = 0
    indexer_kv_heads: int = 0
    indexer_head_dim: int = 0
    #: the query projection carries a per-head output gate (Qwen3-Next, Qwen4-Exp)
    gated_query: bool = False
    #: hyper-connection residual streams and their low rank (0: a plain residual)
    hyper_connections: int = 0
    hyper_lowrank: int = 0
    #: the n-gram embedding (PLE) tables: their parameters over every PLE layer, the
    #: layers that hold one, and each layer's projections' parameters
    ple_table_params: int = 0
    ple_layers: int = 0
    ple_projection_params: int = 0
    #: parameters resident beside the decoder and never read per text token (a vision tower)
    vision_params: int = 0
    #: the MTP layer stays in the model dtype (the quantization config ignores it)
    nextn_unquantized: bool = False

    @property
    def is_hybrid(self) -> bool:
        return self.linear_attention is not None


class _Reader:
    """Typed access to one config mapping, every failure one located line."""

    def __init__(self, data: dict[str, Any], source: str, prefix: str = "") -> None:
        self.data, self.source, self.prefix = data, source, prefix

    def fail(self, key: str, why: str) -> UserError:
        return UserError(printable(f"{self.source}: {self.prefix}{key}: {why}"))

    def integer(self, key: str, default: int | None = None, *, low: int = 0) -> int:
        if key not in self.data or self.data[key] is None:
            if default is None:
                raise self.fail(key, "missing (tuner init needs it to plan this model)")
            return default
        value = self.data[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise self.fail(key, f"expected an integer of at least {low}, got {value!r}")
        return value

    def first(self, keys: tuple[str, ...], default: int | None = None) -> int:
        for key in keys:
            if self.data.get(key) is not None:
                return self.integer(key)
        if default is None:
            raise self.fail(keys[0], "missing (tuner init needs it to plan this model)")
        return default


def _quantization(reader: _Reader) -> Quantization:
    """The layout ``quantization_config`` declares; a method the tool does not know is
    refused (its MoE backends would be a guess)."""
    q = reader.data.get("quantization_config")
    if q is None:
        return "bf16"
    if not isinstance(q, dict):
        raise reader.fail("quantization_config", f"expected a mapping, got {q!r}")
    method = str(q.get("quant_method", "")).lower()
    if method == "mxfp4":
        return "mxfp4"
    if method == "fp8":
        block = q.get("weight_block_size")
        if block is not None and list(block) != [128, 128]:
            raise reader.fail("quantization_config.weight_block_size",
                              f"{block!r} is not understood (FP8 block 128x128 is)")
        if str(q.get("routed_experts_quant_method", "")).lower() == "mxfp4":
            return "fp8_block_mxfp4_experts"
        return "fp8_block"
    raise reader.fail("quantization_config.quant_method",
                      f"{method or 'none'!r} is not understood (known: fp8 block 128x128, "
                      "fp8 with MXFP4 routed experts, mxfp4; BF16 has no quantization_config)")


def _safetensors_names(path: Path) -> list[str]:
    """The tensor names in one ``.safetensors`` file's header (8 bytes of little-endian
    length, then that many bytes of JSON), without reading the tensors."""
    try:
        with path.open("rb") as fh:
            size = int.from_bytes(fh.read(8), "little")
            if not 0 < size <= 100 * 1024 * 1024:
                raise ValueError(size)
            header = json.loads(fh.read(size))
        if not isinstance(header, dict):
            raise ValueError(header)
    except (OSError, ValueError):
        raise UserError(f"{path}: not a readable safetensors file") from None
    return [n for n in header if n != "__metadata__"]


def _nextn(reader: _Reader, folder: Path, key: str, default: tuple[int, str]
           ) -> tuple[int, str]:
    """MTP layers: the config's own count, else the checkpoint's tensor names (its
    ``model.safetensors.index.json``, or the header of a single ``model.safetensors``),
    else the architecture's release (``default``: count and the source that says so)."""
    if reader.data.get(key) is not None:
        return reader.integer(key), f"config.json {reader.prefix}{key}"
    index = folder / "model.safetensors.index.json"
    single = folder / "model.safetensors"
    if index.is_file():
        try:
            names = json.loads(index.read_text()).get("weight_map", {})
        except (OSError, ValueError, AttributeError):
            raise UserError(f"{index}: not a readable safetensors index") from None
        where = index.name
    elif single.is_file():
        names, where = _safetensors_names(single), f"{single.name} header"
    else:
        return default
    has = any(n.startswith(("mtp.", "model.mtp.")) for n in names)
    return (1 if has else 0), f"{where} ({'mtp.* tensors' if has else 'no mtp.*'})"


def _common(r: _Reader, quantization: Quantization | None = None) -> dict[str, Any]:
    return {
        "layers": r.integer("num_hidden_layers", low=1),
        "hidden_size": r.integer("hidden_size", low=1),
        "vocab_size": r.integer("vocab_size", low=1),
        "context_length": r.integer("max_position_embeddings", low=1),
        "tie_word_embeddings": bool(r.data.get("tie_word_embeddings", False)),
        "heads": r.integer("num_attention_heads", low=1),
        "quantization": quantization or _quantization(r),
    }


def _mla(r: _Reader) -> dict[str, Any]:
    return {"attention": "mla", "kv_lora_rank": r.integer("kv_lora_rank", low=1),
            "q_lora_rank": r.integer("q_lora_rank", 0),
            "qk_rope_head_dim": r.integer("qk_rope_head_dim"),
            "qk_nope_head_dim": r.integer("qk_nope_head_dim"),
            "v_head_dim": r.integer("v_head_dim")}


def _bailing_v3(r: _Reader, folder: Path) -> dict[str, Any]:
    """Ling-3.0 (``bailing_hybrid``): KDA linear attention, MLA on the last layer of each
    group of ``layer_group_size`` (SGLang 0.5.23 ``models/bailing_moe_v3.py``)."""
    out = {**_common(r), **_mla(r)}
    group = r.integer("layer_group_size", low=1)
    out.update(
        routed_experts=r.integer("num_experts", low=2),
        experts_per_token=r.integer("num_experts_per_tok"),
        shared_experts=r.integer("num_shared_experts", 0),
        moe_intermediate_size=r.integer("moe_intermediate_size", low=1),
        shared_intermediate_size=r.first(("moe_shared_expert_intermediate_size",
                                          "moe_intermediate_size")),
        dense_layers=r.integer("first_k_dense_replace", 0),
        dense_intermediate_size=r.integer("intermediate_size", low=1),
        kv_heads=r.first(("num_key_value_heads", "num_attention_heads")),
        head_dim=r.integer("head_dim", low=1), linear_attention="kda",
        full_attention_layers=out["layers"] // group, linear_heads=out["heads"],
        linear_head_dim=r.integer("head_dim", low=1))
    out["nextn_layers"], out["nextn_source"] = _nextn(r, folder, "num_nextn_predict_layers",
                                                      (0, "config.json (no MTP key)"))
    return out


def _deepseek_v3(r: _Reader, folder: Path) -> dict[str, Any]:
    """DeepSeek-V3 and its shape (MLA, ``n_routed_experts``, ``num_nextn_predict_layers``)."""
    out = {**_common(r), **_mla(r)}
    out.update(
        routed_experts=r.integer("n_routed_experts", low=2),
        experts_per_token=r.integer("num_experts_per_tok"),
        shared_experts=r.integer("n_shared_experts", 0),
        moe_intermediate_size=r.integer("moe_intermediate_size", low=1),
        shared_intermediate_size=r.integer("moe_intermediate_size", low=1),
        dense_layers=r.integer("first_k_dense_replace", 0),
        dense_intermediate_size=r.integer("intermediate_size", low=1),
        kv_heads=r.first(("num_key_value_heads", "num_attention_heads")),
        head_dim=r.integer("qk_nope_head_dim") + r.integer("qk_rope_head_dim"),
        full_attention_layers=out["layers"])
    out["nextn_layers"], out["nextn_source"] = _nextn(r, folder, "num_nextn_predict_layers",
                                                      (0, "config.json (no MTP key)"))
    return out


def _qwen_moe(r: _Reader, folder: Path, *, hybrid: bool) -> dict[str, Any]:
    """Qwen3-MoE (GQA) and Qwen3-Next (GDN linear attention, full attention every
    ``full_attention_interval`` layers, a shared expert)."""
    out = _common(r)
    if r.integer("decoder_sparse_step", 1) != 1 or r.data.get("mlp_only_layers"):
        raise r.fail("decoder_sparse_step", "only every-layer MoE is understood")
    out.update(
        # transformers 5 saves Qwen3-MoE's count as num_local_experts (its attribute_map
        # keeps num_experts readable, so SGLang reads either; seen on the H200's tiny model)
        attention="gqa", routed_experts=r.first(("num_experts", "num_local_experts")),
        experts_per_token=r.integer("num_experts_per_tok"),
        moe_intermediate_size=r.integer("moe_intermediate_size", low=1),
        shared_intermediate_size=r.integer("shared_expert_intermediate_size", 0),
        dense_layers=0, dense_intermediate_size=r.integer("intermediate_size", 0),
        kv_heads=r.integer("num_key_value_heads", low=1), head_dim=r.integer("head_dim", low=1))
    out["shared_experts"] = 1 if out["shared_intermediate_size"] else 0
    if hybrid:
        interval = r.integer("full_attention_interval", low=1)
        out.update(linear_attention="gdn", full_attention_layers=out["layers"] // interval,
                   linear_heads=r.integer("linear_num_value_heads", low=1),
                   linear_head_dim=r.integer("linear_value_head_dim", low=1))
        # Qwen3-Next's releases carry one MTP layer that config.json does not count:
        # SGLang 0.5.23 (configs/model_config.py) loads it as Qwen3NextForCausalLMMTP
        # with num_nextn_predict_layers = 1 (the model card's "Multi-Token Prediction").
        default = (1, "the Qwen3-Next release (SGLang's Qwen3NextForCausalLMMTP, 1 layer)")
    else:
        out["full_attention_layers"] = out["layers"]
        default = (0, "config.json (no MTP key)")
    out["nextn_layers"], out["nextn_source"] = _nextn(r, folder, "num_nextn_predict_layers",
                                                      default)
    return out


def _gpt_oss(r: _Reader, folder: Path) -> dict[str, Any]:
    """gpt-oss: GQA (sliding and full layers), ``num_local_experts`` MXFP4 experts."""
    out = _common(r)
    out.update(
        attention="gqa", routed_experts=r.integer("num_local_experts", low=2),
        experts_per_token=r.first(("num_experts_per_tok", "experts_per_token")),
        shared_experts=0, moe_intermediate_size=r.integer("intermediate_size", low=1),
        shared_intermediate_size=0, dense_layers=0, dense_intermediate_size=0,
        kv_heads=r.integer("num_key_value_heads", low=1), head_dim=r.integer("head_dim", low=1),
        full_attention_layers=out["layers"])
    out["nextn_layers"], out["nextn_source"] = _nextn(r, folder, "num_nextn_predict_layers",
                                                      (0, "config.json (no MTP key)"))
    return out


def _next_prime(n: int) -> int:
    """The smallest prime above ``n`` (sympy.nextprime's answer; trial division is enough
    for the n-gram vocabularies' 8-digit sizes)."""
    m = n + 1
    while True:
        if m >= 2 and all(m % d for d in range(2, math.isqrt(m) + 1)):
            return m
        m += 1


def ple_table_rows(vocab_base: int, heads: int, divisible: int, layer_index: int) -> int:
    """Rows of one PLE layer's n-gram table, as SGLang 0.5.23 builds it
    (``models/qwen4_exp.py``, ``Qwen4ExpNGramEmbedding._build_head_vocab_and_offsets``):
    head ``j`` of the layer at PLE index ``i`` takes the ``(i * heads + j + 1)``-th prime
    from ``vocab_base``; their sum is padded up to a multiple of ``divisible``."""
    prime, total = vocab_base - 1, 0
    for _ in range(layer_index * heads):
        prime = _next_prime(prime)
    for _ in range(heads):
        prime = _next_prime(prime)
        total += prime
    return -(-total // divisible) * divisible


#: The layer kinds a Qwen4-Exp text config may name (SGLang 0.5.23
#: ``configs/qwen4_exp.py`` ``layers_block_type``): GDN linear attention, and full
#: attention (run as Qwen Sparse Attention when the indexer is configured).
_QWEN4_LAYER_KINDS = {"linear_attention": "linear", "full_attention": "full",
                      "qwen_sparse_attention": "full"}


def _modelopt_nvfp4(r: _Reader) -> tuple[Quantization, bool]:
    """Qwen4-Exp's quantization: none (BF16) or ModelOpt NVFP4 routed experts; the second
    value says whether the MTP layer is left unquantized (``mtp.*`` in ``ignore``)."""
    q = r.data.get("quantization_config")
    if q is None:
        return "bf16", True
    if not isinstance(q, dict):
        raise r.fail("quantization_config", f"expected a mapping, got {q!r}")
    method = str(q.get("quant_method", "")).lower()
    algo = str(q.get("quant_algo", "")).upper()
    if method != "modelopt":
        raise r.fail("quantization_config.quant_method", f"{method or 'none'!r} is not "
                     "understood for Qwen4-Exp (known: modelopt NVFP4; BF16 has no "
                     "quantization_config)")
    if algo == "MIXED_PRECISION":
        raise r.fail("quantization_config.quant_algo", "'MIXED_PRECISION' (the NVIDIA "
                     "export) is not understood yet: its FP8 block-scaled MTP experts and "
                     "its MoE runner (auto resolves to flashinfer_trtllm, which GB10 "
                     "refuses) need rules tuner init does not have (docs/search-spaces.md)")
    if algo != "NVFP4":
        raise r.fail("quantization_config.quant_algo", f"{algo or 'none'!r} is not "
                     "understood (known: NVFP4)")
    ignored = [str(m) for m in q.get("ignore") or q.get("exclude_modules") or []]
    return "modelopt_nvfp4", any(m.startswith(("mtp", "model.mtp")) for m in ignored)


def _qwen4_exp(r: _Reader, folder: Path) -> dict[str, Any]:
    """Qwen3.8-Flash-Next (``qwen4_exp``, SGLang 0.5.23 ``models/qwen4_exp.py`` and
    ``configs/qwen4_exp.py``): a ``text_config`` of GDN linear attention and full attention
    layers (``layer_types``), Qwen Sparse Attention's indexer on the full ones, a shared
    expert beside the routed ones, ``hc_count`` hyper-connection streams, n-gram embedding
    tables at ``ple_layer_ids`` and one in-checkpoint MTP layer; a vision tower beside."""
    text = r.data.get("text_config")
    if not isinstance(text, dict):
        raise r.fail("text_config", "missing or not a mapping (Qwen4-Exp keeps its text "
                     "model there)")
    t = _Reader(text, r.source, "text_config.")
    quantization, mtp_plain = _modelopt_nvfp4(r)
    out = _common(t, quantization)
    h, layers = out["hidden_size"], out["layers"]
    kinds = text.get("layer_types")
    if not isinstance(kinds, list) or len(kinds) != layers:
        raise t.fail("layer_types", f"expected a list of {layers} layer kinds (one per "
                     "layer), got {kinds!r}")
    unknown = sorted({str(k) for k in kinds} - set(_QWEN4_LAYER_KINDS))
    if unknown:
        raise t.fail("layer_types", f"{unknown} are not understood (known: "
                     f"{', '.join(_QWEN4_LAYER_KINDS)})")
    hc = t.integer("hc_count", low=2)
    ple_ids = text.get("ple_layer_ids") or []
    if not isinstance(ple_ids, list) or not all(
            isinstance(i, int) and not isinstance(i, bool) and 1 <= i <= layers
            for i in ple_ids):
        raise t.fail("ple_layer_ids", f"expected layer numbers from 1 to {layers}, got "
                     f"{ple_ids!r}")
    ngram = t.integer("ngram_size", 3, low=2)
    heads = (ngram - 1) * t.integer("heads_per_ngram", 8, low=1)
    ple_dim = t.integer("ple_embed_dim", h, low=1)
    if ple_dim % heads:
        raise t.fail("ple_embed_dim", f"{ple_dim} is not a multiple of the {heads} n-gram "
                     "heads (SGLang refuses it)")
    base = t.integer("ngram_vocab_size_base", 20000000, low=1)
    divisible = t.integer("make_ngram_vocab_size_divisible_by", 128, low=1)
    rows = sum(ple_table_rows(base, heads, divisible, i) for i in range(len(ple_ids)))
    kernel = t.integer("ple_conv_kernel_size", 4, low=1)
    raw_vision = r.data.get("vision_config")
    vision: dict[str, Any] = raw_vision if isinstance(raw_vision, dict) else {}
    v = _Reader(vision, r.source, "vision_config.")
    vh = v.integer("hidden_size", 1152, low=1)
    vi, merge = v.integer("intermediate_size", 4304, low=1), v.integer(
        "spatial_merge_size", 2, low=1)
    merged = vh * merge * merge
    vision_params = (v.integer("depth", 27) * (4 * vh * vh + 2 * vh * vi)
                     + merged * merged + merged * h)
    out.update(
        attention="gqa", routed_experts=t.integer("num_experts", low=2),
        experts_per_token=t.integer("num_experts_per_tok"),
        moe_intermediate_size=t.integer("moe_intermediate_size", low=1),
        shared_intermediate_size=t.integer("shared_expert_intermediate_size", 0),
        dense_layers=0, dense_intermediate_size=0,
        kv_heads=t.integer("num_key_value_heads", low=1),
        head_dim=t.integer("head_dim", low=1), linear_attention="gdn",
        full_attention_layers=sum(_QWEN4_LAYER_KINDS[str(k)] == "full" for k in kinds),
        linear_heads=t.integer("linear_num_value_heads", low=1),
        linear_head_dim=t.integer("linear_value_head_dim", low=1),
        linear_key_heads=t.integer("linear_num_key_heads", low=1),
        linear_key_head_dim=t.integer("linear_key_head_dim", low=1),
        indexer_heads=t.integer("indexer_n_heads", 0),
        indexer_kv_heads=t.integer("indexer_kv_heads", 0),
        indexer_head_dim=t.integer("indexer_head_dim", 0), gated_query=True,
        hyper_connections=hc, hyper_lowrank=t.integer("hc_lowrank", 320, low=1),
        ple_table_params=rows * (ple_dim // heads), ple_layers=len(ple_ids),
        # key (h x hc h) and value (h x h) projections, three norms and the short conv
        ple_projection_params=len(ple_ids) * (ple_dim * (hc * h + h) + 3 * hc * h
                                              + hc * h * kernel),
        vision_params=vision_params if vision else 0, nextn_unquantized=mtp_plain)
    out["shared_experts"] = 1 if out["shared_intermediate_size"] else 0
    out["nextn_layers"], out["nextn_source"] = _nextn(
        t, folder, "mtp_num_hidden_layers", (0, "config.json (no MTP key)"))
    return out


Read = Callable[[_Reader, Path], dict[str, Any]]
#: architectures[0] -> (family, reader). Only MoE architectures SGLang 0.5.23 serves and
#: whose launch knobs the engine adapter can prove.
ARCHITECTURES: dict[str, tuple[str, Read]] = {
    "BailingMoeV3ForCausalLM": ("bailing_v3", _bailing_v3),
    "DeepseekV3ForCausalLM": ("deepseek_v3", _deepseek_v3),
    "Qwen3MoeForCausalLM": ("qwen3_moe", lambda r, f: _qwen_moe(r, f, hybrid=False)),
    "Qwen3NextForCausalLM": ("qwen3_next", lambda r, f: _qwen_moe(r, f, hybrid=True)),
    "GptOssForCausalLM": ("gpt_oss", _gpt_oss),
    "Qwen4ExpForConditionalGeneration": ("qwen4_exp", _qwen4_exp),
}


def _load_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{path}: no such file (MODEL is a checkpoint folder with a "
                        "config.json, or that config.json)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot be read ({exc.__class__.__name__})") from None
    except ValueError as exc:
        raise UserError(printable(f"{path}: not valid JSON ({exc})")) from None
    if not isinstance(data, dict):
        raise UserError(f"{path}: expected a JSON object")
    return data


def config_path(model: str | Path) -> Path:
    """The ``config.json`` of MODEL (a checkpoint folder, or that file itself)."""
    path = Path(model).expanduser()
    return path / "config.json" if path.is_dir() else path


def read_model(model: str | Path) -> ModelShape:
    """Read MODEL's architecture; refuse (one located line, exit 2) what is not understood."""
    path = config_path(model)
    data = _load_json(path)
    archs = data.get("architectures")
    if not isinstance(archs, list) or not archs or not isinstance(archs[0], str):
        raise UserError(printable(f"{path}: architectures: missing or not a list of names "
                                  f"(got {archs!r})"))
    if archs[0] not in ARCHITECTURES:
        known = ", ".join(ARCHITECTURES)
        raise UserError(printable(f"{path}: architectures: {archs[0]!r} is not an "
                                  f"architecture tuner init understands (known: {known})"))
    family, read = ARCHITECTURES[archs[0]]
    fields = read(_Reader(data, str(path)), path.parent)
    return ModelShape(source=str(path), folder=str(path.parent.resolve()),
                      architecture=archs[0], family=family, **fields)
