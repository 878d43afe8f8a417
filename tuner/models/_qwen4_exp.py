"""Qwen3.8-Flash-Next's ``config.json`` (``Qwen4ExpForConditionalGeneration``), read for
``tuner init``: its ``text_config`` (GDN and Qwen Sparse Attention layers, a shared expert,
hyper-connection streams, n-gram embedding tables, one MTP layer), its vision tower and its
ModelOpt NVFP4 quantization, as SGLang 0.5.23 reads them (``models/qwen4_exp.py``,
``configs/qwen4_exp.py``). Every failure is one located line (:class:`_Reader`)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from tuner.models._config import Quantization
from tuner.models._config import _common
from tuner.models._config import _nextn
from tuner.models._config import _Reader


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


def _layer_kinds(t: _Reader, layers: int) -> list[str]:
    kinds = t.data.get("layer_types")
    if not isinstance(kinds, list) or len(kinds) != layers:
        raise t.fail("layer_types", f"expected a list of {layers} layer kinds (one per "
                     f"layer), got {kinds!r}")
    unknown = sorted({str(k) for k in kinds} - set(_QWEN4_LAYER_KINDS))
    if unknown:
        raise t.fail("layer_types", f"{unknown} are not understood (known: "
                     f"{', '.join(_QWEN4_LAYER_KINDS)})")
    return [_QWEN4_LAYER_KINDS[str(k)] for k in kinds]


def _ple(t: _Reader, h: int, hc: int, layers: int) -> dict[str, int]:
    """The n-gram (PLE) tables' parameters over every PLE layer, and each layer's key
    (h x hc h) and value (h x h) projections, three norms and its short convolution."""
    ids = t.data.get("ple_layer_ids") or []
    if not isinstance(ids, list) or not all(
            isinstance(i, int) and not isinstance(i, bool) and 1 <= i <= layers for i in ids):
        raise t.fail("ple_layer_ids", f"expected layer numbers from 1 to {layers}, got "
                     f"{ids!r}")
    heads = (t.integer("ngram_size", 3, low=2) - 1) * t.integer("heads_per_ngram", 8, low=1)
    dim = t.integer("ple_embed_dim", h, low=1)
    if dim % heads:
        raise t.fail("ple_embed_dim", f"{dim} is not a multiple of the {heads} n-gram heads "
                     "(SGLang refuses it)")
    base = t.integer("ngram_vocab_size_base", 20000000, low=1)
    divisible = t.integer("make_ngram_vocab_size_divisible_by", 128, low=1)
    rows = sum(ple_table_rows(base, heads, divisible, i) for i in range(len(ids)))
    kernel = t.integer("ple_conv_kernel_size", 4, low=1)
    return {"ple_table_params": rows * (dim // heads), "ple_layers": len(ids),
            "ple_projection_params": len(ids) * (dim * (hc * h + h) + 3 * hc * h
                                                 + hc * h * kernel)}


def _vision_params(r: _Reader, h: int) -> int:
    """A Qwen3-VL vision tower (``vision_config``, SGLang's ``Qwen3VLVisionConfig``
    defaults where a key is absent): blocks of attention (4 d^2) and an MLP (2 d i), and
    the merger folding merge^2 patches into the text width; 0 without one."""
    raw = r.data.get("vision_config")
    if not isinstance(raw, dict):
        return 0
    v = _Reader(raw, r.source, "vision_config.")
    d = v.integer("hidden_size", 1152, low=1)
    inner, merge = v.integer("intermediate_size", 4304, low=1), v.integer(
        "spatial_merge_size", 2, low=1)
    merged = d * merge * merge
    return v.integer("depth", 27) * (4 * d * d + 2 * d * inner) + merged * (merged + h)


def read_qwen4_exp(r: _Reader, folder: Path) -> dict[str, Any]:
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
    kinds = _layer_kinds(t, layers)
    hc = t.integer("hc_count", low=2)
    out.update(
        attention="gqa", routed_experts=t.integer("num_experts", low=2),
        experts_per_token=t.integer("num_experts_per_tok"),
        moe_intermediate_size=t.integer("moe_intermediate_size", low=1),
        shared_intermediate_size=t.integer("shared_expert_intermediate_size", 0),
        dense_layers=0, dense_intermediate_size=0,
        kv_heads=t.integer("num_key_value_heads", low=1),
        head_dim=t.integer("head_dim", low=1), linear_attention="gdn",
        full_attention_layers=kinds.count("full"),
        linear_heads=t.integer("linear_num_value_heads", low=1),
        linear_head_dim=t.integer("linear_value_head_dim", low=1),
        linear_key_heads=t.integer("linear_num_key_heads", low=1),
        linear_key_head_dim=t.integer("linear_key_head_dim", low=1),
        indexer_heads=t.integer("indexer_n_heads", 0),
        indexer_kv_heads=t.integer("indexer_kv_heads", 0),
        indexer_head_dim=t.integer("indexer_head_dim", 0), gated_query=True,
        hyper_connections=hc, hyper_lowrank=t.integer("hc_lowrank", 320, low=1),
        **_ple(t, h, hc, layers), vision_params=_vision_params(r, h),
        nextn_unquantized=mtp_plain)
    out["shared_experts"] = 1 if out["shared_intermediate_size"] else 0
    out["nextn_layers"], out["nextn_source"] = _nextn(
        t, folder, "mtp_num_hidden_layers", (0, "config.json (no MTP key)"))
    return out
