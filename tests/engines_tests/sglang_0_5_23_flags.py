"""An independent table of SGLang 0.5.23 server flags (from the 0.5.23 wheel via
docs/sglang-facts.md), used as the oracle that generated launches are checked
against. Kept apart from tuner's own table on purpose: a misspelt flag must fail here."""

STORE_TRUE = {
    "--enable-fp32-lm-head", "--disable-flashinfer-autotune", "--disable-shared-experts-fusion",
    "--enable-metrics", "--skip-server-warmup", "--trust-remote-code", "--enable-mixed-chunk",
    "--enable-linear-replayssm-spec",
}
VALUED = {
    "--model-path", "--host", "--port", "--api-key", "--moe-runner-backend",
    "--flashinfer-mxfp4-moe-precision", "--speculative-algorithm",
    "--speculative-draft-model-path", "--speculative-num-steps", "--speculative-eagle-topk",
    "--speculative-num-draft-tokens", "--max-running-requests", "--mem-fraction-static",
    "--cuda-graph-backend-decode", "--cuda-graph-backend-prefill", "--cuda-graph-max-bs-decode",
    "--cuda-graph-bs-decode", "--attention-backend", "--fp8-gemm-backend",
    "--max-mamba-cache-size", "--chunked-prefill-size", "--page-size", "--context-length",
    "--reasoning-parser", "--tool-call-parser", "--json-model-override-args",
    "--log-level", "--decode-log-interval", "--speculative-dspark-block-size",
    "--linear-replayssm-cache-len",
}
CHOICES = {
    "--moe-runner-backend": {
        "auto", "deep_gemm", "triton", "triton_kernel", "flashinfer_trtllm",
        "experimental_sgl_trtllm", "flashinfer_trtllm_routed", "flashinfer_cutlass",
        "flashinfer_mxfp4", "flashinfer_cutedsl", "flashinfer_megamoe", "cutlass", "aiter",
        "marlin", "humming", "experimental_sgl_marlin", "lora_cutedsl", "lora_triton",
        "lora_marlin", "hpc_ops", "megamoe", "intel_xpu"},
    "--flashinfer-mxfp4-moe-precision": {"default", "bf16", "fp8"},
    "--speculative-algorithm": {"EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM", "DFLASH",
                                "DSPARK", "UNO"},
    "--cuda-graph-backend-decode": {"full", "breakable", "disabled"},
    "--cuda-graph-backend-prefill": {"full", "breakable", "disabled"},
    "--fp8-gemm-backend": {"auto", "deep_gemm", "flashinfer_trtllm", "flashinfer_cutlass",
                           "flashinfer_deepgemm", "flashinfer_cutedsl", "cutlass", "triton",
                           "aiter"},
    "--attention-backend": {"triton", "torch_native", "flex_attention", "fa3", "fa4",
                            "flashinfer", "flashmla", "trtllm_mla", "trtllm_mha"},
    "--reasoning-parser": {"ling3", "deepseek-r1", "qwen3"},
    "--tool-call-parser": {"ling3", "deepseekv3", "qwen25"},
}
INT_VALUED = {
    "--port", "--speculative-num-steps", "--speculative-eagle-topk",
    "--speculative-num-draft-tokens", "--max-running-requests", "--cuda-graph-max-bs-decode",
    "--cuda-graph-bs-decode", "--max-mamba-cache-size", "--chunked-prefill-size", "--page-size",
    "--context-length", "--decode-log-interval", "--speculative-dspark-block-size",
    "--linear-replayssm-cache-len",
}
FLOAT_VALUED = {"--mem-fraction-static"}
#: flags that take one value or more (argparse nargs "+"; the 0.5.23 wheel's parser)
MANY_VALUED = {"--cuda-graph-bs-decode"}
ENV_VARS_STOCK = {
    "SGLANG_HUMMING_INPUT_QUANT_CONFIG", "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN",
    "SGLANG_JIT_DEEPGEMM_PRECOMPILE", "SGLANG_ENABLE_JIT_DEEPGEMM", "SGLANG_DSV4_FP4_DEQUANT",
    "SGLANG_FP8_IGNORED_LAYERS",
}
ENV_VARS_FORK_ONLY = {"SGLANG_ENABLE_FP8_LM_HEAD"}


def check_ring(flags: list[str]) -> None:
    """Raise AssertionError when a DSPARK launch's ReplaySSM ring cannot hold its verify
    window: SGLang 0.5.23's KDA MambaPool (mem_cache/memory_pool.py) wants a power of two
    at least 2 x (gamma + 1), checked only once the weights are loaded."""
    args = dict(zip(flags, [*flags[1:], None], strict=True))
    if args.get("--speculative-algorithm", "").upper() != "DSPARK":
        return
    assert "--speculative-draft-model-path" in args, "DSPARK without a draft path"
    gamma = int(args.get("--speculative-dspark-block-size") or 8)
    if "--enable-linear-replayssm-spec" in args:
        ring = int(args.get("--linear-replayssm-cache-len") or 16)
        assert ring & (ring - 1) == 0, f"ring {ring} is not a power of two"
        assert ring >= 2 * (gamma + 1), f"ring {ring} < 2 * {gamma + 1}"


def check_argv(flags: list[str]) -> None:
    """Raise AssertionError naming the first token SGLang 0.5.23 would reject."""
    i = 0
    while i < len(flags):
        tok = flags[i]
        assert tok.startswith("--"), f"stray token {tok!r} at {i}"
        if tok in STORE_TRUE:
            i += 1
            continue
        assert tok in VALUED, f"{tok} is not an SGLang 0.5.23 flag"
        assert i + 1 < len(flags) and not flags[i + 1].startswith("--"), f"{tok} lacks a value"
        value = flags[i + 1]
        if tok in MANY_VALUED:
            j = i + 1
            while j < len(flags) and not flags[j].startswith("--"):
                int(flags[j])
                j += 1
            i = j
            continue
        if tok in CHOICES:
            v = value.upper() if tok == "--speculative-algorithm" else value
            assert v in CHOICES[tok], f"{value!r} is not a choice of {tok}"
        if tok in INT_VALUED:
            int(value)
        if tok in FLOAT_VALUED:
            assert 0.0 < float(value) < 1.0
        i += 2
