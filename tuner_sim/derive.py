"""The derived twin: a model profile computed from a checkpoint's ``config.json``.

A model without published numbers gets the byte and FLOP counts the performance and
memory models need from its architecture (docs/simulator.md, "The derived twin"), each
DERIVED by a stated rule; the efficiencies and fixed costs come from the machine profile
(ASSUMED there) and the acceptance and answer behaviour from ``profiles/defaults/
derived-model.yaml`` (ASSUMED). What it reads:

* layers and their kinds: ``layer_types`` (full, sliding-window, linear attention),
  ``full_attention_interval`` (Qwen3-Next: one full-attention layer in n, the rest Gated
  DeltaNet), ``layer_group_size`` (Ling's bailing_hybrid: one MLA layer closing each group,
  the rest KDA), MLA where ``kv_lora_rank`` is set (DeepSeek, Ling), else GQA;
* MoE: routed experts (``num_experts`` / ``n_routed_experts`` / ``num_local_experts``),
  top-k, expert width (``moe_intermediate_size``, else ``intermediate_size``), which layers
  are MoE (``first_k_dense_replace``, ``mlp_only_layers``, ``decoder_sparse_step``,
  ``moe_layer_freq``), shared experts (``n_shared_experts`` x width, or
  ``shared_expert_intermediate_size``);
* the NEXTN (MTP) layers in the checkpoint (``num_nextn_predict_layers``,
  ``mtp_num_hidden_layers``; Qwen3-Next's one, which SGLang assumes);
* Qwen4-Exp (Qwen3.8-Flash-Next): the Qwen Sparse Attention indexer (``indexer_*``), the
  hyper-connection streams (``hc_count``, ``hc_lowrank``), the n-gram (PLE) tables at
  ``ple_layer_ids`` as SGLang 0.5.23 builds them and their projections, the recurrent state
  in ``mamba_ssm_dtype``, and the vision tower (``vision_config``: resident, not read per
  text token);
* each part's precision (:mod:`tuner_sim.precision`), the vocabulary, tied embeddings and
  the context length.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

from tuner_sim.precision import DeriveError
from tuner_sim.precision import bytes_per_param
from tuner_sim.precision import model_dtype
from tuner_sim.precision import precisions
from tuner_sim.profiles import DERIVED
from tuner_sim.profiles import DenseDraft
from tuner_sim.profiles import Model
from tuner_sim.profiles import MtpDraft
from tuner_sim.speculative import Algorithm


__all__ = ["DeriveError", "block_declared", "config_path", "derive_draft", "derive_model",
           "read_config"]


def config_path(model_path: str) -> Path | None:
    """The ``config.json`` of a local checkpoint folder, or ``model_path`` itself when it
    names a JSON file; None when neither exists."""
    p = Path(model_path).expanduser()
    if p.is_file() and p.suffix == ".json":
        return p
    return p / "config.json" if (p / "config.json").is_file() else None


def read_config(path: Path) -> dict[str, Any]:
    try:
        cfg = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise DeriveError(f"{path}: not a readable JSON file ({exc.__class__.__name__})"
                          ) from None
    if not isinstance(cfg, dict):
        raise DeriveError(f"{path}: not a JSON object")
    text = cfg.get("text_config")
    return {**cfg, **text} if isinstance(text, dict) else cfg


def _int(cfg: dict[str, Any], *names: str, default: int | None = None) -> int:
    for n in names:
        v = cfg.get(n)
        if isinstance(v, int) and not isinstance(v, bool):
            return v
    if default is None:
        raise DeriveError(f"config.json has no {' / '.join(names)}")
    return default


@dataclass
class Shape:
    """What one decoder stack holds, in parameters, bytes and FLOPs (one of each layer
    kind counted where it is)."""

    attention: float = 0.0          # params: every attention / linear-attention projection
    dense_mlp: float = 0.0          # params: MLPs of the dense (non-MoE) layers
    shared: float = 0.0             # params: shared experts of the MoE layers
    router: float = 0.0             # params: routers (and shared-expert gates)
    kv_bytes: int = 0               # per token: full-attention and MLA layers
    window_bytes: int = 0           # per token: sliding-window layers
    state_bytes: float = 0.0        # per request: linear-attention recurrent + conv state
    attn_flops: float = 0.0         # prefill, per (token, context token): full layers
    window_flops: float = 0.0       # the same, sliding-window layers
    plain: float = 0.0              # params in the model dtype, read every step: Qwen4-Exp's
    #                                 hyper-connection mixers and PLE projections
    kinds: list[str] = field(default_factory=list)


def layer_kinds(cfg: dict[str, Any], layers: int) -> list[str]:
    """Each decoder layer's attention: ``full`` (GQA/MHA), ``mla``, ``sliding`` or
    ``linear``."""
    full = "mla" if cfg.get("kv_lora_rank") is not None else "full"
    names = cfg.get("layer_types")
    if isinstance(names, list) and len(names) == layers:
        table = {"full_attention": full, "attention": full, "sliding_attention": "sliding",
                 "linear_attention": "linear", "qwen_sparse_attention": full}
        unknown = sorted({str(n) for n in names} - set(table))
        if unknown:
            raise DeriveError(f"layer_types {unknown} are not understood")
        return [table[str(n)] for n in names]
    if isinstance(cfg.get("full_attention_interval"), int):
        n = int(cfg["full_attention_interval"])
        return [full if (i + 1) % n == 0 else "linear" for i in range(layers)]
    if isinstance(cfg.get("layer_group_size"), int):       # bailing_hybrid (Ling 3.0)
        g = int(cfg["layer_group_size"])
        whole = layers // g * g
        return [full if (i + 1) % g == 0 or i >= whole else "linear" for i in range(layers)]
    return [full] * layers


def moe_layer_flags(cfg: dict[str, Any], layers: int) -> list[bool]:
    first = _int(cfg, "first_k_dense_replace", default=0)
    only = {int(i) for i in cfg.get("mlp_only_layers") or []}
    step = _int(cfg, "decoder_sparse_step", default=1) or 1
    freq = cfg.get("moe_layer_freq", 1)
    out = []
    for i in range(layers):
        if isinstance(freq, list):
            on = i < len(freq) and bool(freq[i])
        else:
            on = (i - first) % max(1, int(freq or 1)) == 0
        out.append(on and i >= first and i not in only and (i + 1) % step == 0)
    return out


def _attention(cfg: dict[str, Any], kind: str, h: int, kv_dtype: float) -> tuple[
        float, int, float, float]:
    """One layer of ``kind``: (params, KV bytes per token, prefill FLOPs per pair, state
    bytes per request)."""
    heads = _int(cfg, "num_attention_heads", "n_head")
    if kind == "mla":
        kvr, rope = _int(cfg, "kv_lora_rank"), _int(cfg, "qk_rope_head_dim")
        nope, v = _int(cfg, "qk_nope_head_dim"), _int(cfg, "v_head_dim")
        qr = cfg.get("q_lora_rank")
        q = h * qr + qr * heads * (nope + rope) if isinstance(qr, int) else h * heads * (
            nope + rope)
        gate = h * heads if cfg.get("gated_attention_proj_granularity_type") == "head_wise" \
            else 0
        params = q + h * (kvr + rope) + kvr * heads * (nope + v) + heads * v * h + gate
        # the cache holds the compressed latent and the rope key; prefill runs MHA
        return params, int((kvr + rope) * kv_dtype), 2.0 * heads * (nope + rope + v), 0.0
    hd = _int(cfg, "head_dim", default=h // heads)
    if kind in ("full", "sliding"):
        kvh = _int(cfg, "num_key_value_heads", default=heads)
        gated = cfg.get("attn_output_gate", cfg.get("model_type") in ("qwen3_next",
                                                                       "qwen4_exp_text"))
        q = h * heads * hd * (2 if gated else 1)
        params = q + 2 * h * kvh * hd + heads * hd * h
        kv = 2 * kvh * hd * kv_dtype
        if kind == "full" and isinstance(cfg.get("indexer_n_heads"), int):
            # Qwen Sparse Attention's indexer: query and key heads from one projection; its
            # keys cached pooled by the compression ratio (the compressed QSA pool)
            ih, ikv = _int(cfg, "indexer_n_heads"), _int(cfg, "indexer_kv_heads", default=1)
            ihd = _int(cfg, "indexer_head_dim")
            params += (ih + ikv) * ihd * h
            kv += ikv * ihd * kv_dtype / _int(cfg, "indexer_compress_ratio", default=1)
        return params, int(kv), 4.0 * heads * hd, 0.0
    return _linear_attention(cfg, h, heads, hd, kv_dtype)


def _linear_attention(cfg: dict[str, Any], h: int, heads: int, hd: int, dtype: float
                      ) -> tuple[float, int, float, float]:
    """A Gated DeltaNet (Qwen3-Next) or KDA (Ling) layer: its projections, and a state of
    heads x d_k x d_v plus the short convolution's last kernel - 1 inputs, per request."""
    if "linear_num_value_heads" in cfg:                    # Gated DeltaNet
        nk, nv = _int(cfg, "linear_num_key_heads"), _int(cfg, "linear_num_value_heads")
        dk, dv = _int(cfg, "linear_key_head_dim"), _int(cfg, "linear_value_head_dim")
        kernel = _int(cfg, "linear_conv_kernel_dim", default=4)
        conv = 2 * nk * dk + nv * dv
        params = h * (2 * nk * dk + 2 * nv * dv) + h * 2 * nv + conv * kernel + nv * dv * h
        ssm = cfg.get("mamba_ssm_dtype")          # the recurrent state's, where declared
        ssm_b = bytes_per_param(model_dtype({"torch_dtype": ssm})) if ssm else dtype
        state = nv * dk * dv * ssm_b + (kernel - 1) * conv * dtype
        return params, 0, 0.0, state
    if cfg.get("model_type") == "bailing_hybrid" or "kda_lower_bound" in cfg:   # KDA
        kernel = _int(cfg, "short_conv_kernel_size", default=4)
        proj = heads * hd
        # q, k, v, o at full rank; the forget and output gates full rank without LoRA
        gates = 2 * h * proj if cfg.get("no_kda_lora") else 2 * (h * hd + hd * proj)
        params = 4 * h * proj + gates + h * heads + 3 * proj * kernel
        state = heads * hd * hd * dtype + (kernel - 1) * 3 * proj * dtype
        return params, 0, 0.0, state
    raise DeriveError("linear-attention layers of an unknown kind (neither Gated DeltaNet's "
                      "linear_* fields nor KDA's)")


def _experts(cfg: dict[str, Any]) -> tuple[int, int, int]:
    """(routed experts, experts per token, one expert's width)."""
    e = _int(cfg, "num_experts", "n_routed_experts", "num_local_experts", "moe_num_experts",
             default=0)
    if e <= 0:
        raise DeriveError("config.json describes no routed experts (num_experts, "
                          "n_routed_experts, num_local_experts): the simulator derives MoE "
                          "twins only")
    k = _int(cfg, "num_experts_per_tok", "experts_per_token", "moe_topk")
    width = _int(cfg, "moe_intermediate_size", "intermediate_size")
    return e, k, width


def _shared_width(cfg: dict[str, Any]) -> int:
    n = _int(cfg, "n_shared_experts", "num_shared_experts", default=0)
    if n:
        return n * _int(cfg, "moe_shared_expert_intermediate_size", "moe_intermediate_size")
    return _int(cfg, "shared_expert_intermediate_size", default=0)


def _next_prime(n: int) -> int:
    m = n + 1
    while m < 2 or any(m % d == 0 for d in range(2, math.isqrt(m) + 1)):
        m += 1
    return m


def ple_table_params(cfg: dict[str, Any]) -> int:
    """Parameters of Qwen4-Exp's n-gram (PLE) tables, as SGLang 0.5.23 builds them
    (``models/qwen4_exp.py``, ``Qwen4ExpNGramEmbedding``): per PLE layer, (ngram_size - 1)
    x heads_per_ngram heads, head j of layer i taking the (i * heads + j + 1)-th prime from
    ``ngram_vocab_size_base``, their sum padded to ``make_ngram_vocab_size_divisible_by``,
    each row ``ple_embed_dim / heads`` wide."""
    ids = cfg.get("ple_layer_ids") or []
    if not isinstance(ids, list) or not ids:
        return 0
    heads = (_int(cfg, "ngram_size", default=3) - 1) * _int(cfg, "heads_per_ngram", default=8)
    width = _int(cfg, "ple_embed_dim", default=_int(cfg, "hidden_size")) // heads
    base = _int(cfg, "ngram_vocab_size_base", default=20000000)
    div = _int(cfg, "make_ngram_vocab_size_divisible_by", default=128)
    prime, total = base - 1, 0
    for _ in ids:
        rows = 0
        for _ in range(heads):
            prime = _next_prime(prime)
            rows += prime
        total += -(-rows // div) * div * width
    return total


def _hyper_params(cfg: dict[str, Any], h: int) -> float:
    """One layer's hyper-connection mixers (Qwen4-Exp, before attention and before the MLP):
    a norm over the streams, a down and an up projection through the low rank, the
    per-stream injection; 0 without ``hc_count``."""
    hc = _int(cfg, "hc_count", default=0)
    if hc <= 1:
        return 0.0
    wide = hc * h
    return 2.0 * (wide + 2 * wide * _int(cfg, "hc_lowrank", default=320) + hc * wide)


def _ple_projections(cfg: dict[str, Any], h: int) -> float:
    """Each PLE layer's key (hc h x d) and value (h x d) projections, three norms and its
    short convolution."""
    ids = cfg.get("ple_layer_ids") or []
    if not isinstance(ids, list) or not ids:
        return 0.0
    hc = max(1, _int(cfg, "hc_count", default=1))
    d = _int(cfg, "ple_embed_dim", default=h)
    kernel = _int(cfg, "ple_conv_kernel_size", default=4)
    return len(ids) * (d * (hc * h + h) + 3 * hc * h + hc * h * kernel)


def _vision_params(cfg: dict[str, Any]) -> float:
    """A Qwen3-VL-style vision tower (``vision_config``): blocks of attention (4 h^2) and
    an MLP (2 h i), and the merger of merge^2 patches into the text width."""
    v = cfg.get("vision_config")
    if not isinstance(v, dict):
        return 0.0
    vh, vi = _int(v, "hidden_size", default=1152), _int(v, "intermediate_size", default=4304)
    merged = vh * _int(v, "spatial_merge_size", default=2) ** 2
    out = _int(v, "out_hidden_size", default=_int(cfg, "hidden_size"))
    return _int(v, "depth", default=27) * (4 * vh * vh + 2 * vh * vi) + merged * (merged + out)


def shape(cfg: dict[str, Any], layers: int) -> Shape:
    h = _int(cfg, "hidden_size", "d_model")
    kv_dtype = bytes_per_param(model_dtype(cfg))
    e, _, _ = _experts(cfg)
    moe = moe_layer_flags(cfg, layers)
    s = Shape(kinds=layer_kinds(cfg, layers))
    shared = _shared_width(cfg)
    for kind, is_moe in zip(s.kinds, moe, strict=True):
        params, kv, flops, state = _attention(cfg, kind, h, kv_dtype)
        s.attention += params
        s.state_bytes += state
        if kind == "sliding":
            s.window_bytes += kv
            s.window_flops += flops
        else:
            s.kv_bytes += kv
            s.attn_flops += flops
        if is_moe:
            s.shared += 3 * h * shared
            s.router += h * e + (h if shared and "shared_expert_intermediate_size" in cfg
                                 else 0)
        else:
            s.dense_mlp += 3 * h * _int(cfg, "intermediate_size")
    hyper = _hyper_params(cfg, h)
    s.plain = layers * hyper + hyper / 2 + _ple_projections(cfg, h)   # and the final mixer
    ids = cfg.get("ple_layer_ids") or []
    if isinstance(ids, list) and ids:               # the PLE short convolution's history
        hc = max(1, _int(cfg, "hc_count", default=1))
        s.state_bytes += len(ids) * (_int(cfg, "ple_conv_kernel_size", default=4) - 1) * (
            _int(cfg, "ngram_size", default=3)) * hc * h * kv_dtype
    return s


def mtp_layers(cfg: dict[str, Any]) -> int:
    n = _int(cfg, "num_nextn_predict_layers", "mtp_num_hidden_layers", "mtp_num_layers",
             default=0)
    if n == 0 and str((cfg.get("architectures") or [""])[0]).startswith("Qwen3Next"):
        return 1                      # SGLang's model config assumes Qwen3-Next's one
    return n


def _dominant(prec: dict[str, str], s: Shape) -> str:
    """The precision most of the dense weights (attention, shared, dense MLPs) are in."""
    return prec["attention"] if s.attention >= s.shared + s.dense_mlp else prec["shared"]


def _mtp_unquantized(cfg: dict[str, Any]) -> bool:
    """The quantization config leaves the MTP layer in the model dtype (``mtp.*``)."""
    qc = cfg.get("quantization_config")
    if not isinstance(qc, dict):
        return False
    skipped = [*(qc.get("ignore") or []), *(qc.get("modules_to_not_convert") or []),
               *(qc.get("exclude_modules") or [])]
    return any(str(m).startswith(("mtp", "model.mtp")) for m in skipped)


def _nextn(cfg: dict[str, Any], h: int, b: dict[str, float]) -> MtpDraft:
    """One NEXTN (MTP) layer: a full-attention (or MLA) decoder layer with a MoE MLP, plus
    its projection of [embedding; hidden] (2h x h) (and Qwen4-Exp's hyper-connection
    mixers); it shares the target's embedding and LM head. SGLang drafts with one such
    layer whatever the checkpoint holds."""
    e, _, width = _experts(cfg)
    kind = "mla" if cfg.get("kv_lora_rank") is not None else "full"
    dtype = bytes_per_param(model_dtype(cfg))
    attn, kv, _, _ = _attention(cfg, kind, h, dtype)
    dense = (attn + 2 * h * h) * b["attention"] + 3 * h * _shared_width(cfg) * b["shared"] \
        + h * e * b["router"] + 1.5 * _hyper_params(cfg, h) * dtype
    experts = e * 3 * h * width * (dtype if _mtp_unquantized(cfg) else b["experts"])
    return MtpDraft(weights_gb=(dense + experts) / 1e9, dense_active_gb=dense / 1e9,
                    kv_bytes_per_token=kv, moe_layers=1)


def derive_model(path: Path, defaults: dict[str, Any]) -> Model:
    """The twin of the checkpoint whose config.json is at ``path``. ``defaults``: the
    ASSUMED sections (acceptance, routing overlap, answer behaviour)."""
    cfg = read_config(path)
    archs = cfg.get("architectures")
    if not isinstance(archs, list) or not archs:
        raise DeriveError(f"{path}: config.json names no architectures")
    layers = _int(cfg, "num_hidden_layers", "num_layers", "n_layer")
    h = _int(cfg, "hidden_size", "d_model")
    e, k, width = _experts(cfg)
    prec = precisions(cfg)
    b = {part: bytes_per_param(p) for part, p in prec.items() if part != "method"}
    s = shape(cfg, layers)
    moe_layers = sum(moe_layer_flags(cfg, layers))
    expert = 3 * h * width
    dense = s.attention + s.shared + s.dense_mlp + s.router + s.plain
    vocab = _int(cfg, "vocab_size")
    tied = bool(cfg.get("tie_word_embeddings", False))
    dtype = bytes_per_param(model_dtype(cfg))
    dense_gb = (s.attention * b["attention"] + (s.shared + s.dense_mlp) * b["shared"]
                + s.router * b["router"] + s.plain * dtype) / 1e9
    ple = ple_table_params(cfg)
    ple_dtype = "fp8" if str(cfg.get("ple_embedding_dtype", "")).startswith("float8") else (
        model_dtype(cfg))
    vision = _vision_params(cfg)
    folder = path.parent if path.name == "config.json" else path
    data = {
        **defaults, "id": folder.name if path.name == "config.json" else path.stem,
        "aliases": [], "twin": DERIVED, "architecture": str(archs[0]),
        "model_type": str(cfg.get("model_type") or ""), "served_model_name": str(folder),
        "params_total_b": (moe_layers * e * expert + dense + vocab * h * (1 if tied else 2)
                           + ple + vision) / 1e9,
        # matmul weights one prefill token passes through (the LM head runs on the last
        # token only)
        "params_active_b": (moe_layers * k * expert + dense) / 1e9,
        "layers": layers, "moe_layers": moe_layers, "mla_layers": s.kinds.count("mla"),
        "routed_experts": e, "experts_per_token": k, "hidden_size": h,
        "moe_intermediate_size": width, "vocab_size": vocab,
        "context_length": _int(cfg, "max_position_embeddings", "seq_length",
                               "model_max_length"),
        "quantization": {**prec, "dense": _dominant(prec, s)},
        "expert_bytes_per_param": b["experts"], "dense_active_gb": dense_gb,
        "embedding_gb": 0.0 if tied else vocab * h * b["embedding"] / 1e9,
        "lm_head_params_m": vocab * h / 1e6, "lm_head_bytes_per_param": b["lm_head"],
        "kv_bytes_per_token": s.kv_bytes, "kv_window_bytes_per_token": s.window_bytes,
        "kv_window_tokens": _int(cfg, "sliding_window", default=0) if s.window_bytes else 0,
        "linear_state_gb_per_request": s.state_bytes / 1e9,
        "state_bytes_per_step": 2.0 * s.state_bytes,       # read, then written back
        "prefill_attn_flops_per_pair": s.attn_flops,
        "prefill_window_flops_per_pair": s.window_flops,
        "drafts": {"NEXTN": _nextn(cfg, h, b)} if mtp_layers(cfg) else {},
        # the PLE tables in their storage dtype: ple_embedding_dtype where declared, else
        # the model dtype (SGLang switches to FP8 at load when the shards are FP8, which a
        # config.json does not say)
        "ple_table_gb": ple * bytes_per_param(ple_dtype) / 1e9,
        "resident_extra_gb": vision * dtype / 1e9,
    }
    return Model.model_validate(data)


def block_declared(cfg: dict[str, Any], algo: Algorithm) -> object:
    """What a draft's config.json declares as its block size, as SGLang reads it: the
    first of the algorithm's keys present (DSPARK: ``dspark_block_size``, ``block_size``);
    None when none is."""
    return next((cfg[k] for k in algo.block_keys if k in cfg), None)


def derive_draft(path: Path, algo: Algorithm) -> DenseDraft:
    """An external draft of ``algo`` from its checkpoint's config.json: a dense stack
    (attention and MLP per layer) sharing the target's embedding and LM head, in its own
    dtype; a block draft's block size as its config declares it (else SGLang's default)."""
    cfg = read_config(path)
    layers = _int(cfg, "num_hidden_layers", "num_layers")
    h = _int(cfg, "hidden_size")
    dtype = bytes_per_param(model_dtype(cfg))
    attn, kv, _, _ = _attention(cfg, "full", h, dtype)
    params = layers * (attn + 3 * h * _int(cfg, "intermediate_size", default=0))
    block = block_declared(cfg, algo)
    folder = path.parent if path.name == "config.json" else path
    return DenseDraft(
        aliases=[folder.name], architecture=str((cfg.get("architectures") or ["?"])[0]),
        block_size=block if isinstance(block, int) else algo.default_block,
        resident_gb=params * dtype / 1e9, dense_read_gb=params * dtype / 1e9,
        kv_bytes_per_token=layers * kv, params_b=params / 1e9, per_request_gb=0.0,
        confidence_head=False)


def describe(m: Model) -> str:
    """One line: what the twin was derived to (the server's start-up log, calibrate)."""
    q = m.quantization
    n = m.drafts.get("NEXTN")
    mtp = f"NEXTN layer {n.resident_gb:.2f} GB" if n else "no NEXTN layer"
    return (f"{m.architecture}: {m.params_total_b:.1f} B parameters, {m.params_active_b:.2f} B "
            f"active per token; {m.moe_layers} MoE layers x {m.routed_experts} experts (top "
            f"{m.experts_per_token}, {q.get('experts')}), dense {q.get('dense')}, LM head "
            f"{q.get('lm_head')}; weights {m.weights_gb:.2f} GB; KV {m.kv_bytes_per_token} "
            f"B/token" + (f" + {m.kv_window_bytes_per_token} B/token over a "
                          f"{m.kv_window_tokens}-token window" if m.kv_window_tokens else "")
            + (f", linear-attention state {m.linear_state_gb_per_request * 1e3:.1f} MB per "
               "request" if m.linear_state_gb_per_request else "") + f"; {mtp}")
