"""``tuner init``'s SGLang side: the flags, env vars, knobs and evidence a space for one
model on one machine holds, from the facts in :mod:`tuner.engines._sglang_init_tables`
and what the installed engine accepts (:class:`~tuner.engines._capabilities.Capabilities`:
its ``--help`` and source, or the bundled flag table of its version).

The caller (``tuner.models``) describes the model and machine in engine-neutral terms
(:class:`InitRequest`); every SGLang flag name and value is written here. A knob goes in
only when the engine accepts every flag and env var it sends (an env var the engine's
source never reads is left out; with the source unknown it is kept and said so) and its
effect can be read back (/server_info, a log line) or is declared unobservable with the
reason; everything else is listed in :attr:`InitSpace.left_out`.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
from typing import Any

from tuner.engines._capabilities import Capabilities
from tuner.engines._capabilities import algorithm_support
from tuner.engines._sglang_block_draft import DRAFT_PATH
from tuner.engines._sglang_block_draft import REPLAYSSM_SPEC
from tuner.engines._sglang_capacity import capacity_knob_block
from tuner.engines._sglang_flags import flags_for
from tuner.engines._sglang_init_tables import AUTO_RESOLVES
from tuner.engines._sglang_init_tables import BATCH1_FLAGS
from tuner.engines._sglang_init_tables import CHAIN_ONLY
from tuner.engines._sglang_init_tables import FP8_LM_HEAD_ARCHS
from tuner.engines._sglang_init_tables import FP8_LM_HEAD_ENV
from tuner.engines._sglang_init_tables import FP8_LM_HEAD_LOG
from tuner.engines._sglang_init_tables import HUMMING_ENV
from tuner.engines._sglang_init_tables import HUMMING_W4A8
from tuner.engines._sglang_init_tables import MAMBA_SLOTS
from tuner.engines._sglang_init_tables import MOE_BACKENDS
from tuner.engines._sglang_init_tables import NEXTN_DRAFTS
from tuner.engines._sglang_init_tables import NOT_SEARCHED_BY_ARCH
from tuner.engines._sglang_init_tables import OWN_ATTENTION
from tuner.engines._sglang_init_tables import RECIPE_ONLY
from tuner.engines._sglang_init_tables import RECIPES
from tuner.engines._sglang_init_tables import SPARK_ATTENTION
from tuner.engines._sglang_init_tables import SPARK_ENV
from tuner.engines._sglang_init_tables import SPARK_FLAGS
from tuner.engines._sglang_init_tables import TOPK_REFUSES
from tuner.engines._sglang_init_tables import UNPROVEN_BACKENDS
from tuner.engines._sglang_init_tables import Recipe
from tuner.engines._sglang_init_tables import not_searched
from tuner.engines._sglang_kernels import apply_kernel_fixes
from tuner.engines._sglang_rules import ALGORITHM
from tuner.engines._sglang_rules import TOPK
from tuner.engines._sglang_speculative import SPEC_ALGORITHMS
from tuner.engines._sglang_speculative import SpecAlgorithm
from tuner.engines._sglang_speculative import block_knob
from tuner.engines._sglang_speculative import tree_knobs
from tuner.errors import UserError


@dataclass(frozen=True)
class InitRequest:
    """One model on one machine, in engine-neutral terms."""

    architecture: str
    quantization: str
    linear_attention: str | None
    nextn_layers: int
    nextn_source: str
    #: external drafts by algorithm the user named (``DSPARK``, ``EAGLE3``) -> block size
    drafts: dict[str, int | None]
    machine: str
    major: int
    unified_memory: bool
    gpus: int
    fraction_low: float
    fraction_high: float
    fraction_baseline: float
    fraction_reason: str
    fraction_cap_reason: str
    fraction_cap_by: str = "this machine's cap"   # what the upper bound is, in a comment
    #: the config.json read (a refusal names it)
    source: str = ""


@dataclass
class KnobBlock:
    name: str
    body: dict[str, Any]
    comment: list[str] = field(default_factory=list)


@dataclass
class InitSpace:
    """What the space holds, each part with the reason it is there."""

    fixed_flags: dict[str, Any]
    fixed_env: dict[str, str]
    limits: dict[str, dict[str, Any]]
    knobs: list[KnobBlock]
    baseline: dict[str, Any]
    header: list[str]
    left_out: list[str]
    fixed_reasons: list[str]


def _si(field_: str, value: Any) -> dict[str, Any]:
    return {"server_info": {field_: value}}


def _moe_knob(req: InitRequest, caps: Capabilities, out: InitSpace) -> str | None:
    """The MoE runner backend, over the backends the layout dispatches to on this GPU and
    the engine accepts; its baseline SGLang's own resolution of ``auto``."""
    resolved = AUTO_RESOLVES.get((req.architecture, req.quantization), {}).get(req.major)
    backends = []
    refused = TOPK_REFUSES.get((req.architecture, req.quantization), {})
    for name, why in UNPROVEN_BACKENDS.get((req.architecture, req.quantization), {}).items():
        out.left_out.append(f"--moe-runner-backend {name}: {why}")
    for b in MOE_BACKENDS[req.quantization]:
        if b.name in refused:
            out.left_out.append(f"--moe-runner-backend {b.name}: {refused[b.name]}")
        elif req.major not in b.majors:
            out.left_out.append(f"--moe-runner-backend {b.name}: not served on this GPU "
                                f"(sm {req.major}x; {b.source})")
        elif b.name != "auto" and caps.accepts("--moe-runner-backend", b.name) is False:
            out.left_out.append(f"--moe-runner-backend {b.name}: not a choice of this engine")
        elif not (b.name == "auto" and resolved is not None):
            backends.append(b)
    if len(backends) < 2:
        return backends[0].name if backends else None
    evidence: dict[str, Any] = {}
    for b in backends:
        ev = _si("moe_runner_backend", b.name)
        if b.log:
            ev["log"] = list(b.log)
        evidence[b.name] = ev
    body: dict[str, Any] = {"type": "categorical", "help": "MoE runner kernel for the "
                            f"routed experts ({req.quantization.replace('_', ' ')})",
                            "choices": [b.name for b in backends],
                            "flag": "--moe-runner-backend", "evidence_by_value": evidence}
    if "auto" in body["choices"]:
        body["values"] = {c: ({} if c == "auto" else {"flags": {"--moe-runner-backend": c}})
                          for c in body["choices"]}
        del body["flag"]
    out.knobs.append(KnobBlock("moe_backend", body, [
        f"{b.name}: {b.source}" for b in backends] + ([
            f"baseline {resolved}: SGLang's own pick for this model here (auto resolves to "
            "it)"] if resolved else ["baseline auto: SGLang's default (no model override)"])))
    out.baseline["moe_backend"] = resolved or "auto"
    return None


def _precision_knobs(req: InitRequest, caps: Capabilities, out: InitSpace) -> None:
    """FlashInfer MXFP4 activation precision (Hopper only) and Humming's activations."""
    moe = next((k for k in out.knobs if k.name == "moe_backend"), None)
    choices = moe.body["choices"] if moe else []
    if "flashinfer_mxfp4" in choices and req.major == 9:
        out.knobs.append(KnobBlock("flashinfer_precision", {
            "type": "categorical", "choices": ["default", "bf16", "fp8"], "default": "default",
            "help": "FlashInfer MXFP4 activation precision (an SM90-only knob)",
            "when": {"moe_backend": "flashinfer_mxfp4"}, "lossy_values": ["fp8"],
            "flag": "--flashinfer-mxfp4-moe-precision",
            "evidence": _si("flashinfer_mxfp4_moe_precision", "{value}")},
            ["SM90 picks W4A16 or FP8 activations here (layers/quantization/mxfp4.py)"]))
    if "humming" not in choices:
        return
    if caps.knows_env(HUMMING_ENV) is False:
        out.left_out.append(f"humming_activation: this engine never reads {HUMMING_ENV}")
        return
    out.knobs.append(KnobBlock("humming_activation", {
        "type": "categorical", "help": "Humming activation precision (bf16 = W4A16, fp8 = "
        "W4A8)", "choices": ["bf16", "fp8"], "default": "bf16", "lossy_values": ["fp8"],
        "when": {"moe_backend": "humming"},
        "values": {"bf16": {}, "fp8": {"env": {HUMMING_ENV: HUMMING_W4A8}}},
        "evidence": {"none": "no /server_info field or log line shows the Humming "
                             "activation dtype"}},
        ["Humming runs W4A16 unless this env var is set (sglang/srt/environ.py); kept "
         "although unobservable: every trial reports it so, and the accuracy gate judges "
         "its numerics"]))


def _lm_head_knob(req: InitRequest, caps: Capabilities, out: InitSpace,
                  recipe: Recipe | None) -> None:
    choices: list[str] = ["fp32", "bf16"]
    values: dict[str, Any] = {"fp32": {"flags": {"--enable-fp32-lm-head": True}}, "bf16": {}}
    evidence: dict[str, Any] = {"fp32": _si("enable_fp32_lm_head", True),
                                "bf16": _si("enable_fp32_lm_head", False)}
    comment = ["fp32: --enable-fp32-lm-head (FP32 logits GEMM); bf16: SGLang's default"]
    fork = req.architecture in FP8_LM_HEAD_ARCHS
    known = caps.knows_env(FP8_LM_HEAD_ENV) if fork else False
    if fork and known is False:
        out.left_out.append(f"lm_head fp8: this engine never reads {FP8_LM_HEAD_ENV} (the "
                            "Ling fork's; stock SGLang ignores it)")
    elif fork:
        choices.append("fp8")
        values["fp8"] = {"env": {FP8_LM_HEAD_ENV: "1"}}
        evidence["bf16"]["log_absent"] = [FP8_LM_HEAD_LOG]
        evidence["fp8"] = {**_si("enable_fp32_lm_head", False), "log": [FP8_LM_HEAD_LOG],
                           "note": "weak: the fork prints this line before the head is "
                           "built and no field shows the LM-head dtype; the accept-length "
                           "gate is what catches a draft that cannot use it"}
        comment.append("fp8: the Ling fork's online FP8 head"
                       + (" (this engine's source reads it)" if known else
                          " (needs the Ling fork; `tuner doctor` says whether yours has it)"))
    out.knobs.append(KnobBlock("lm_head", {    # lossy: the FP8 head, choices[2:] if offered
        "type": "categorical", "lossy_values": choices[2:], "help": "LM-head (vocab GEMM) "
        "precision" + ("; fp8 needs the Ling fork" if "fp8" in choices else ""),
        "choices": choices, "values": values, "evidence_by_value": evidence}, comment))
    out.baseline["lm_head"] = recipe.baseline["lm_head"] if recipe else "bf16"


@dataclass
class _Speculation:
    """The ``speculative`` knob as it is built: its values and evidence, the algorithms
    that take the draft-tree knobs, the other knobs they bring, its comment lines."""

    values: dict[str, Any] = field(default_factory=lambda: {"off": {}})
    evidence: dict[str, Any] = field(
        default_factory=lambda: {"off": _si("speculative_algorithm", None)})
    tree: list[str] = field(default_factory=list)
    extra: list[KnobBlock] = field(default_factory=list)
    comment: list[str] = field(default_factory=list)

    def add(self, algo: SpecAlgorithm, flags: dict[str, Any], info: dict[str, Any]) -> None:
        self.values[algo.name] = {"flags": flags}
        self.evidence[algo.name] = {"server_info": info}
        if algo.worker == "eagle":
            self.tree.append(algo.name)


def _speculation(req: InitRequest, caps: Capabilities, out: InitSpace) -> None:
    """One value per algorithm of the adapter's table (``SPEC_ALGORITHMS``) with a draft
    here: NEXTN for the checkpoint's MTP layers, EAGLE3 / DSPARK for one the user named."""
    spec = _Speculation()
    for algo in SPEC_ALGORITHMS.values():
        if algo.draft == "checkpoint":
            _own_draft(req, algo, spec, out)
        elif algo.name in req.drafts:
            _named_draft(req, caps, algo, spec, out)
    if len(spec.values) == 1:
        out.left_out.append("speculative decoding: no draft (no MTP layer, no --draft)")
        return
    out.knobs.append(KnobBlock("speculative", {
        "type": "categorical", "lossless": True, "help": "speculative decoding: "
        + ", ".join(v for v in spec.values if v != "off"), "choices": list(spec.values),
        "values": spec.values, "evidence_by_value": spec.evidence}, spec.comment))
    chain = req.architecture in CHAIN_ONLY and spec.tree == ["NEXTN"]
    out.knobs += [KnobBlock(*k) for k in (tree_knobs(spec.tree, chain) if spec.tree else [])]
    out.knobs += spec.extra
    out.baseline["speculative"] = "off"


def _own_draft(req: InitRequest, algo: SpecAlgorithm, spec: _Speculation,
               out: InitSpace) -> None:
    """The checkpoint's own MTP layers as the draft (NEXTN), where SGLang has a draft class
    for the architecture; a chain only where ``CHAIN_ONLY`` says so."""
    if not (req.nextn_layers and req.architecture in NEXTN_DRAFTS):
        out.left_out.append(f"{algo.name}: the checkpoint has no MTP layer "
                            f"({req.nextn_source})")
        return
    flags: dict[str, Any] = {ALGORITHM: algo.name, DRAFT_PATH: "{model.path}"}
    info: dict[str, Any] = {"speculative_algorithm": algo.reports}
    if req.architecture in CHAIN_ONLY:
        flags[TOPK] = 1
        info["speculative_eagle_topk"] = 1
        out.left_out.append(CHAIN_ONLY[req.architecture])
    spec.add(algo, flags, info)
    spec.comment.append(f"{algo.name}: {req.nextn_layers} MTP layer(s) ({req.nextn_source}); "
                        f"SGLang loads it as {NEXTN_DRAFTS[req.architecture]} and reports "
                        f"{algo.reports}")


def _named_draft(req: InitRequest, caps: Capabilities, algo: SpecAlgorithm,
                 spec: _Speculation, out: InitSpace) -> None:
    """A draft the user named (``--draft``): its path sent as ``{model.drafts.NAME}``; a
    block draft also needs the engine's block flag, brings its block-size knob and, on a
    KDA model, the ReplaySSM ring."""
    block = algo.block
    if block is not None:
        status, detail = algorithm_support(caps, algo.name, block.block_flag)
        if status == "unsupported":
            out.left_out.append(f"{algo.name}: {detail}")
            return
    path = f"{{model.drafts.{algo.name}}}"
    flags: dict[str, Any] = {ALGORITHM: algo.name, DRAFT_PATH: path}
    info: dict[str, Any] = {"speculative_algorithm": algo.reports,
                            "speculative_draft_model_path": path}
    kda = block is not None and req.linear_attention == "kda"
    if kda:
        # the ring length is derived by the engine from gamma (docs/dspark.md)
        flags[REPLAYSSM_SPEC] = True
        info["enable_linear_replayssm_spec"] = True
    spec.add(algo, flags, info)
    if block is None:
        spec.comment.append(f"{algo.name}: the draft named by --draft")
        return
    size = req.drafts[algo.name] or block.default_block
    spec.comment.append(f"{algo.name}: the draft named by --draft (gamma {size} declared)"
                        + ("; KDA: the ReplaySSM ring, its length derived from gamma"
                           if kda else ""))
    spec.extra.append(KnobBlock(block.knob, block_knob(block, size)))


def _fixed(req: InitRequest, recipe: Recipe | None, caps: Capabilities,
           out: InitSpace) -> None:
    if recipe is not None:
        out.fixed_flags.update(recipe.fixed_flags)
        out.fixed_env.update(recipe.fixed_env)
        out.fixed_reasons.append(f"the cookbook's flags that are not searched: "
                                 f"{recipe.source}")
        return
    out.fixed_flags.update(BATCH1_FLAGS)
    out.fixed_reasons.append("batch 1 (workload concurrency 1): one request in flight, "
                             "decode graphs for that one batch size, prefill graphs off")
    if req.linear_attention is not None:
        out.fixed_flags["--max-mamba-cache-size"] = MAMBA_SLOTS
        out.fixed_reasons.append(f"--max-mamba-cache-size {MAMBA_SLOTS}: a hybrid "
                                 f"({req.linear_attention.upper()}) model at batch 1 needs "
                                 "few state slots (SGLang's default takes a share of the "
                                 "budget)")
    if req.machine == "dgx-spark":
        out.fixed_flags.update(SPARK_FLAGS)
        out.fixed_env.update(SPARK_ENV)
        if req.architecture not in OWN_ATTENTION:
            out.fixed_flags["--attention-backend"] = SPARK_ATTENTION
        if req.quantization.startswith("fp8"):
            out.fixed_flags["--fp8-gemm-backend"] = "cutlass"
        out.fixed_reasons.append("GB10: FlashInfer attention (the aarch64 sglang-kernel has "
                                 "no FA3), DeepGEMM off and CUTLASS FP8 GEMMs (sm_121), "
                                 "FlashInfer autotune off and 8,192-token prefill chunks, "
                                 "as the Spark cookbook runs")
    if req.gpus > 1:
        out.fixed_flags["--tp-size"] = req.gpus
        out.fixed_reasons.append(f"--tp-size {req.gpus}: the weights split over the "
                                 f"machine's {req.gpus} GPUs")


def _memory_knob(req: InitRequest, out: InitSpace, recipe: Recipe | None) -> None:
    out.limits["--mem-fraction-static"] = {"max": req.fraction_high,
                                           "reason": req.fraction_cap_reason}
    reason, base = req.fraction_reason, req.fraction_baseline
    if recipe is not None and "mem_fraction" in recipe.baseline:
        base = min(float(recipe.baseline["mem_fraction"]), req.fraction_high)
        reason = reason.split("; baseline: ")[0] + f"; baseline {base:.2f}: the header says why"
    out.knobs.append(KnobBlock("mem_fraction", {
        "type": "float", "help": "--mem-fraction-static (weights + KV pool as a share of "
        "GPU memory)", "role": "capacity", "low": req.fraction_low,
        "high": req.fraction_high, "step": 0.01, "flag": "--mem-fraction-static",
        "evidence": _si("mem_fraction_static", "{value}")},
        [f"bounds: {reason}; above {req.fraction_high:.2f}: {req.fraction_cap_by}",
         "at batch 1 it changes no TPOT, only whether a launch fits and the KV "
         "pool's size: held at the baseline while speed is searched"]))
    out.baseline["mem_fraction"] = base


def init_space(req: InitRequest, caps: Capabilities) -> InitSpace:
    """The SGLang side of a space for ``req`` on the engine ``caps`` describes."""
    recipe = RECIPES.get((req.architecture, req.quantization, req.machine))
    if recipe is None and req.architecture in RECIPE_ONLY:
        machines = sorted(m for a, q, m in RECIPES if a == req.architecture
                          and q == req.quantization)
        raise UserError(f"{req.source}: {req.architecture} ({req.quantization}) is planned "
                        f"on {', '.join(machines) or 'no machine'} only, not {req.machine}: "
                        f"{RECIPE_ONLY[req.architecture]}")
    out = InitSpace(fixed_flags={}, fixed_env={}, limits={}, knobs=[], baseline={},
                    header=[], left_out=[], fixed_reasons=[])
    _fixed(req, recipe, caps, out)
    single = _moe_knob(req, caps, out)
    if single is not None:
        out.left_out.append(f"--moe-runner-backend: only {single} serves this layout here")
    _precision_knobs(req, caps, out)
    _lm_head_knob(req, caps, out, recipe)
    _speculation(req, caps, out)
    apply_kernel_fixes(out, caps, req.major)
    _memory_knob(req, out, recipe)
    if recipe is not None and recipe.capacity:      # its baseline: the recipe's
        out.knobs.append(KnobBlock("max_running", *capacity_knob_block(recipe.capacity)))
    out.left_out += [*not_searched(recipe is not None and bool(recipe.capacity)),
                     *NOT_SEARCHED_BY_ARCH.get(req.architecture, ())]
    if recipe is not None:
        names = {k.name for k in out.knobs}
        out.baseline.update({k: v for k, v in recipe.baseline.items()
                             if k in names and k != "mem_fraction"})
        out.header.append(f"Baseline: {recipe.source}, with documented deviations:")
        out.header += [f"  * {d}" for d in recipe.deviations]
        if recipe.notes:
            out.header.append("Notes:")
            out.header += [f"  * {n}" for n in recipe.notes]
    else:
        out.header.append("Baseline: SGLang's own defaults for this model on this "
                          "machine (every knob at the value SGLang picks when unset).")
    return out


def table_capabilities(version: str | None) -> Capabilities:
    """What an engine of ``version`` accepts when none is installed here: the bundled flag
    table (env-var support then unknown)."""
    from tuner.engines._sglang_flags import table_version

    flags = {name: f.choices for name, f in flags_for(version).items()}
    return Capabilities(command=["sglang", "serve"], found=False, version=version,
                        reason="no SGLang installed here", flags=flags,
                        flags_source=f"SGLang {table_version(version)}'s bundled table")
