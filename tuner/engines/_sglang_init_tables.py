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


_LING_SPARK = Recipe(
    source="the official ling-cookbook W4A8 command (inclusionAI/ling-cookbook, "
           "dgx-spark-sglang-ling-3-flash-mxfp4, step 4b.1; docs/sglang-facts.md)",
    fixed_flags={
        "--flashinfer-mxfp4-moe-precision": "default", "--attention-backend": "flashinfer",
        "--fp8-gemm-backend": "cutlass", "--disable-flashinfer-autotune": True,
        "--disable-shared-experts-fusion": True, "--max-running-requests": 1,
        "--max-mamba-cache-size": 64, "--chunked-prefill-size": 8192, "--page-size": 64,
        "--context-length": 262144, "--cuda-graph-backend-decode": "full",
        "--cuda-graph-max-bs-decode": 1, "--cuda-graph-bs-decode": 1,
        "--cuda-graph-backend-prefill": "disabled", "--reasoning-parser": "ling3",
        "--tool-call-parser": "ling3"},
    fixed_env={"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1",
               "SGLANG_JIT_DEEPGEMM_PRECOMPILE": "0", "SGLANG_ENABLE_JIT_DEEPGEMM": "0",
               "SGLANG_DSV4_FP4_DEQUANT": "0", "SGLANG_FP8_IGNORED_LAYERS": ""},
    baseline={"moe_backend": "flashinfer_mxfp4", "lm_head": "fp32"},
    deviations=(
        "--mem-fraction-static 0.68 instead of the cookbook's 0.75: 0.75 was reported to "
        "OOM the GPU and lock up the GB10 driver; 0.68 is the fork's recommendation",
        "the cookbook's YaRN --json-model-override-args is left out: its value is not "
        "recorded in our sources, and 262,144 tokens is the model's native context"),
)

#: (architecture, layout, machine id) -> the published recipe the space starts from
RECIPES: dict[tuple[str, str, str], Recipe] = {
    ("BailingMoeV3ForCausalLM", "fp8_block_mxfp4_experts", "dgx-spark"): _LING_SPARK,
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
