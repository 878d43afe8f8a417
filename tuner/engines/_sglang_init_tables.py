"""What SGLang 0.5.23 offers a MoE model, by quantization, GPU and architecture: the facts
``tuner init`` writes a space from (:mod:`tuner.engines._sglang_init`), each with the file
of the 0.5.23 wheel (``sglang/srt/...``) or the published recipe it comes from.

Nothing here is guessed from a flag's name: a backend is listed for a layout only where the
layout's MoE method in the wheel dispatches to it, for the GPUs the wheel's code (or its
asserts) admits; what is not listed is not offered.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
from typing import Any


@dataclass(frozen=True)
class Backend:
    name: str
    #: compute-capability majors the wheel's code serves it on
    majors: frozenset[int]
    source: str
    #: log lines that prove it beyond /server_info (regular expressions)
    log: tuple[str, ...] = ()


_ALL = frozenset({8, 9, 10, 12})
#: --moe-runner-backend values per quantization layout (``auto`` resolves in the runner)
MOE_BACKENDS: dict[str, tuple[Backend, ...]] = {
    "fp8_block_mxfp4_experts": (
        Backend("flashinfer_mxfp4", frozenset({9, 10, 12}),
                "layers/quantization/fp8.py: Mxfp4FlashinferCutlass/TrtllmMoEMethod "
                "(SM90, SM100, SM120)"),
        Backend("humming", frozenset({9, 10, 12}),
                "layers/quantization/fp8.py: Mxfp4HummingMoEMethod (humming-kernels "
                "heuristics for sm90, sm100, sm120/121)",
                ("Preparing DeepSeekV4 MXFP4 experts for Humming backend",
                 "gemm for humming moe")),
        Backend("marlin", _ALL, "layers/quantization/fp8.py: Mxfp4MarlinMoEMethod"),
    ),
    "mxfp4": (
        Backend("triton_kernel", frozenset({9}),
                "layers/quantization/mxfp4.py: Mxfp4MoEMethod use_triton_kernels (SGLang's "
                "own pick on Hopper, model_overrides/gpt_oss.py)"),
        Backend("flashinfer_mxfp4", frozenset({9, 10, 12}),
                "layers/quantization/mxfp4.py: FlashInfer SM90 / SM100 / SM120 entry points"),
        Backend("marlin", _ALL, "layers/quantization/mxfp4.py: Mxfp4MoEMethod use_marlin"),
    ),
    "fp8_block": (
        Backend("auto", _ALL, "layers/quantization/fp8.py: Fp8MoEMethod, the Triton runner "
                "when no all-to-all backend is set (is_deepgemm_moe_runner_backend_enabled)"),
        Backend("deep_gemm", frozenset({9, 10}),
                "layers/quantization/fp8.py: the DeepGEMM grouped GEMM (SM90/SM100)"),
        Backend("cutlass", frozenset({9, 10, 12}),
                "layers/quantization/fp8.py: cutlass_fp8 MoE (block quant, SM90/100/120)"),
    ),
    # ModelOptNvFp4FusedMoEMethod (layers/quantization/modelopt_quant.py) dispatches to
    # marlin, flashinfer_trtllm(_routed), flashinfer_cutedsl, flashinfer_cutlass and
    # flashinfer_megamoe (the last only under the megamoe all-to-all backend).
    "modelopt_nvfp4": (
        Backend("flashinfer_cutlass", frozenset({10, 12}),
                "layers/quantization/modelopt_quant.py: ModelOptNvFp4FusedMoEMethod's "
                "FlashInfer CUTLASS FP4 path; arg_groups/overrides.py resolves auto to it "
                "for modelopt_fp4 on SM110/SM120 (the cookbook's Spark cells run it)"),
        Backend("marlin", _ALL,
                "layers/quantization/modelopt_quant.py: ModelOptNvFp4FusedMoEMethod takes "
                "--moe-runner-backend marlin on any CUDA GPU (its Marlin FP4 path, "
                "'moe_runner_backend=marlin on SM80+')"),
        Backend("flashinfer_trtllm", frozenset({10}),
                "layers/quantization/modelopt_quant.py: the TRT-LLM FP4 MoE; "
                "arg_groups/overrides.py: 'trtllm-gen MoE kernels are SM100-only'"),
    ),
    "bf16": (
        Backend("auto", _ALL, "layers/quantization/unquant.py: the Triton fused MoE"),
        Backend("triton_kernel", frozenset({9}),
                "layers/quantization/unquant.py: the triton_kernels path (Hopper)"),
    ),
}

#: SGLang's own resolution of ``auto`` where a model override sets it (then ``auto`` is
#: not offered beside it: both would launch the same kernel). (architecture, layout) ->
#: {compute-capability major: backend}.
AUTO_RESOLVES: dict[tuple[str, str], dict[int, str]] = {
    ("BailingMoeV3ForCausalLM", "fp8_block_mxfp4_experts"): {9: "flashinfer_mxfp4",
                                                             10: "flashinfer_mxfp4",
                                                             12: "flashinfer_mxfp4"},
    # model_overrides/gpt_oss.py: SM100/SM120 FlashInfer MXFP4, else triton_kernels
    ("GptOssForCausalLM", "mxfp4"): {9: "triton_kernel", 10: "flashinfer_mxfp4",
                                     12: "flashinfer_mxfp4"},
    # with --quantization modelopt_fp4: model_overrides/qwen3_moe.py on SM100,
    # arg_groups/overrides.py (_moe_runner_backend_quant_constraints) on SM110/SM120
    ("Qwen4ExpForConditionalGeneration", "modelopt_nvfp4"): {10: "flashinfer_trtllm",
                                                             12: "flashinfer_cutlass"},
}

#: Backends a layout dispatches to that are not offered, and why (written into the space).
UNPROVEN_BACKENDS: dict[tuple[str, str], dict[str, str]] = {
    ("Qwen4ExpForConditionalGeneration", "modelopt_nvfp4"): {
        "flashinfer_cutedsl": "ModelOptNvFp4FusedMoEMethod dispatches to it, but no source "
                              "here shows its CuTe DSL NVFP4 kernels on sm_12x (the "
                              "cookbook's Spark cells pin flashinfer_cutlass); add it by "
                              "hand to try it"},
}

#: Backends a model's own top-k cannot feed: (architecture, layout) -> {backend: why}.
#: DeepSeek-V2/V3 without a quantization config force the STANDARD top-k output
#: (models/deepseek_v2.py, the grouped noaux_tc TopK's output_format, in 0.5.17 and 0.5.23),
#: and the triton_kernel runner asserts a TritonKernelTopKOutput: on the H200 with 0.5.17
#: the tiny DeepSeek-V3's launch died at start-up so, twice
#: ("AssertionError: Triton-kernel runner expects TritonKernelTopKOutput").
TOPK_REFUSES: dict[tuple[str, str], dict[str, str]] = {
    ("DeepseekV3ForCausalLM", "bf16"): {
        "triton_kernel": "models/deepseek_v2.py forces the STANDARD top-k output for an "
                         "unquantized model, and the triton_kernel runner asserts a "
                         "TritonKernelTopKOutput (seen at start-up on the H200, 0.5.17)"},
}

#: Architectures whose NEXTN draft is the checkpoint's own MTP layer, and how SGLang
#: 0.5.23 loads it (configs/model_config.py rewrites the draft's architecture).
NEXTN_DRAFTS = {
    "BailingMoeV3ForCausalLM": "BailingMoeForCausalLMNextN",
    "DeepseekV3ForCausalLM": "DeepseekV3ForCausalLMNextN",
    "Qwen3NextForCausalLM": "Qwen3NextForCausalLMMTP",
    "Qwen3MoeForCausalLM": "Qwen3MoeForCausalLMMTP",
    "Qwen4ExpForConditionalGeneration": "Qwen4ExpForCausalLMMTP",
}

#: Architectures whose NEXTN draft is searched as a chain only (top-k 1, the verify window
#: steps + 1), and why the tree knobs are left out.
CHAIN_ONLY = {
    "Qwen4ExpForConditionalGeneration": (
        "spec_topk, spec_draft_tokens: top-k 1 (the verify window then steps + 1, as SGLang "
        "forces it): every published cell runs NEXTN 3/1/4, and nothing here shows Qwen "
        "Sparse Attention verifying a draft tree"),
}

#: The fork's FP8 LM head exists for this architecture only (its patch of
#: models/bailing_moe_v3.py, docs/sglang-facts.md rule 8).
FP8_LM_HEAD_ARCHS = frozenset({"BailingMoeV3ForCausalLM"})
FP8_LM_HEAD_ENV = "SGLANG_ENABLE_FP8_LM_HEAD"
FP8_LM_HEAD_LOG = "Online FP8 quantization enabled for lm_head"
HUMMING_ENV = "SGLANG_HUMMING_INPUT_QUANT_CONFIG"
HUMMING_W4A8 = '{"a_dtype":"float8e4m3","input_scale_group_size":128}'


@dataclass(frozen=True)
class Recipe:
    """A published launch command for one model on one machine: its flags and env are the
    space's fixed settings, its searched values the baseline."""

    source: str
    fixed_flags: dict[str, Any]
    fixed_env: dict[str, str]
    baseline: dict[str, Any]
    deviations: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())
    #: the maximum of running requests as a capacity knob (its choices; the baseline the
    #: first), in place of the cell's fixed --max-running-requests and decode graph sizes,
    #: which the engine derives from it (docs/search-spaces.md, "Capacity knobs")
    capacity: tuple[int, ...] = ()


_LING_SPARK = Recipe(
    source="the official ling-cookbook W4A8 command (inclusionAI/ling-cookbook, "
           "dgx-spark-sglang-ling-3-flash-mxfp4, step 4b.1; docs/sglang-facts.md)",
    fixed_flags={
        "--flashinfer-mxfp4-moe-precision": "default", "--attention-backend": "flashinfer",
        "--fp8-gemm-backend": "cutlass", "--disable-flashinfer-autotune": True,
        "--disable-shared-experts-fusion": True,
        "--max-mamba-cache-size": 64, "--chunked-prefill-size": 8192, "--page-size": 64,
        "--context-length": 262144, "--cuda-graph-backend-decode": "full",
        "--cuda-graph-backend-prefill": "disabled", "--reasoning-parser": "ling3",
        "--tool-call-parser": "ling3"},
    fixed_env={"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1",
               "SGLANG_JIT_DEEPGEMM_PRECOMPILE": "0", "SGLANG_ENABLE_JIT_DEEPGEMM": "0",
               "SGLANG_DSV4_FP4_DEQUANT": "0", "SGLANG_FP8_IGNORED_LAYERS": ""},
    baseline={"moe_backend": "flashinfer_mxfp4", "lm_head": "fp32", "max_running": 1},
    deviations=(
        "--mem-fraction-static 0.68 instead of the cookbook's 0.75: 0.75 was reported to "
        "OOM the GPU and lock up the GB10 driver; 0.68 is the fork's recommendation",
        "the cookbook's YaRN --json-model-override-args is left out: its value is not "
        "recorded in our sources, and 262,144 tokens is the model's native context",
        "the cookbook's --max-running-requests 1 (and decode graphs for batch 1) is the "
        "baseline of the max_running capacity knob, searched only under a load regime"),
    capacity=(1, 2, 4, 8, 16),
)

_QWEN38_SPARK = Recipe(
    source="SGLang's cookbook cell 'Qwen3.8-Flash-Next, NVFP4 (RDXA), low latency, 1x DGX "
           "Spark' (sgl-project/sglang PR #37995, docs/src/snippets/configs/Qwen/"
           "qwen3.8-flash-next.jsx), with its PLE Offload chip 'On (NVMe file)'",
    fixed_flags={
        "--quantization": "modelopt_fp4", "--fp4-gemm-backend": "flashinfer_cutlass",
        "--page-size": 64, "--chunked-prefill-size": 4096, "--context-length": 262144,
        "--max-running-requests": 1, "--max-mamba-cache-size": 5,
        "--reasoning-parser": "qwen3", "--ple-offload-embedding": True,
        "--ple-offload-backend": "file"},
    fixed_env={},
    baseline={"moe_backend": "flashinfer_cutlass", "lm_head": "bf16", "speculative": "NEXTN",
              "mem_fraction": 0.70},
    deviations=(
        "--max-running-requests 1 and --max-mamba-cache-size 5 instead of the cell's 8 and "
        "40: the batch-1 regime, with the cell's rule for the state pool (requests x 5 "
        "slots under the default extra_buffer strategy; fewer slots silently cap the "
        "requests)",
        "--mem-fraction-static 0.70, this machine's cap, instead of the cell's 0.85 (0.75 was "
        "reported to lock up a GB10 driver; the cell itself warns of 8-12 GiB headroom and "
        "asks for a host memory watchdog, which the tool's unified-memory guard is); not "
        "the machine's usual 0.68: with the BF16 MTP layer loaded (about 4.9 GiB) that "
        "leaves under 2 GiB for the state pool and the graphs",
        "the cell's MTP draft (NEXTN 3/1/4) is the baseline's speculative setting; the "
        "cell's high-throughput twin (speculation off, --mamba-radix-cache-strategy "
        "extra_buffer_lazy, 24 requests) is not, since its strategy and width serve load, "
        "not batch 1"),
    notes=(
        "the n-gram table lives in a sparse 47.7 GiB file under $SGLANG_CACHE_DIR/ple/"
        "<model> (--ple-offload-dir moves it): keep ~50 GB free on the NVMe; the cookbook "
        "says to delete the previous file before each boot (a populated file rewrites at "
        "~17 MB/s, ~55 min; a fresh one at GB/s, ~8 min): the tool does not delete it",
        "--quantization modelopt_fp4 is what makes SGLang pick flashinfer_cutlass on the "
        "GB10 (arg_groups/overrides.py); left to the checkpoint, the NVFP4 MoE method "
        "resolves auto to flashinfer_trtllm, whose trtllm-gen kernels are SM100-only"),
)

#: (architecture, layout, machine id) -> the published recipe the space starts from
RECIPES: dict[tuple[str, str, str], Recipe] = {
    ("BailingMoeV3ForCausalLM", "fp8_block_mxfp4_experts", "dgx-spark"): _LING_SPARK,
    ("Qwen4ExpForConditionalGeneration", "modelopt_nvfp4", "dgx-spark"): _QWEN38_SPARK,
}

#: Architectures planned only where a recipe exists (machine ids), and why elsewhere not.
RECIPE_ONLY = {
    "Qwen4ExpForConditionalGeneration": (
        "SGLang's cookbook verifies this NVFP4 checkpoint on one DGX Spark (and on B200, "
        "B300, GB300 and RTX PRO 6000, machines tuner init does not know); it has no H200 "
        "cell (SM90 has no FP4 tensor cores) and the Qwen Sparse Attention kernels are "
        "validated on SM100/SM120 only (layers/attention/qwen_sparse_attn_backend.py)"),
}

#: The batch-1 regime every generated space measures (workload concurrency 1): one request
#: in flight, decode graphs captured for that one batch size, prefill graphs off (as the
#: Spark cookbook does; a prefill graph per chunk length costs memory for no batch-1 gain).
BATCH1_FLAGS: dict[str, Any] = {
    "--max-running-requests": 1, "--cuda-graph-backend-decode": "full",
    "--cuda-graph-max-bs-decode": 1, "--cuda-graph-bs-decode": 1,
    "--cuda-graph-backend-prefill": "disabled"}

#: What a GB10 (sm_121, aarch64) needs whatever the model: the aarch64 sglang-kernel wheel
#: has no FA3 flash_ops (docs: sglang-0.5.23 facts, section 4), so attention runs on
#: FlashInfer; sm_121 lacks what DeepGEMM's kernels use (NVIDIA/dgx-spark-playbooks#22),
#: so its JIT is off and FP8 GEMMs run on CUTLASS; FlashInfer's autotune is off and
#: prefill chunks are 8,192 tokens, as the Spark cookbook runs.
SPARK_FLAGS: dict[str, Any] = {"--disable-flashinfer-autotune": True,
                               "--chunked-prefill-size": 8192}
SPARK_ENV = {"SGLANG_JIT_DEEPGEMM_PRECOMPILE": "0", "SGLANG_ENABLE_JIT_DEEPGEMM": "0"}
SPARK_ATTENTION = "flashinfer"
#: Architectures whose attention backend SGLang picks itself on a GB10 (gpt-oss: Triton,
#: with sinks and sliding windows, model_overrides/gpt_oss.py)
OWN_ATTENTION = frozenset({"GptOssForCausalLM"})
#: Hybrid (KDA/GDN) models at batch 1: a few state slots, not SGLang's default share of
#: the budget (docs/sglang-facts.md, "Memory"), as the Spark cookbook sets for Ling.
MAMBA_SLOTS = 64

#: What a generated space deliberately does not search, and why (written into the space).
NOT_SEARCHED = (
    "--kv-cache-dtype: changes every cached token's numerics and needs KV scales the "
    "checkpoint may not carry; no rule here says which are safe",
    "--attention-backend: its choices differ per model and GPU and a wrong one fails at "
    "start-up; fixed per machine (or left to SGLang's own pick)",
    "--cuda-graph-*, --chunked-prefill-size, --max-running-requests: the batch-1 regime "
    "fixes them",
    "--speculative-moe-runner-backend, --speculative-draft-kv-cache-dtype: no rule here "
    "ties the draft's kernels to the target's",
    "NGRAM and STANDALONE speculation: no draft checkpoint (NGRAM drafts from the prompt: "
    "its gain is the workload's repetition, add it by hand for such traffic)",
)
#: The same where the space has the max_running capacity knob (a recipe's ``capacity``).
NOT_SEARCHED_WITH_CAPACITY = tuple(
    "--cuda-graph-*, --chunked-prefill-size: fixed (the decode graphs follow max_running)"
    if n.startswith("--cuda-graph-*") else n for n in NOT_SEARCHED)


def not_searched(capacity: bool) -> tuple[str, ...]:
    """What a generated space does not search, with or without the capacity knob."""
    return NOT_SEARCHED_WITH_CAPACITY if capacity else NOT_SEARCHED

#: What a Qwen4-Exp space also leaves out (the cookbook's other settings), and why.
NOT_SEARCHED_BY_ARCH: dict[str, tuple[str, ...]] = {
    "Qwen4ExpForConditionalGeneration": (
        "--ple-offload-backend, --no-ple-offload-embedding: on one GB10 the 47.7 GiB table "
        "fits only as a file on the NVMe (pinned host memory is the same 128 GB pool, and "
        "resident it leaves no room: the cookbook's PLE Offload row)",
        "--mamba-radix-cache-strategy, --mamba-ssm-dtype, --mamba-track-interval: they size "
        "the state pool for many requests (the cookbook's high-throughput and RTX PRO 6000 "
        "cells); bfloat16 state changes numerics and no cell here measures it on a GB10",
        "--linear-attn-prefill/decode/verify-backend: SGLang resolves them on SM12x (Triton; "
        "the cookbook's RTX PRO 6000 notes) and the Spark cells set none",
        "--fp4-gemm-backend: the cell's flashinfer_cutlass is kept; the RadixArk export's "
        "dense layers are BF16, so the FP4 GEMM backend has little to act on",
    ),
}
