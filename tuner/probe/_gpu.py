"""GPU measurements for ``tuner probe``. Imports torch (and humming-kernels) only here.

Runs standalone too, so a GPU box needs nothing of the tuner's own dependencies:

    python -m tuner.probe._gpu --shapes '{"hidden":2560,...}' --out probe.json

Measured, each timed with ``triton.testing.do_bench`` (CUDA events, warm-up, median) over
several input sets, eagerly (launch gaps included, as a Python caller pays them) and as a
CUDA-graph replay (as SGLang's decode runs under CUDA graphs) where the work can be captured:

* ``copy``: device-to-device copy bandwidth (bytes read + written): the ceiling;
* ``moe``: one MoE layer of the model (gate-up GEMM, SiLU-and-mul, down GEMM) with MXFP4
  routed-expert weights through Humming's indexed MoE GEMM, BF16 activations (W4A16) and,
  where the GPU has FP8 tensor cores, FP8 activations (W4A8), for M = 1..16 tokens routed
  top-k of E with random routing; distinct experts counted per input set;
* ``stream``: the same bytes read by a plain gather (``index_select``) of the distinct
  experts' MXFP4 blocks, for comparison (a copy and a sum: not a roofline);
* ``lm_head``: the vocab GEMM at BF16 and FP8 (``torch._scaled_mm``, per-tensor scales) for
  M = 1..16, with the relative error of each against an FP32 reference;
* ``jit``: the wall time Humming spent compiling the kernels for these shapes into the
  cache directory (``HUMMING_CACHE_DIR``).

A stage that fails records its error and traceback instead of stopping the run.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import traceback
from typing import Any


def _bench(fn: Any, reps_ms: int = 200) -> float:
    import triton

    return float(triton.testing.do_bench(fn, warmup=25, rep=reps_ms, return_mode="median"))


def _bench_graph(fn: Any) -> float | None:
    """Median replay time of ``fn`` captured in a CUDA graph (no launch gaps), or None when
    it cannot be captured."""
    import torch

    try:
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(3):
                fn()
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            fn()
        torch.cuda.synchronize()
        return _bench(graph.replay)
    except Exception:
        torch.cuda.synchronize()
        return None


def copy_bandwidth(nbytes: int = 2 << 30) -> dict[str, Any]:
    import torch

    x = torch.empty(nbytes // 2, dtype=torch.bfloat16, device="cuda").normal_()
    y = torch.empty_like(x)
    ms = _bench(lambda: y.copy_(x))
    return {"bytes": 2 * nbytes, "ms": ms, "gbs": 2 * nbytes / ms / 1e6}


def _routing(m: int, experts: int, top_k: int, seed: int) -> Any:
    import torch

    g = torch.Generator(device="cuda").manual_seed(seed)
    logits = torch.randn(m, experts, device="cuda", generator=g)
    return torch.topk(logits, top_k, dim=-1).indices.to(torch.int32)


def _mxfp4_layer(shape_n: int, shape_k: int, experts: int, a_dtype: str | None) -> Any:
    import torch
    from humming.layer import HummingLayer

    input_config = {"dtype": a_dtype} if a_dtype else None
    layer = HummingLayer(shape_n=shape_n, shape_k=shape_k,
                         weight_config={"quant_method": "mxfp4"}, input_config=input_config,
                         num_experts=experts, torch_dtype=torch.bfloat16,
                         pad_n_to_multiple=256, pad_k_to_multiple=128)
    with torch.no_grad():
        layer.weight.copy_(torch.randint(0, 256, layer.weight.shape, dtype=torch.uint8))
        # E8M0 scales around 2^-4: finite, well-scaled products
        layer.weight_scale.copy_(torch.randint(120, 124, layer.weight_scale.shape,
                                               dtype=torch.uint8))
    layer = layer.cuda()
    layer.transform()
    return layer


def moe_layer(s: dict[str, Any], a_dtype: str | None, m_values: list[int], sets: int
              ) -> dict[str, Any]:
    import torch
    from humming.config import GemmType
    from humming.testing.data import generate_moe_tensors
    from humming.tune import get_heuristics_config

    experts, top_k, hidden, inter = s["experts"], s["top_k"], s["hidden"], s["intermediate"]
    t0 = time.perf_counter()
    w13 = _mxfp4_layer(2 * inter, hidden, experts, a_dtype)
    w2 = _mxfp4_layer(hidden, inter, experts, a_dtype)
    cfg13 = get_heuristics_config(w13.humming_metas[""], gemm_type=GemmType.INDEXED)
    cfg2 = get_heuristics_config(w2.humming_metas[""], gemm_type=GemmType.INDEXED)
    compute = {"gemm_type": "indexed"}
    rows = []
    jit_s = None
    for m in m_values:
        times, distinct, graphed = [], [], []
        for k in range(sets):
            ids = _routing(m, experts, top_k, seed=1000 * m + k)
            distinct.append(int(torch.unique(ids).numel()))
            valid = m * top_k
            block = next(c["block_shape"][0] for lo, hi, c in cfg13 if lo < valid <= hi)
            _, _, sorted_ids, expert_ids, padded = generate_moe_tensors(
                ids, experts, gemm_type=GemmType.INDEXED, block_size_config=block)
            x = torch.randn(m, hidden, dtype=torch.bfloat16, device="cuda") * 0.1

            def run(x=x, ids=ids, sorted_ids=sorted_ids, expert_ids=expert_ids,
                    padded=padded, valid=valid) -> Any:
                gu = w13(x, sorted_ids=sorted_ids, expert_ids=expert_ids,
                         num_tokens_padded=padded, top_k=top_k, valid_shape_m=valid,
                         compute_config=compute, tuning_config=cfg13)
                gate, up = gu.view(valid, 2, -1).unbind(1)
                act = (torch.nn.functional.silu(gate.float()) * up.float()).to(torch.bfloat16)
                return w2(act, sorted_ids=sorted_ids, expert_ids=expert_ids,
                          num_tokens_padded=padded, top_k=1, valid_shape_m=valid,
                          compute_config=compute, tuning_config=cfg2)

            out = run()
            torch.cuda.synchronize()
            if jit_s is None:
                jit_s = time.perf_counter() - t0
            if not torch.isfinite(out.float()).all():
                raise RuntimeError(f"non-finite MoE output at M={m}")
            times.append(_bench(run))
            graphed.append(_bench_graph(run))
        ok = [g for g in graphed if g is not None]
        rows.append({"m": m, "ms": sorted(times)[len(times) // 2], "ms_all": times,
                     "graph_ms": sorted(ok)[len(ok) // 2] if ok else None,
                     "distinct_experts": sum(distinct) / len(distinct)})
    return {"a_dtype": a_dtype or "bfloat16", "rows": rows, "first_call_s": jit_s}


def expert_stream(s: dict[str, Any], m_values: list[int], sets: int) -> dict[str, Any]:
    """Read exactly the distinct experts' MXFP4 bytes (a roofline for the MoE layer)."""
    import torch

    experts, top_k = s["experts"], s["top_k"]
    per_expert = int(s["expert_bytes"])
    pool = torch.empty(experts, per_expert // 4, dtype=torch.int32, device="cuda").random_()
    rows = []
    for m in m_values:
        times, distinct = [], []
        for k in range(sets):
            ids = torch.unique(_routing(m, experts, top_k, seed=1000 * m + k)).long()
            distinct.append(int(ids.numel()))
            ms = _bench_graph(lambda ids=ids: pool.index_select(0, ids).sum())
            times.append(ms if ms is not None else _bench(
                lambda ids=ids: pool.index_select(0, ids).sum()))
        rows.append({"m": m, "ms": sorted(times)[len(times) // 2],
                     "distinct_experts": sum(distinct) / len(distinct)})
    return {"expert_bytes": per_expert, "rows": rows}


def lm_head(s: dict[str, Any], m_values: list[int]) -> dict[str, Any]:
    import torch

    vocab, hidden = s["vocab"], s["hidden"]
    w = torch.randn(vocab, hidden, dtype=torch.bfloat16, device="cuda") * 0.02
    w_scale = w.abs().max().float() / 448.0
    w8 = (w.float() / w_scale).to(torch.float8_e4m3fn)
    rows = []
    for m in m_values:
        x = torch.randn(m, hidden, dtype=torch.bfloat16, device="cuda")
        ref = x.double() @ w.double().T
        bf = x @ w.T
        x_scale = x.abs().max().float() / 448.0
        pad = (-m) % 16
        x8 = torch.nn.functional.pad((x.float() / x_scale), (0, 0, 0, pad)).to(
            torch.float8_e4m3fn)

        def fp8(x8=x8, x_scale=x_scale) -> Any:
            return torch._scaled_mm(x8, w8.T, scale_a=x_scale, scale_b=w_scale,
                                    out_dtype=torch.bfloat16)

        out8 = fp8()[:m]

        def rel(a: Any, ref: Any = ref) -> float:
            return float((a.double() - ref).norm() / ref.norm())

        rows.append({"m": m, "bf16_ms": _bench(lambda x=x: x @ w.T), "fp8_ms": _bench(fp8),
                     "bf16_graph_ms": _bench_graph(lambda x=x: x @ w.T),
                     "fp8_graph_ms": _bench_graph(fp8),
                     "bf16_rel_err": rel(bf), "fp8_rel_err": rel(out8)})
    return {"vocab": vocab, "hidden": hidden, "rows": rows}


def _stage(out: dict[str, Any], name: str, fn: Any) -> None:
    t0 = time.perf_counter()
    try:
        out[name] = fn()
        out[name]["stage_s"] = time.perf_counter() - t0
    except Exception as exc:  # a failed stage is recorded, the probe goes on
        out[name] = {"error": f"{exc.__class__.__name__}: {exc}",
                     "traceback": traceback.format_exc()[-4000:]}


def run(shapes: dict[str, Any], m_values: list[int], sets: int = 3) -> dict[str, Any]:
    import torch

    props = torch.cuda.get_device_properties(0)
    out: dict[str, Any] = {
        "probe_version": 1, "shapes": shapes, "m_values": m_values,
        "device": {"name": props.name, "capability": list(torch.cuda.get_device_capability()),
                   "memory_gib": props.total_memory / 2**30,
                   "multiprocessors": props.multi_processor_count},
        "torch": torch.__version__, "humming_cache_dir": os.environ.get("HUMMING_CACHE_DIR"),
    }
    try:
        import humming

        out["humming"] = getattr(humming, "__version__", "?")
    except Exception as exc:
        out["humming"] = f"unavailable: {exc}"
    _stage(out, "copy", copy_bandwidth)
    _stage(out, "stream", lambda: expert_stream(shapes, m_values, sets))
    _stage(out, "lm_head", lambda: lm_head(shapes, m_values))
    _stage(out, "moe_w4a16", lambda: moe_layer(shapes, None, m_values, sets))
    if torch.cuda.get_device_capability() >= (8, 9):
        _stage(out, "moe_w4a8", lambda: moe_layer(shapes, "float8e4m3", m_values, sets))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m tuner.probe._gpu")
    ap.add_argument("--shapes", required=True, help="JSON from tuner.probe._shapes")
    ap.add_argument("--m", default="1,2,3,4,5,6,8,12,16")
    ap.add_argument("--sets", type=int, default=3)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    result = run(json.loads(args.shapes), [int(v) for v in args.m.split(",")], args.sets)
    with open(args.out, "w") as fh:
        json.dump(result, fh, indent=2)
    for key in ("copy", "stream", "lm_head", "moe_w4a16", "moe_w4a8"):
        v = result.get(key)
        print(key, "ERROR " + v["error"] if isinstance(v, dict) and "error" in v else "ok")


if __name__ == "__main__":
    main()
