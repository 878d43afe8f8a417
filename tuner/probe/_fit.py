"""From probe measurements to a simulator machine profile: a twin calibrated to this GPU.

Fitted (CUDA-graph timings preferred; eager ones when a stage could not be captured):

* ``bandwidth_gbs`` = the measured device-to-device copy ceiling (bytes read + written);
* MoE layer: a least-squares line through (bytes of the distinct experts touched, time) over
  M = 1..16. The slope gives the Humming kernel's effective bandwidth, hence
  ``efficiency.moe.humming`` (relative to the copy ceiling); the intercept is a fixed cost
  per MoE layer per forward (``moe_layer_overhead_us``), the launch and latency floor that
  dominates at batch 1 (measured for Humming only; other backends keep the base
  profile's implicit overhead). W4A8's line gives ``w4a8_penalty.humming`` (negative: a
  speed-up);
* LM head: bytes of the vocab GEMM over its time at BF16 and FP8 give
  ``efficiency.lm_head.bf16`` / ``.fp8`` (FP32 keeps the base profile's ratio to BF16);
* the verify-cost curve t(M) / t(1) of the MoE layer is reported (the simulator derives it
  from distinct experts and the fitted line).

Everything the probe did not measure keeps the base profile's value.
"""

from __future__ import annotations

import copy
from datetime import UTC
from datetime import datetime
from typing import Any


def _line(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least-squares slope and intercept."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    return slope, my - slope * mx


def _times(rows: list[dict[str, Any]]) -> tuple[list[float], str]:
    graphed = [r.get("graph_ms") for r in rows]
    if all(g is not None for g in graphed):
        return [float(g) for g in graphed if g is not None], "cuda-graph"
    return [float(r["ms"]) for r in rows], "eager"


def moe_fit(stage: dict[str, Any], expert_bytes: float, ceiling_gbs: float) -> dict[str, Any]:
    rows = stage["rows"]
    times, how = _times(rows)
    nbytes = [r["distinct_experts"] * expert_bytes for r in rows]
    slope, intercept = _line(nbytes, times)          # ms per byte, ms
    gbs = 1.0 / slope / 1e6 if slope > 0 else float("inf")
    t1 = times[0]
    return {
        "timing": how, "effective_gbs": gbs, "efficiency": gbs / ceiling_gbs,
        "layer_overhead_us": max(0.0, intercept * 1000.0),
        "verify_cost": {int(r["m"]): t / t1 for r, t in zip(rows, times, strict=True)},
        "achieved_gbs_at_m": {int(r["m"]): b / t / 1e6
                              for r, b, t in zip(rows, nbytes, times, strict=True)},
    }


def lm_head_fit(stage: dict[str, Any], ceiling_gbs: float) -> dict[str, Any]:
    rows = stage["rows"]
    vocab, hidden = stage["vocab"], stage["hidden"]
    out: dict[str, Any] = {}
    for dtype, per_param in (("bf16", 2.0), ("fp8", 1.0)):
        ts = [float(r.get(f"{dtype}_graph_ms") or r[f"{dtype}_ms"]) for r in rows]
        t1 = ts[0]
        gbs = vocab * hidden * per_param / t1 / 1e6
        out[dtype] = {"ms_at_m1": t1, "effective_gbs": gbs, "efficiency": gbs / ceiling_gbs,
                      "max_rel_err": max(float(r[f"{dtype}_rel_err"]) for r in rows)}
    return out


def fit(probe: dict[str, Any], base: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(calibrated machine profile, summary of the fit) from a probe and a base profile."""
    errors = {k: v["error"] for k, v in probe.items() if isinstance(v, dict) and "error" in v}
    if "copy" in errors:
        raise ValueError(f"the probe has no copy bandwidth: {errors['copy']}")
    ceiling = float(probe["copy"]["gbs"])
    eb = float(probe["shapes"]["expert_bytes"])
    summary: dict[str, Any] = {"copy_gbs": ceiling, "errors": errors}
    prof = copy.deepcopy(base)
    prof["bandwidth_gbs"] = round(ceiling, 1)
    eff = prof["efficiency"]
    if "moe_w4a16" not in errors and "moe_w4a16" in probe:
        m = moe_fit(probe["moe_w4a16"], eb, ceiling)
        summary["moe_w4a16"] = m
        eff["moe"]["humming"] = round(m["efficiency"], 4)
        prof["moe_layer_overhead_us"] = {"humming": round(m["layer_overhead_us"], 2)}
        if "moe_w4a8" not in errors and "moe_w4a8" in probe:
            m8 = moe_fit(probe["moe_w4a8"], eb, ceiling)
            summary["moe_w4a8"] = m8
            eff.pop("humming_w4a8_penalty", None)          # a base profile's older field
            eff.setdefault("w4a8_penalty", {})["humming"] = round(
                1.0 - m8["efficiency"] / m["efficiency"], 4)
    if "lm_head" not in errors and "lm_head" in probe:
        lm = lm_head_fit(probe["lm_head"], ceiling)
        summary["lm_head"] = lm
        ratio = base["efficiency"]["lm_head"]["fp32"] / base["efficiency"]["lm_head"]["bf16"]
        eff["lm_head"]["bf16"] = round(lm["bf16"]["efficiency"], 4)
        eff["lm_head"]["fp8"] = round(lm["fp8"]["efficiency"], 4)
        eff["lm_head"]["fp32"] = round(lm["bf16"]["efficiency"] * ratio, 4)
    jit = {k: probe[k].get("first_call_s") for k in ("moe_w4a16", "moe_w4a8")
           if isinstance(probe.get(k), dict) and "first_call_s" in probe[k]}
    summary["first_call_s"] = jit
    prof["calibration"] = {
        "source": "tuner probe", "fitted_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "device": probe.get("device"), "torch": probe.get("torch"),
        "humming": probe.get("humming"), "copy_gbs": round(ceiling, 1),
        "fitted": ["bandwidth_gbs", "efficiency.moe.humming", "moe_layer_overhead_us",
                   "efficiency.w4a8_penalty.humming", "efficiency.lm_head"],
    }
    return prof, summary
