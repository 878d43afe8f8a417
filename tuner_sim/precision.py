"""The precision of each part of a checkpoint, from its ``config.json`` (the derived twin).

Parts: ``experts`` (routed experts), ``attention`` (full, MLA, sliding-window and linear
attention projections), ``shared`` (shared experts and the dense MLP layers), ``router``,
``embedding`` and ``lm_head``. Unquantized parts keep the checkpoint's dtype
(``torch_dtype``). What a ``quantization_config`` quantizes, by ``quant_method``:

* ``fp8`` (DeepSeek-V3, block FP8): every linear layer (experts, attention, shared, router)
  at one byte per weight; the embedding and the LM head stay in the model dtype. An
  ``expert_dtype`` of ``fp4``/``mxfp4`` (the mixed FP8 + MXFP4 layout SGLang loads as
  DeepSeek-V4's) puts the routed experts at MXFP4.
* ``mxfp4`` (gpt-oss): the routed experts only (SGLang's ``Mxfp4Config`` quantizes MoE
  layers); the rest stays in the model dtype.
* ``modelopt`` / ``modelopt_fp4`` / ``modelopt_fp8`` (``quant_algo`` FP8 or NVFP4),
  ``compressed-tensors`` (its first config group's weights), ``gptq`` / ``awq`` /
  ``auto-round`` (``bits``, ``group_size``), ``w8a8_int8`` / ``w8a8_fp8``: every linear
  layer at that format.

Modules the config leaves out (``modules_to_not_convert``, ``ignored_layers``,
``ignore``, ``exclude_modules``) keep the model dtype, matched to a part by name. Bytes per
weight include the scales: MXFP4 4 bits + an E8M0 scale per 32 (0.53125 B), NVFP4 4 bits +
an FP8 scale per 16 (0.5625 B), INTn ``n/8`` + a BF16 scale per group; FP8 block scales
(one float per 128 x 128) are left out (0.02%).
"""

from __future__ import annotations

from typing import Any


PARTS = ("experts", "attention", "shared", "router", "embedding", "lm_head")
#: the parts a weight-only or W8A8 method quantizes (all linear layers but the LM head)
_LINEAR = ("experts", "attention", "shared", "router")

_DTYPES = {"bfloat16": "bf16", "bf16": "bf16", "float16": "fp16", "fp16": "fp16",
           "half": "fp16", "float32": "fp32", "fp32": "fp32", "float": "fp32"}
_BYTES = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0,
          "mxfp4": 0.53125, "nvfp4": 0.5625}


class DeriveError(ValueError):
    """A config.json the derived twin does not understand: one line naming what."""


def bytes_per_param(precision: str) -> float:
    """Bytes one weight of ``precision`` takes, scales included (``int4g128``: 4-bit
    integers with a BF16 scale per 128)."""
    if precision in _BYTES:
        return _BYTES[precision]
    if precision.startswith("int") and "g" in precision:
        bits, group = precision[3:].split("g")
        return int(bits) / 8 + 2.0 / int(group)
    raise DeriveError(f"no byte size for precision {precision!r}")


def model_dtype(cfg: dict[str, Any]) -> str:
    raw = str(cfg.get("torch_dtype") or cfg.get("dtype") or "bfloat16").lower()
    if raw not in _DTYPES:
        raise DeriveError(f"torch_dtype {raw!r} is not understood")
    return _DTYPES[raw]


def _part_of(module: str) -> str | None:
    m = module.lower().replace("*", "")          # a glob names the same part: *.mlp.gate*
    if "lm_head" in m:
        return "lm_head"
    if "embed" in m:
        return "embedding"
    if "shared_expert" in m:
        return "shared"
    if "experts" in m:
        return "experts"
    if "router" in m or m.endswith(".gate") or ".gate." in m:
        return "router"
    if "attn" in m or "attention" in m:
        return "attention"
    if "mlp" in m:
        return "shared"
    return None


def _int_format(bits: Any, group: Any) -> str:
    b = int(bits or 4)
    if b == 8:
        return "int8"
    return f"int{b}g{int(group) if group and int(group) > 0 else 128}"


def _method_format(method: str, qc: dict[str, Any]) -> str:
    """The format ``method`` stores quantized linear layers in."""
    if method in ("fp8", "fbgemm_fp8", "w8a8_fp8", "modelopt_fp8"):
        return "fp8"
    if method == "w8a8_int8":
        return "int8"
    if method in ("modelopt_fp4", "nvfp4"):
        return "nvfp4"
    if method == "modelopt":
        algo = str(qc.get("quant_algo") or "").upper()
        if algo in ("FP8", "NVFP4"):
            return algo.lower()
        raise DeriveError(f"quantization_config.quant_algo {algo!r} is not understood")
    if method in ("gptq", "awq", "auto-round", "gptq_marlin", "awq_marlin"):
        return _int_format(qc.get("bits"), qc.get("group_size"))
    if method == "compressed-tensors":
        groups = qc.get("config_groups") or {}
        first: Any = next(iter(groups.values()), {}) if isinstance(groups, dict) else {}
        w = first.get("weights") or {} if isinstance(first, dict) else {}
        bits, kind = w.get("num_bits"), str(w.get("type") or "int")
        if kind == "float":
            return {8: "fp8", 4: "nvfp4"}.get(int(bits or 0), "") or _unknown(method, qc)
        return _int_format(bits, w.get("group_size"))
    return _unknown(method, qc)


def _unknown(method: str, qc: dict[str, Any]) -> str:
    raise DeriveError(f"quantization_config.quant_method {method!r} is not understood")


def precisions(cfg: dict[str, Any]) -> dict[str, str]:
    """Each part's precision (:data:`PARTS`), plus ``method`` (the quant method, or
    ``none``)."""
    dtype = model_dtype(cfg)
    out = dict.fromkeys(PARTS, dtype)
    qc = cfg.get("quantization_config")
    if not isinstance(qc, dict) or not qc:
        return {**out, "method": "none"}
    method = str(qc.get("quant_method") or "").lower()
    if method == "mxfp4":
        out["experts"] = "mxfp4"
    else:
        fmt = _method_format(method, qc)
        for part in _LINEAR:
            out[part] = fmt
    expert = str(cfg.get("expert_dtype") or qc.get("expert_dtype") or "").lower()
    if expert in ("fp4", "mxfp4"):
        out["experts"] = "mxfp4"
    skipped = [*(qc.get("modules_to_not_convert") or []), *(qc.get("ignored_layers") or []),
               *(qc.get("ignore") or []), *(qc.get("exclude_modules") or [])]
    for module in skipped:
        kept = _part_of(str(module))
        if kept is not None:
            out[kept] = dtype
    return {**out, "method": method}
