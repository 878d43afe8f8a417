"""The memory plan: the GiB a checkpoint's weights take once loaded, from its shape.

Parameters are counted per component from :class:`ModelShape` (embedding, LM head,
attention or linear attention, dense MLPs, routed and shared experts, routers) and priced at
the bytes per parameter of the checkpoint's layout: BF16 2; FP8 block 128x128 1 + one FP32
scale per 16,384 values; MXFP4 0.53125 (4-bit values and one E8M0 scale per 32). What each
layout leaves in BF16 (embedding, LM head, routers, norms, gpt-oss's attention) is priced
so. The MTP/NEXTN layers are not part of the target's weights: SGLang loads them only as
the NEXTN draft (:attr:`MemoryPlan.nextn_gib`). ModelOpt NVFP4 experts take 0.5625 (4-bit
values and one FP8 scale per 16), the rest in BF16. Qwen3.8-Flash-Next adds its Qwen Sparse
Attention indexer, its hyper-connection mixers, its PLE projections and its vision tower
(resident, BF16); its n-gram (PLE) tables are not counted in the weights: SGLang keeps them
outside the GPU's pool when ``--ple-offload-embedding`` is set (a file on the NVMe, or pinned
host memory), and :attr:`MemoryPlan.ple_gib` states their size. An estimate, stated as one
in the space: the fraction bounds it sets are coarse (multiples of 0.05) for that reason.

The pool's bookkeeping: SGLang sizes the KV pool as the fraction's budget less the weights,
in tokens of the model's KV bytes per token (full-attention layers only: a linear-attention
layer holds a fixed state, not per-token KV), and keeps index arrays per pool token outside
the budget. For a real checkpoint that is megabytes; for a model whose KV per token is a few
hundred bytes (the H200 kit's tiny models) the pool holds hundreds of millions of tokens and
the arrays take GiB: :func:`bookkeeping_cap` is the largest fraction that leaves them room
(docs/real-sglang-h200.md, "The rerun": the tiny Qwen3-Next died at 0.91 on the H200).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tuner.models._config import ModelShape


GIB = 1024**3
BF16 = 2.0
FP8_BLOCK = 1.0 + 4.0 / (128 * 128)
MXFP4 = 0.53125
NVFP4 = 0.5625


@dataclass(frozen=True)
class MemoryPlan:
    weights_gib: float        # the target's weights, MTP layers excluded
    nextn_gib: float          # one MTP layer's weights (the NEXTN draft), 0 without
    routed_gib: float         # of which routed experts
    low: float                # the lowest --mem-fraction-static worth trying
    note: str                 # how the bounds were set
    ple_gib: float = 0.0      # the n-gram (PLE) tables in FP8, outside the weights
    kv_bytes_per_token: float = 0.0   # the KV pool's bytes per token and GPU (BF16 KV)
    high: float = 1.0         # the largest fraction the pool's bookkeeping leaves room for
    high_note: str = ""       # why, when it is below 1


#: Bytes SGLang keeps outside the fraction's budget per KV-pool token (its allocator's and
#: the pool's index arrays). ASSUMED 64, from the H200 OOM of the tiny Qwen3-Next at 0.91
#: (about 265 M pool tokens; 8.7 GiB held outside the pool and 5.9 GiB more asked for:
#: at least 53 bytes a token) and the tiny Qwen3-MoE that ran at 0.92 (about 134 M tokens
#: in 11 GiB of headroom); docs/real-sglang-h200.md.
BOOKKEEPING_BYTES_PER_TOKEN = 64.0
#: GiB outside the budget besides the bookkeeping (CUDA context, graphs, workspace). ASSUMED.
OUTSIDE_GIB = 2.0


def kv_bytes_per_token(m: ModelShape) -> float:
    """The KV pool's bytes per token in BF16: MLA keeps the compressed latent and the rope
    key per layer, GQA a key and a value per KV head; only full-attention layers count."""
    per_layer = ((m.kv_lora_rank + m.qk_rope_head_dim) if m.attention == "mla"
                 else 2 * m.kv_heads * m.head_dim)
    return float(m.full_attention_layers * per_layer * BF16)


def bookkeeping_cap(kv: float, memory_gib: float, weights_gib: float) -> float:
    """The largest ``--mem-fraction-static`` (two decimals) whose pool's per-token
    bookkeeping and :data:`OUTSIDE_GIB` still fit in the memory the fraction leaves:
    ``(1 - f) M >= OUTSIDE + b (f M - W) / kv`` (``kv``: KV bytes a token); 1.0 when it
    never binds."""
    if kv <= 0 or memory_gib <= OUTSIDE_GIB:
        return 1.0
    ratio = BOOKKEEPING_BYTES_PER_TOKEN / kv
    f = (memory_gib - OUTSIDE_GIB + ratio * weights_gib) / (memory_gib * (1 + ratio))
    return max(0.0, math.floor(min(f, 1.0) * 100 + 1e-9) / 100)


def _attention_params(m: ModelShape) -> float:
    """One full-attention layer's projection parameters."""
    h = m.hidden_size
    if m.attention == "mla":
        q_out = m.heads * (m.qk_nope_head_dim + m.qk_rope_head_dim)
        q = h * m.q_lora_rank + m.q_lora_rank * q_out if m.q_lora_rank else h * q_out
        kv = h * (m.kv_lora_rank + m.qk_rope_head_dim)
        kv += m.kv_lora_rank * m.heads * (m.qk_nope_head_dim + m.v_head_dim)
        return q + kv + m.heads * m.v_head_dim * h
    gate = h * m.head_dim * m.heads if m.gated_query else 0
    indexer = (m.indexer_heads + m.indexer_kv_heads) * m.indexer_head_dim * h
    return h * m.head_dim * (2 * m.heads + 2 * m.kv_heads) + gate + indexer


def _linear_params(m: ModelShape) -> float:
    """One linear-attention layer's projections: q, k, v, gates and output, each the
    width of its heads (KDA: q, k, v, the forget gate and the output gate; GDN: q, k, v,
    z and output). GDN with its key heads known: q and k at the key heads' width, v and z
    at the value heads', the a and b gates, the output and the short convolution."""
    width = m.linear_heads * m.linear_head_dim
    if m.linear_attention == "gdn" and m.linear_key_heads:
        conv = 2 * m.linear_key_heads * m.linear_key_head_dim + width
        return m.hidden_size * (conv + 2 * width + 2 * m.linear_heads) + 4 * conv
    return 5 * m.hidden_size * width


def _hyper_params(m: ModelShape) -> float:
    """One layer's hyper-connection mixers (before attention and before the MLP): each a
    norm over the streams, a down and an up projection through the low rank and the
    per-stream injection weights (SGLang 0.5.23 ``models/qwen4_exp.py``)."""
    if not m.hyper_connections:
        return 0.0
    wide = m.hyper_connections * m.hidden_size
    return 2 * (wide + 2 * wide * m.hyper_lowrank + m.hyper_connections * wide)


def _expert_params(m: ModelShape) -> tuple[float, float, float]:
    """(routed, shared, router) parameters of one MoE layer."""
    h = m.hidden_size
    routed = m.routed_experts * 3 * h * m.moe_intermediate_size
    shared = m.shared_experts * 3 * h * m.shared_intermediate_size
    return routed, shared, m.routed_experts * h


def _prices(m: ModelShape) -> tuple[float, float, float]:
    """Bytes per parameter of (routed experts, other linear layers, embedding and head)."""
    if m.quantization == "mxfp4":
        return MXFP4, BF16, BF16
    if m.quantization == "fp8_block_mxfp4_experts":
        return MXFP4, FP8_BLOCK, BF16
    if m.quantization == "fp8_block":
        return FP8_BLOCK, FP8_BLOCK, BF16
    if m.quantization == "modelopt_nvfp4":
        return NVFP4, BF16, BF16
    return BF16, BF16, BF16


def _gib(value: float) -> float:
    """GiB as written in a space: one decimal from 1 GiB up, two significant digits below
    (a tiny checkpoint's few MiB stay above zero: ``weights_gib`` must be positive)."""
    return round(value, 1) if value >= 0.95 else float(f"{value:.2g}")


def plan_memory(m: ModelShape, memory_gib: float, gpus: int = 1) -> MemoryPlan:
    """The weights and the lowest memory fraction worth a launch on ``gpus`` GPUs of
    ``memory_gib`` each (tensor parallel: the weights split evenly)."""
    routed_b, linear_b, _edge_b = _prices(m)
    moe_layers = m.layers - m.dense_layers
    full = m.full_attention_layers
    attention = full * _attention_params(m) + (m.layers - full) * _linear_params(m)
    dense = m.dense_layers * 3 * m.hidden_size * m.dense_intermediate_size
    routed, shared, router = _expert_params(m)
    edges = m.vocab_size * m.hidden_size * (1 if m.tie_word_embeddings else 2)
    hyper = m.layers * _hyper_params(m) + (_hyper_params(m) / 2 if m.hyper_connections
                                           else 0.0)         # and the final mixer
    plain = hyper + m.ple_projection_params + m.vision_params       # BF16, kept so
    total = (moe_layers * routed * routed_b + (attention + dense + moe_layers * shared)
             * linear_b + (moe_layers * router + edges + plain) * BF16)
    mtp_b = BF16 if m.nextn_unquantized else routed_b
    nextn = (_attention_params(m) * linear_b + routed * mtp_b + shared * linear_b
             + (router + 2 * m.hidden_size**2 + _hyper_params(m) * 1.5) * BF16
             ) if m.nextn_layers else 0.0
    weights = total / GIB
    share = weights / gpus / memory_gib
    low = math.ceil(share * 20 - 1e-9) / 20
    note = (f"weights about {_gib(weights):g} GiB ({share:.0%} of {memory_gib:g} GiB per GPU, "
            f"{gpus} GPU{'s' if gpus > 1 else ''}): below {low:.2f} they cannot load")
    ple = m.ple_table_params / GIB
    if ple:
        note += (f"; the n-gram (PLE) tables ({m.ple_table_params / 1e9:.1f} B parameters: "
                 f"{_gib(ple):g} GiB in FP8, {_gib(2 * ple):g} GiB in BF16) are not counted, "
                 "SGLang keeps them outside the GPU's pool under --ple-offload-embedding")
    if nextn:
        note += f"; NEXTN adds its MTP layer, about {_gib(nextn / GIB):g} GiB"
    kv = kv_bytes_per_token(m)
    if m.attention == "gqa":        # tensor parallel splits the KV heads (MLA: replicated)
        kv /= min(gpus, max(m.kv_heads, 1))
    high = bookkeeping_cap(kv, memory_gib, weights / gpus)
    high_note = (f"the KV pool's index arrays ({BOOKKEEPING_BYTES_PER_TOKEN:g} bytes a token, "
                 f"outside the fraction; {kv:g} bytes of KV a token) leave no room above "
                 f"{high:.2f}" if high < 1.0 else "")
    return MemoryPlan(weights_gib=_gib(weights), nextn_gib=_gib(nextn / GIB),
                      routed_gib=_gib(moe_layers * routed * routed_b / GIB), low=low,
                      note=note, ple_gib=_gib(ple) if ple else 0.0,
                      kv_bytes_per_token=kv, high=high, high_note=high_note)
