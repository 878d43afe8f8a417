"""The ``sglang serve`` command line as SGLang 0.5.23 parses and resolves it.

The parser accepts the flags (and choices) of ``sglang/srt/arg_groups`` that the tuner's
spaces use, with argparse's own errors (exit 2) for unknown flags, bad choices and
ambiguous prefixes. :func:`resolve` applies 0.5.23's resolution rules and returns the flat
resolved dict that ``/server_info`` serves, plus the log lines SGLang prints on the way.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from tuner_sim.speculative import ALGORITHMS
from tuner_sim.speculative import launched


MOE_RUNNER_BACKENDS = [
    "auto", "deep_gemm", "triton", "triton_kernel", "flashinfer_trtllm",
    "experimental_sgl_trtllm", "flashinfer_trtllm_routed", "flashinfer_cutlass",
    "flashinfer_mxfp4", "flashinfer_cutedsl", "flashinfer_megamoe", "cutlass", "aiter",
    "marlin", "humming", "experimental_sgl_marlin", "lora_cutedsl", "lora_triton",
    "lora_marlin", "hpc_ops", "megamoe", "intel_xpu",
]
ATTENTION_BACKENDS = [
    "triton", "torch_native", "flex_attention", "dsa", "nsa", "qsa", "dsv4", "compressed",
    "fa3", "fa4", "flashinfer", "llada2_cfg_flashinfer", "flashmla", "trtllm_mla",
    "cutedsl_mla", "tokenspeed_mla", "trtllm_mha", "hpc_ops", "minicpm_flashattn",
    "minicpm_flashinfer", "aiter", "wave", "intel_amx", "ascend", "intel_xpu",
]
FP8_GEMM_BACKENDS = ["auto", "deep_gemm", "flashinfer_trtllm", "flashinfer_cutlass",
                     "flashinfer_deepgemm", "flashinfer_cutedsl", "cutlass", "triton", "aiter"]
FP4_GEMM_BACKENDS = ["auto", "flashinfer_cudnn", "flashinfer_cutedsl", "flashinfer_cutlass",
                     "flashinfer_trtllm", "marlin"]
QWEN4_EXP = "Qwen4ExpForConditionalGeneration"
LINEAR_ATTN_BACKENDS = ["triton", "cutedsl", "flashinfer", "flashkda", "nvidia_kda",
                        "ptx_kda", "helion", "intel_xpu"]
CUDA_GRAPH_BACKENDS = ["full", "breakable", "disabled"]
QUANTIZATIONS = [
    "awq", "fp8", "mxfp8", "gptq", "gptq_marlin", "awq_marlin", "bitsandbytes", "gguf",
    "modelopt", "modelopt_fp8", "modelopt_fp4", "nvfp4_online", "modelopt_mixed",
    "petit_nvfp4", "w8a8_int8", "w8a8_fp8", "moe_wna16", "w4afp8", "mxfp4", "auto-round",
    "auto-round-int8", "compressed-tensors", "modelslim", "mxfp_w4a8", "quark",
    "quark_int4fp8_moe", "quark_mxfp4", "mlx_q4", "mlx_q8", "unquant", "humming",
]
SPEC_ALGORITHMS = {"EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM", "DFLASH", "DSPARK", "UNO"}
EAGLE_FAMILY = {"EAGLE", "EAGLE3"}
#: Architectures whose draft path SGLang fills in by itself (BailingMoeV3 is not one).
AUTO_DRAFT_PATH = {"BailingMoeForCausalLM", "BailingMoeV2ForCausalLM",
                   "BailingMoeV2_5ForCausalLM", "DeepseekV3ForCausalLM", QWEN4_EXP}


class LaunchError(Exception):
    """A start-up failure, printed the way SGLang prints it (exception class and message)."""

    def __init__(self, exc_type: str, message: str) -> None:
        super().__init__(message)
        self.exc_type = exc_type
        self.message = message


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="sglang serve")
    a = p.add_argument
    a("--model-path", "--model", dest="model_path", required=True)
    a("--tokenizer-path")
    a("--served-model-name")
    a("--host", default="127.0.0.1")
    a("--port", type=int, default=30000)
    a("--api-key")
    a("--config")
    a("--trust-remote-code", action="store_true")
    a("--tp-size", "--tensor-parallel-size", dest="tp_size", type=int, default=1)
    a("--random-seed", type=int)
    a("--quantization", choices=QUANTIZATIONS)
    a("--kv-cache-dtype", default="auto")
    a("--context-length", type=int)
    a("--json-model-override-args", default="{}")
    a("--moe-runner-backend", choices=MOE_RUNNER_BACKENDS, default="auto")
    a("--speculative-moe-runner-backend", choices=MOE_RUNNER_BACKENDS)
    a("--flashinfer-mxfp4-moe-precision", choices=["default", "bf16", "fp8"],
      default="default")
    a("--enable-fp32-lm-head", action="store_true")
    a("--fp8-gemm-backend", dest="fp8_gemm_runner_backend", choices=FP8_GEMM_BACKENDS,
      default="auto")
    a("--fp4-gemm-backend", dest="fp4_gemm_runner_backend", choices=FP4_GEMM_BACKENDS,
      default="auto")
    a("--disable-flashinfer-autotune", action="store_true")
    a("--disable-shared-experts-fusion", action="store_true")
    a("--attention-backend", choices=ATTENTION_BACKENDS)
    a("--decode-attention-backend", choices=ATTENTION_BACKENDS)
    a("--prefill-attention-backend", choices=ATTENTION_BACKENDS)
    a("--linear-attn-backend", choices=LINEAR_ATTN_BACKENDS, default="triton")
    a("--linear-attn-decode-backend", choices=LINEAR_ATTN_BACKENDS)
    a("--linear-attn-verify-backend", choices=[*LINEAR_ATTN_BACKENDS, "nv_cutedsl"])
    a("--enable-linear-replayssm", action="store_true")
    a("--enable-linear-replayssm-spec", action="store_true")
    a("--linear-replayssm-cache-len", type=int, default=16)
    a("--mamba-ssm-dtype")
    a("--mamba-radix-cache-strategy", choices=["auto", "extra_buffer", "extra_buffer_lazy",
                                               "no_buffer"], default="auto")
    # Qwen4-Exp's n-gram (PLE) table (sglang/srt/arg_groups/fields/exec_.py)
    a("--ple-offload-embedding", action=argparse.BooleanOptionalAction, default=None)
    a("--ple-offload-backend", choices=["pinned", "file"], default="pinned")
    a("--ple-offload-dir")
    a("--speculative-algorithm")
    a("--speculative-draft-model-path", "--speculative-draft-model",
      dest="speculative_draft_model_path")
    a("--speculative-num-steps", type=int)
    a("--speculative-eagle-topk", type=int)
    a("--speculative-num-draft-tokens", type=int)
    a("--speculative-draft-attention-backend")
    a("--speculative-dspark-block-size", type=int)
    a("--speculative-dspark-sps-table-path")
    a("--speculative-dspark-confidence-sts-path")
    a("--speculative-dspark-align-verify-tokens-to-graph-tier", action="store_true")
    a("--speculative-dflash-block-size", type=int)
    a("--max-running-requests", type=int)
    a("--max-mamba-cache-size", type=int)
    a("--mamba-track-interval", type=int, default=256)
    a("--mem-fraction-static", type=float)
    a("--chunked-prefill-size", type=int)
    a("--max-prefill-tokens", type=int, default=16384)
    a("--page-size", type=int, default=1)
    a("--cuda-graph-backend-decode", choices=CUDA_GRAPH_BACKENDS)
    a("--cuda-graph-backend-prefill", choices=CUDA_GRAPH_BACKENDS)
    a("--cuda-graph-max-bs-decode", type=int)
    a("--cuda-graph-max-bs-prefill", type=int)
    a("--cuda-graph-bs-decode", type=int, nargs="+")
    a("--cuda-graph-bs-prefill", type=int, nargs="+")
    a("--cuda-graph-config")
    a("--disable-cuda-graph", action="store_true")
    a("--enable-metrics", action="store_true")
    a("--log-level", default="info")
    a("--decode-log-interval", type=int, default=40)
    a("--skip-server-warmup", action="store_true")
    a("--watchdog-timeout", type=float, default=300)
    a("--reasoning-parser")
    a("--tool-call-parser")
    a("--enable-mixed-chunk", action="store_true")
    return p


@dataclass
class Resolved:
    """The resolved server arguments, flat, and what SGLang logs while resolving them."""

    args: dict[str, Any]
    logs: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


#: SGLang 0.5.23's gamma when neither the flag nor the draft checkpoint gives one
#: (sglang/srt/speculative/dspark_components/dspark_config.py)
DEFAULT_DSPARK_GAMMA = 7
RAGGED_VERIFY_MODES = ("static", "cap-accept", "compact")


def _resolve_replayssm(a: dict[str, Any], out: Resolved, env: dict[str, str]) -> None:
    """``--enable-linear-replayssm-spec`` as 0.5.23's attention hook checks it, before any
    algorithm forces its top-k (sglang/srt/arg_groups/attention_hook.py)."""
    if not a["enable_linear_replayssm_spec"]:
        return
    if a["speculative_eagle_topk"] not in (None, 1):
        raise LaunchError("ValueError", "--enable-linear-replayssm-spec requires a linear "
                          "draft chain (--speculative-eagle-topk in {None, 1}); the chunked "
                          "verify kernel uses a strictly-lower causal mask and is invalid for "
                          "EAGLE tree verify. Got --speculative-eagle-topk="
                          f"{a['speculative_eagle_topk']!r}.")
    mode = env.get("SGLANG_RAGGED_VERIFY_MODE", "static")
    algo = (a["speculative_algorithm"] or "").upper()
    verify = a["linear_attn_verify_backend"]
    if mode != "static" and (algo not in ("DSPARK", "DFLASH")
                             or verify not in ("triton", "nv_cutedsl")):
        raise LaunchError("ValueError", "--enable-linear-replayssm-spec with "
                          f"SGLANG_RAGGED_VERIFY_MODE={mode} requires the KDA fold-every-"
                          "commit family (DSPARK/DFLASH) and a ring-writing verify kernel "
                          "(--linear-attn-verify-backend triton or nv_cutedsl); got "
                          f"algorithm={a['speculative_algorithm']!r}, verify={verify!r}. "
                          "Use SGLANG_RAGGED_VERIFY_MODE=static.")
    if a["enable_linear_replayssm"]:
        raise LaunchError("ValueError", "--enable-linear-replayssm-spec and "
                          "--enable-linear-replayssm are mutually exclusive: they share the "
                          "ring storage but drive it with incompatible cursor protocols "
                          "(per-decode-forward vs per-verify-commit advance).")
    if a["mamba_ssm_dtype"] is None:
        a["mamba_ssm_dtype"] = "float32"
        out.logs.append("--enable-linear-replayssm-spec: setting --mamba-ssm-dtype float32 "
                        "(cached replay uses compensated checkpoint projection and "
                        "materialization).")


def _resolve_dspark(a: dict[str, Any], out: Resolved, draft_block: int | None) -> None:
    """``_handle_dspark`` of 0.5.23 (sglang/srt/arg_groups/speculative_hook.py)."""
    if a["speculative_draft_model_path"] is None:
        raise LaunchError("ValueError", "DSpark dense speculative decoding requires setting "
                          "--speculative-draft-model-path.")
    for key in ("speculative_num_steps", "speculative_eagle_topk"):
        if a[key] is not None and int(a[key]) != 1:
            out.warnings.append(f"DSpark only supports {key} == 1; overriding {key}="
                                f"{a[key]} to 1.")
        a[key] = 1
    gamma = a["speculative_dspark_block_size"]
    if gamma is not None and int(gamma) <= 0:
        raise LaunchError("ValueError", "DSpark requires --speculative-dspark-block-size to "
                          f"be positive, got {gamma}.")
    if gamma is None:
        gamma = draft_block
        if gamma is None and a["speculative_num_draft_tokens"] is None:
            gamma = DEFAULT_DSPARK_GAMMA
            out.warnings.append(f"DSpark gamma is not set; defaulting to {gamma}.")
    if gamma is not None:
        window = int(gamma) + 1
        given = a["speculative_num_draft_tokens"]
        if given is not None and int(given) != window:
            raise LaunchError("ValueError", "DSpark speculative_num_draft_tokens must equal "
                              f"gamma + 1 (= {window} for gamma={gamma}), but got "
                              f"speculative_num_draft_tokens={given}.")
        a["speculative_num_draft_tokens"] = window
    if int(a["speculative_num_draft_tokens"]) < 2:
        raise LaunchError("ValueError", "DSpark speculative_num_draft_tokens must be >= 2 "
                          f"(= gamma + 1), got {a['speculative_num_draft_tokens']}.")
    if a["max_running_requests"] is None:
        a["max_running_requests"] = 48
        out.warnings.append("Max running requests is reset to 48 for speculative decoding. "
                            "You can override this by explicitly setting "
                            "--max-running-requests.")


def _resolve_qwen4_exp(a: dict[str, Any], out: Resolved, major: int) -> None:
    """Qwen4-Exp's rules in 0.5.23: the PLE offload (on by default for its BF16-dtype
    checkpoints on CUDA, ``model_overrides/qwen4_exp.py``; the file backend needs it,
    ``memory_hook.py``), page size 64 for the compressed QSA indexer, and the NVFP4 MoE
    runner: ``auto`` with ``--quantization modelopt_fp4`` on SM12x is flashinfer_cutlass
    (``overrides.py``); otherwise the NVFP4 MoE method's auto is flashinfer_trtllm, whose
    trtllm-gen kernels are SM100-only (a GB10 fails at start-up, the cookbook's note)."""
    if a["ple_offload_embedding"] is None:
        a["ple_offload_embedding"] = True
    if a["ple_offload_backend"] == "file" and a["ple_offload_embedding"] is False:
        raise LaunchError("ValueError", "--ple-offload-backend file requires "
                          "--ple-offload-embedding: the file-backed table is the offloaded "
                          "table.")
    if a["page_size"] != 64:
        a["page_size"] = 64
        out.logs.append("Setting page size to 64 for compressed QSA (full//ratio compressed "
                        "addressing).")
    if a["moe_runner_backend"] == "auto":
        if a["quantization"] == "modelopt_fp4" and major in (11, 12):
            a["moe_runner_backend"] = "flashinfer_cutlass"
            out.logs.append("Use flashinfer_cutlass as MoE runner backend on SM110/SM120 for "
                            "modelopt_fp4 (trtllm-gen MoE kernels are SM100-only)")
        elif major >= 10:
            a["moe_runner_backend"] = "flashinfer_trtllm"
    if a["moe_runner_backend"] == "flashinfer_trtllm" and major != 10:
        raise LaunchError("RuntimeError", "simulator: the NVFP4 MoE method's "
                          "flashinfer_trtllm runner fails at FlashInfer autotune on sm "
                          f"{major}x (trtllm-gen MoE kernels are SM100-only); pass "
                          "--quantization modelopt_fp4 or --moe-runner-backend "
                          "flashinfer_cutlass")
    a["quantization"] = a["quantization"] or "modelopt_fp4"


def resolve(ns: argparse.Namespace, *, architecture: str, capability: tuple[int, int],
            model_context: int, env: dict[str, str], memory_gb: float,
            draft_block: int | None = None) -> Resolved:
    """Apply SGLang 0.5.23's resolution rules (docs/sglang-facts.md, "Resolution rules").
    ``draft_block`` is the block size the DSPARK draft checkpoint declares (None: none)."""
    a = dict(vars(ns))
    out = Resolved(args=a)
    mode = env.get("SGLANG_RAGGED_VERIFY_MODE", "static")
    if mode not in RAGGED_VERIFY_MODES:
        raise LaunchError("ValueError", f"invalid SGLANG_RAGGED_VERIFY_MODE={mode!r}; "
                          "expected one of 'static', 'cap-accept', 'compact'")
    _resolve_replayssm(a, out, env)
    if a["disable_cuda_graph"]:
        out.warnings.append("'--disable-cuda-graph' is deprecated and will be removed in a "
                            "future release. Use '--cuda-graph-backend-{decode,prefill}="
                            "disabled' instead.")
    major = capability[0]
    if architecture == QWEN4_EXP:
        _resolve_qwen4_exp(a, out, major)
    elif a["ple_offload_embedding"]:
        raise LaunchError("ValueError", "--ple-offload-embedding only supports "
                          "Qwen4ExpForConditionalGeneration")
    # MoE backend: auto picks flashinfer_mxfp4 for Ling-3.0's mixed FP8/MXFP4 checkpoint.
    a["quantization"] = a["quantization"] or "fp8"
    if a["moe_runner_backend"] == "auto" and architecture == "BailingMoeV3ForCausalLM" and (
            major in (9, 10, 12)):
        a["moe_runner_backend"] = "flashinfer_mxfp4"
        out.logs.append("Bailing V3 mixed FP8/MXFP4 checkpoint: "
                        f"moe_runner_backend=flashinfer_mxfp4 for {architecture}.")
    if a["moe_runner_backend"] == "flashinfer_mxfp4" and major not in (9, 10, 12):
        raise LaunchError("NotImplementedError", "moe_runner_backend=flashinfer_mxfp4 "
                                                 "requires SM90, SM100, or SM120.")
    # Context length.
    if a["context_length"] is None:
        a["context_length"] = model_context
    elif a["context_length"] > model_context and env.get(
            "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN", "").lower() not in ("1", "true"):
        raise LaunchError("ValueError", f"User-specified context_length ({a['context_length']})"
                          f" is greater than the derived context_length ({model_context}). To "
                          "allow overriding this maximum, set the env var "
                          "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1")
    # Speculative decoding.
    algo = a["speculative_algorithm"]
    if algo is not None:
        name = algo.upper()
        if name not in SPEC_ALGORITHMS:
            raise LaunchError("ValueError", f"Unknown speculative algorithm name: {name}")
        if name == "NEXTN":
            name = "EAGLE"
        a["speculative_algorithm"] = name
        if launched(name) is None:
            modelled = ", ".join("/".join(a.launched) for a in ALGORITHMS.values())
            raise LaunchError("NotImplementedError", f"simulator: speculative algorithm "
                              f"{name} is not modelled ({modelled} are)")
        if name == "DSPARK":
            _resolve_dspark(a, out, draft_block)
        if name in EAGLE_FAMILY:
            if a["speculative_draft_model_path"] is None:
                if architecture in AUTO_DRAFT_PATH:
                    a["speculative_draft_model_path"] = a["model_path"]
                else:
                    raise LaunchError("ValueError", "speculative_draft_model_path is not set "
                                      f"and cannot be inferred for {architecture}; pass "
                                      "--speculative-draft-model-path")
            if a["speculative_num_steps"] is None:
                if a["speculative_eagle_topk"] is not None or (
                        a["speculative_num_draft_tokens"] is not None):
                    raise LaunchError("AssertionError", "")
                a["speculative_num_steps"], a["speculative_eagle_topk"], \
                    a["speculative_num_draft_tokens"] = 3, 1, 4
            if a["speculative_eagle_topk"] is None:
                a["speculative_eagle_topk"] = 1
            if a["speculative_num_draft_tokens"] is None:
                a["speculative_num_draft_tokens"] = a["speculative_num_steps"] + 1
            if a["speculative_eagle_topk"] == 1 and (
                    a["speculative_num_draft_tokens"] != a["speculative_num_steps"] + 1):
                out.logs.append("speculative_num_draft_tokens is adjusted to "
                                "speculative_num_steps + 1 when speculative_eagle_topk == 1")
                a["speculative_num_draft_tokens"] = a["speculative_num_steps"] + 1
            if a["max_running_requests"] is None:
                a["max_running_requests"] = 48
                out.logs.append("Max running requests is reset to 48 for speculative "
                                "decoding. You can override this by explicitly setting "
                                "--max-running-requests.")
        if a["mamba_track_interval"] < a["speculative_num_draft_tokens"]:
            raise LaunchError("AssertionError", "mamba_track_interval must be >= "
                              "speculative_num_draft_tokens")
        if a["speculative_moe_runner_backend"] is None:
            a["speculative_moe_runner_backend"] = a["moe_runner_backend"]
    else:
        for k in ("speculative_num_steps", "speculative_eagle_topk",
                  "speculative_num_draft_tokens", "speculative_moe_runner_backend"):
            a[k] = None
    # Memory-derived defaults.
    if a["chunked_prefill_size"] is None:
        a["chunked_prefill_size"] = 8192 if memory_gb >= 60 else 4096
    if a["chunked_prefill_size"] > 0 and a["chunked_prefill_size"] % a["page_size"] != 0:
        raise LaunchError("AssertionError", "chunked_prefill_size must be divisible by "
                                            "page_size")
    if a["max_running_requests"] is None:
        a["max_running_requests"] = 256
    if a["mem_fraction_static"] is None:
        reserved = max(512 + max(a["chunked_prefill_size"], 2048) * 1.5 + 1024 / 8, 10240)
        a["mem_fraction_static"] = round((memory_gb * 1024 - reserved) / (memory_gb * 1024), 3)
    # CUDA graphs.
    decode_backend = a["cuda_graph_backend_decode"] or "full"
    prefill_backend = a["cuda_graph_backend_prefill"] or "breakable"
    if a["disable_cuda_graph"]:
        decode_backend = prefill_backend = "disabled"
    max_bs = a["cuda_graph_max_bs_decode"]
    if max_bs is None:
        max_bs = 256 if memory_gb >= 60 else 32
    max_bs = min(max_bs, a["max_running_requests"])
    bs = a["cuda_graph_bs_decode"] or sorted({1, 2, 4, 8, *range(16, max_bs + 1, 16)} & set(
        range(1, max_bs + 1)))
    graph = {"decode": {"backend": decode_backend, "max_bs": max_bs, "bs": bs},
             "prefill": {"backend": prefill_backend,
                         "max_bs": a["cuda_graph_max_bs_prefill"] or 1,
                         "bs": a["cuda_graph_bs_prefill"] or [1]}}
    if a["cuda_graph_config"]:
        try:
            graph.update(json.loads(a["cuda_graph_config"]))
        except json.JSONDecodeError as exc:
            raise LaunchError("ValueError", f"Invalid --cuda-graph-config: {exc}") from None
    a["cuda_graph_config"] = graph
    a["attention_backend"] = a["attention_backend"] or "flashinfer"
    a["served_model_name"] = a["served_model_name"] or a["model_path"]
    a["tokenizer_path"] = a["tokenizer_path"] or a["model_path"]
    a["random_seed"] = a["random_seed"] if a["random_seed"] is not None else 0
    return out
