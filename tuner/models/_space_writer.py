"""A commented search-space YAML for one model on one machine (``tuner init``).

The model's facts come from :func:`tuner.models.read_model`, the machine's from
:data:`tuner.models.MACHINES`, the memory plan from :func:`tuner.models.plan_memory`;
every flag, env var, knob and piece of evidence from the engine adapter
(:func:`tuner.engines.init_space`), which is the only place that knows SGLang's names.
This module lays them out with the reasons as comments, in the shipped spaces' order.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from tuner.engines import Capabilities
from tuner.engines import InitRequest
from tuner.engines import InitSpace
from tuner.engines import init_space
from tuner.errors import UserError
from tuner.models._config import ModelShape
from tuner.models._drafts import Draft
from tuner.models._machines import Machine
from tuner.models._machines import sglang_auto_fraction
from tuner.models._memory import MemoryPlan
from tuner.models._memory import plan_memory


def _dump(data: dict[str, Any], indent: int = 0) -> list[str]:
    text = yaml.safe_dump(data, sort_keys=False, default_flow_style=False, width=88,
                          allow_unicode=False)
    pad = " " * indent
    return [pad + line for line in text.rstrip("\n").split("\n")]


def _comment(lines: list[str], indent: int = 0) -> list[str]:
    pad = " " * indent
    return [f"{pad}# {line}".rstrip() for line in lines]


def _fraction_bounds(m: Machine, plan: MemoryPlan, gpus: int, source: str
                     ) -> tuple[float, float, float, str]:
    """(low, high, baseline, why) of --mem-fraction-static; refused when nothing fits."""
    high = min(m.fraction_cap, plan.high)
    if plan.low > high:
        raise UserError(f"{source}: the weights (about {plan.weights_gib:g} GiB) do not fit "
                        f"{gpus} x {m.memory_gib:g} GiB on {m.id} under its memory "
                        f"fraction cap {high:.2f}"
                        + (f" ({plan.high_note})" if high < m.fraction_cap else "")
                        + (f"; try --gpus (up to {m.max_gpus})" if gpus < m.max_gpus else ""))
    if m.fraction_default is not None:
        base, why = m.fraction_default, m.default_reason
    else:
        base, why = sglang_auto_fraction(m, gpus), m.default_reason
    if base > high and high < m.fraction_cap:
        why += f"; held at {high:.2f} by the KV pool's bookkeeping (the upper bound)"
    base = round(min(max(base, plan.low), high), 2)
    return plan.low, high, base, why


def model_id(shape: ModelShape) -> str:
    """The checkpoint folder's name, lower-cased (the profile name the simulator and the
    probe look up: ``ling-3.0-flash-fp4``)."""
    folder = shape.folder.rstrip("/").rsplit("/", 1)[-1]
    return re.sub(r"[^a-z0-9.]+", "-", folder.lower()).strip("-") or "model"


def space_name(shape: ModelShape, machine: Machine) -> str:
    return f"{model_id(shape)}-{machine.id}"


def _model_block(shape: ModelShape, plan: MemoryPlan, drafts: list[Draft]) -> dict[str, Any]:
    facts: dict[str, Any] = {
        "layers": shape.layers, "routed_experts": shape.routed_experts,
        "experts_per_token": shape.experts_per_token, "shared_experts": shape.shared_experts,
        "hidden_size": shape.hidden_size, "moe_intermediate_size": shape.moe_intermediate_size,
        "vocab_size": shape.vocab_size, "attention": shape.attention,
        "full_attention_layers": shape.full_attention_layers,
        "nextn_predict_layers": shape.nextn_layers, "quantization": shape.quantization}
    if shape.linear_attention:
        facts["linear_attention"] = shape.linear_attention
    block: dict[str, Any] = {
        "id": model_id(shape), "path": shape.folder,
        "architecture": shape.architecture, "vocab_size": shape.vocab_size,
        "weights_gib": plan.weights_gib, "facts": facts}
    if drafts:
        block["drafts"] = {d.algorithm: {k: v for k, v in (
            ("path", d.path), ("architecture", d.architecture), ("block_size", d.block_size),
            ("facts", d.facts)) if v not in (None, {})} for d in drafts}
    return block


def _machine_block(m: Machine) -> dict[str, Any]:
    return {"id": m.id, "gpu": m.gpu, "compute_capability": m.cc, "gpus": 1,
            "memory_gib": m.memory_gib, "bandwidth_gbs": m.bandwidth_gbs,
            "unified_memory": m.unified_memory}


WORKLOAD = {"kind": "gsm8k", "questions": 60, "num_shots": 5, "max_tokens": 2048,
            "temperature": 0.6, "top_p": 0.95, "top_k": 29, "seed": 0,
            "warmup_requests": 2, "concurrency": 1}
GATE = {"accept_length_floor": 1.2, "max_accuracy_drop_pp": 1.0, "mcnemar_alpha": 0.05}


def _request(shape: ModelShape, m: Machine, drafts: list[Draft], gpus: int,
             plan: MemoryPlan) -> InitRequest:
    low, high, base, why = _fraction_bounds(m, plan, gpus, shape.source)
    return InitRequest(
        architecture=shape.architecture, quantization=shape.quantization,
        linear_attention=shape.linear_attention, nextn_layers=shape.nextn_layers,
        nextn_source=shape.nextn_source,
        drafts={d.algorithm: d.block_size for d in drafts}, machine=m.id,
        major=m.compute_capability[0], unified_memory=m.unified_memory, gpus=gpus,
        fraction_low=low, fraction_high=high, fraction_baseline=base,
        fraction_reason=f"{plan.note}; baseline: {why}",
        fraction_cap_reason=(plan.high_note if high < m.fraction_cap else m.cap_reason),
        fraction_cap_by=(plan.high_note if high < m.fraction_cap else "this machine's cap"),
        source=shape.source)


def _head(shape: ModelShape, m: Machine, part: InitSpace, plan: MemoryPlan,
          engine: str) -> list[str]:
    attn = shape.attention.upper() + (f" + {shape.linear_attention.upper()} linear attention"
                                      if shape.linear_attention else "")
    lines = [f"{shape.architecture} ({shape.quantization}) on {m.id} ({m.gpu}, sm "
             f"{m.cc}), written by `tuner init` from {shape.source}.",
             f"Shape: {shape.layers} layers ({attn}, {shape.full_attention_layers} attending "
             f"in full), {shape.routed_experts} experts top-{shape.experts_per_token}"
             f" + {shape.shared_experts} shared, hidden {shape.hidden_size}, vocabulary "
             f"{shape.vocab_size}; MTP layers {shape.nextn_layers} ({shape.nextn_source}).",
             f"Memory plan: {plan.note} (an estimate from the shape).",
             f"Engine: {engine}.", *part.header, "",
             "Not searched (the tool cannot prove these here, or the regime fixes them):"]
    return lines + [f"  * {why}" for why in part.left_out]


def write_space(shape: ModelShape, m: Machine, caps: Capabilities, *, drafts: list[Draft],
                gpus: int = 1, engine_version: str = "0.5.23",
                engine_note: str = "") -> str:
    """The YAML text of the space (not yet validated: the caller loads it back)."""
    if not 1 <= gpus <= m.max_gpus:
        raise UserError(f"--gpus {gpus}: {m.id} holds 1 to {m.max_gpus} GPUs")
    plan = plan_memory(shape, m.memory_gib, gpus)
    part = init_space(_request(shape, m, drafts, gpus, plan), caps)
    name = space_name(shape, m)
    machine = _machine_block(m) | {"gpus": gpus}
    lines = _comment(_head(shape, m, part, plan, engine_note or f"SGLang {engine_version}"))
    lines += ["schema_version: 1", f"name: {name}", *_dump({"description": (
        f"{shape.architecture} served by SGLang {engine_version} on {m.id}, batch 1 "
        "(max-running-requests 1): the latency regime. Generated by tuner init.")}), ""]
    lines += [*_dump({"model": _model_block(shape, plan, drafts)}), ""]
    lines += [*_dump({"machine": machine}), ""]
    engine = {"name": "sglang", "version": engine_version, "command": ["sglang", "serve"]}
    lines += [*_dump({"engine": engine}), ""]
    lines += [*_dump({"limits": part.limits}), ""]
    lines += _comment(["Carried by every launch:"] + [f"  * {r}" for r in part.fixed_reasons])
    lines += _dump({"fixed_flags": part.fixed_flags})
    if part.fixed_env:
        lines += _dump({"fixed_env": part.fixed_env})
    lines += ["", "knobs:"]
    for block in part.knobs:
        lines += _comment(block.comment, 2) + _dump({block.name: block.body}, 2) + [""]
    lines += [*_dump({"baseline": part.baseline}), ""]
    lines += [*_dump({"gate": GATE}), "", *_dump({"workload": WORKLOAD})]
    return "\n".join(lines) + "\n"
