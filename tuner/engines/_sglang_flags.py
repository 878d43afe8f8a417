"""SGLang 0.5.23 server flags the tuner may emit, with their kinds and choices.

Source: the sglang 0.5.23 wheel (``sglang/srt/arg_groups/fields/*.py``,
``arg_groups/choices.py``, ``server_args.py::add_cli_args``); see
``docs/sglang-facts.md``. A flag missing here is refused when a space
is validated, unless the space lists it under ``engine.extra_flags`` (a fork's flag).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Flag:
    name: str
    store_true: bool = False
    choices: tuple[str, ...] | None = None
    nargs: bool = False
    case_insensitive: bool = False


MOE_RUNNER_BACKENDS = (
    "auto", "deep_gemm", "triton", "triton_kernel", "flashinfer_trtllm",
    "experimental_sgl_trtllm", "flashinfer_trtllm_routed", "flashinfer_cutlass",
    "flashinfer_mxfp4", "flashinfer_cutedsl", "flashinfer_megamoe", "cutlass", "aiter",
    "marlin", "humming", "experimental_sgl_marlin", "lora_cutedsl", "lora_triton",
    "lora_marlin", "hpc_ops", "megamoe", "intel_xpu",
)
ATTENTION_BACKENDS = (
    "triton", "torch_native", "flex_attention", "dsa", "nsa", "qsa", "dsv4", "compressed",
    "fa3", "fa4", "flashinfer", "llada2_cfg_flashinfer", "flashmla", "trtllm_mla",
    "cutedsl_mla", "tokenspeed_mla", "trtllm_mha", "hpc_ops", "minicpm_flashattn",
    "minicpm_flashinfer", "aiter", "wave", "intel_amx", "ascend", "intel_xpu",
)
QUANTIZATIONS = (
    "awq", "fp8", "mxfp8", "gptq", "gptq_marlin", "awq_marlin", "bitsandbytes", "gguf",
    "modelopt", "modelopt_fp8", "modelopt_fp4", "nvfp4_online", "modelopt_mixed",
    "petit_nvfp4", "w8a8_int8", "w8a8_fp8", "moe_wna16", "w4afp8", "mxfp4", "auto-round",
    "auto-round-int8", "compressed-tensors", "modelslim", "mxfp_w4a8", "quark",
    "quark_int4fp8_moe", "quark_mxfp4", "mlx_q4", "mlx_q8", "unquant", "humming",
)
FP8_GEMM_BACKENDS = (
    "auto", "deep_gemm", "flashinfer_trtllm", "flashinfer_cutlass", "flashinfer_deepgemm",
    "flashinfer_cutedsl", "cutlass", "triton", "aiter",
)
LINEAR_ATTN_BACKENDS = (
    "triton", "cutedsl", "flashinfer", "flashkda", "nvidia_kda", "ptx_kda", "helion",
    "intel_xpu",
)
DRAFT_ATTENTION_BACKENDS = (
    "flashinfer", "fa3", "fa4", "triton", "ascend", "trtllm_mha", "intel_xpu",
)
CUDA_GRAPH_BACKENDS = ("full", "breakable", "disabled")
#: Builtin names of ``--speculative-algorithm`` (upper-cased by SGLang; MTP is not one).
SPECULATIVE_ALGORITHMS = (
    "EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM", "DFLASH", "DSPARK", "UNO",
)
#: Algorithms SGLang treats as the EAGLE family (defaults (3, 1, 4), max running reqs 48).
EAGLE_FAMILY = ("EAGLE", "EAGLE3", "NEXTN")

_FLAGS = [
    Flag("--model-path"),
    Flag("--host"),
    Flag("--port"),
    Flag("--api-key"),
    Flag("--config"),
    Flag("--served-model-name"),
    Flag("--trust-remote-code", store_true=True),
    Flag("--tp-size"),
    Flag("--moe-runner-backend", choices=MOE_RUNNER_BACKENDS),
    Flag("--speculative-moe-runner-backend", choices=MOE_RUNNER_BACKENDS),
    Flag("--flashinfer-mxfp4-moe-precision", choices=("default", "bf16", "fp8")),
    Flag("--enable-fp32-lm-head", store_true=True),
    Flag("--speculative-algorithm", choices=SPECULATIVE_ALGORITHMS, case_insensitive=True),
    Flag("--speculative-draft-model-path"),
    Flag("--speculative-num-steps"),
    Flag("--speculative-eagle-topk"),
    Flag("--speculative-num-draft-tokens"),
    Flag("--speculative-draft-attention-backend", choices=DRAFT_ATTENTION_BACKENDS),
    Flag("--max-running-requests"),
    Flag("--mem-fraction-static"),
    Flag("--cuda-graph-backend-decode", choices=CUDA_GRAPH_BACKENDS),
    Flag("--cuda-graph-backend-prefill", choices=CUDA_GRAPH_BACKENDS),
    Flag("--cuda-graph-max-bs-decode"),
    Flag("--cuda-graph-max-bs-prefill"),
    Flag("--cuda-graph-bs-decode", nargs=True),
    Flag("--cuda-graph-bs-prefill", nargs=True),
    Flag("--cuda-graph-config"),
    Flag("--quantization", choices=QUANTIZATIONS),
    Flag("--attention-backend", choices=ATTENTION_BACKENDS),
    Flag("--decode-attention-backend", choices=ATTENTION_BACKENDS),
    Flag("--prefill-attention-backend", choices=ATTENTION_BACKENDS),
    Flag("--linear-attn-backend", choices=LINEAR_ATTN_BACKENDS),
    Flag("--max-mamba-cache-size"),
    Flag("--mamba-track-interval"),
    Flag("--linear-replayssm-cache-len"),
    Flag("--context-length"),
    Flag("--chunked-prefill-size"),
    Flag("--max-prefill-tokens"),
    Flag("--page-size"),
    Flag("--kv-cache-dtype"),
    Flag("--enable-metrics", store_true=True),
    Flag("--log-level"),
    Flag("--decode-log-interval"),
    Flag("--disable-shared-experts-fusion", store_true=True),
    Flag("--fp8-gemm-backend", choices=FP8_GEMM_BACKENDS),
    Flag("--disable-flashinfer-autotune", store_true=True),
    Flag("--json-model-override-args"),
    Flag("--random-seed"),
    Flag("--skip-server-warmup", store_true=True),
    Flag("--watchdog-timeout"),
    Flag("--reasoning-parser"),
    Flag("--tool-call-parser"),
    Flag("--enable-mixed-chunk", store_true=True),
]

FLAGS: dict[str, Flag] = {f.name: f for f in _FLAGS}

#: Flags that no longer exist in 0.5.23 and what replaced them (argparse calls them ambiguous).
REMOVED_FLAGS = {
    "--cuda-graph-max-bs": "--cuda-graph-max-bs-decode / --cuda-graph-max-bs-prefill",
    "--cuda-graph-bs": "--cuda-graph-bs-decode / --cuda-graph-bs-prefill",
}


#: Flags whose ``--config`` key SGLang 0.5.17 refuses ("Unsupported config option
#: 'cuda_graph_backend_prefill' with action 'DeprecatedStoreConstAction'", seen on the H200,
#: docs/real-sglang-h200.md): 0.5.17's ConfigArgumentMerger
#: (sglang/srt/server_args_config_parser.py, ``__init__``) refuses every key that is the
#: ``dest`` of a non-store action, and these real flags share their dest with a deprecated
#: alias (sglang/srt/server_args.py, the ``Deprecated*Action`` aliases). 0.5.23's merger
#: keeps a key a plain flag also reads usable. Generated from the 0.5.17 wheel by
#: ``benchmarks/real_sglang/config_refused.py``. An exported profile keeps these flags on
#: the command line, where every version takes them.
CONFIG_REFUSED = frozenset({
    "--cuda-graph-backend-prefill", "--cuda-graph-bs-decode", "--cuda-graph-bs-prefill",
    "--cuda-graph-max-bs-decode", "--cuda-graph-max-bs-prefill", "--cuda-graph-tc-compiler",
    "--disable-cuda-graph", "--dsa-decode-backend", "--dsa-prefill-backend",
    "--dsa-prefill-cp-mode", "--enable-dsa-prefill-context-parallel",
    "--enable-linear-replayssm-spec", "--enable-prefill-context-parallel",
    "--incremental-streaming-output", "--mamba-radix-cache-strategy", "--prefill-cp-mode",
    "--speculative-draft-window-size",
})
