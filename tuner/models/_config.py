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



def _qwen4_exp(r: _Reader, folder: Path) -> dict[str, Any]:
    """Qwen3.8-Flash-Next: :mod:`tuner.models._qwen4_exp` (its own module: the layout is
    the largest the tool reads)."""
    from tuner.models._qwen4_exp import read_qwen4_exp

    return read_qwen4_exp(r, folder)

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
