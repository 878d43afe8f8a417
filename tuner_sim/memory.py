"""The memory model: weights, KV pool, mamba/KDA state, CUDA graphs, --mem-fraction-static.

Follows SGLang 0.5.23's accounting (docs/sglang-facts.md, "Memory"): the static budget is
``free-before-load x f``; what the weights leave of it, minus the KDA state pool and the
graph memory, becomes the KV pool. Too little fails with SGLang's own messages; a fraction
above the machine's safe limit makes the simulated machine hang (as a GB10 does at 0.75).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from tuner_sim.args import LaunchError
from tuner_sim.profiles import Draft
from tuner_sim.profiles import Machine
from tuner_sim.profiles import Model
from tuner_sim.speculative import resolved


GIB = 1024**3
GB_PER_GIB = GIB / 1e9


@dataclass(frozen=True)
class MemoryPlan:
    capacity_gb: float
    free_before_load_gb: float
    weights_gb: float
    avail_after_load_gb: float
    mamba_gb: float
    graph_gb: float
    kv_gb: float
    kv_bytes_per_token: int
    max_total_num_tokens: int
    hangs: bool

    @property
    def avail_after_pool_gb(self) -> float:
        return self.avail_after_load_gb - self.kv_gb - self.mamba_gb


def launch_draft(model: Model, args: dict[str, Any]) -> Draft | None:
    """The draft the launch runs (its algorithm's, tuner_sim.speculative); None without
    speculation or without one."""
    name = args["speculative_algorithm"]
    algo = resolved(name) if name is not None else None
    return algo.draft_of(model) if algo is not None else None


def draft_cost(model: Model, args: dict[str, Any]) -> tuple[float, int]:
    """(resident weights in GB, KV bytes per token) the speculative draft adds: the NEXTN
    layer, or an external draft's own layers and KV, which SGLang 0.5.23 adds to the
    target's cell bytes in the one shared pool (dflash_utils.py); nothing without
    speculation."""
    d = launch_draft(model, args)
    return (0.0, 0) if d is None else (d.resident_gb, d.kv_bytes_per_token)


def ple_resident_gb(machine: Machine, model: Model, args: dict[str, Any]) -> float:
    """The PLE tables' share of the GPU's pool: all of it unless offloaded; offloaded to a
    file (``--ple-offload-backend file``) none; to pinned host memory none on a GPU of its
    own, all of it on a unified-memory machine, whose host memory is the same pool (the
    cookbook: "offloading to RAM frees nothing there")."""
    if not model.ple_table_gb:
        return 0.0
    if not args.get("ple_offload_embedding"):
        return model.ple_table_gb
    if args.get("ple_offload_backend") == "file" or machine.host is None:
        return 0.0
    return model.ple_table_gb


def launch_weights_gb(machine: Machine, model: Model, args: dict[str, Any]) -> float:
    """What a launch loads into the GPU's pool: the weights, the draft's, resident PLE."""
    return (model.weights_gb + draft_cost(model, args)[0]
            + ple_resident_gb(machine, model, args))


def weights_oom(machine: Machine, weights_gb: float, free_gb: float) -> tuple[str, str]:
    """How a load whose weights exceed the device's memory fails: PyTorch's CUDA OOM,
    raised by the allocation that no longer fits, part way through the weight load."""
    shard = min(weights_gb, 2.0)                       # GB per allocation (a shard's)
    left = max(0.0, free_gb - math.floor(free_gb / shard) * shard)   # less than a shard
    return ("torch.OutOfMemoryError",
            f"CUDA out of memory. Tried to allocate {shard / GB_PER_GIB:.2f} GiB. GPU 0 has a "
            f"total capacity of {machine.memory_gib:.2f} GiB of which "
            f"{left / GB_PER_GIB:.2f} GiB is free. "
            f"(simulator: the weights need {weights_gb:.2f} GB, {free_gb:.2f} GB is "
            "available after the runtime's reserve)")


def plan_memory(machine: Machine, model: Model, args: dict[str, Any]) -> MemoryPlan:
    f = float(args["mem_fraction_static"])
    spec = args["speculative_algorithm"] is not None
    algo = resolved(args["speculative_algorithm"]) if spec else None
    draft = launch_draft(model, args)
    capacity = machine.memory_gib * GIB / 1e9
    free0 = capacity - machine.runtime_reserved_gib * GIB / 1e9
    _, draft_kv = draft_cost(model, args)
    weights = launch_weights_gb(machine, model, args)
    if weights > free0:
        raise LaunchError(*weights_oom(machine, weights, free0))
    avail = free0 - weights
    rest = free0 * f - weights
    if rest <= 0:
        need = math.ceil(weights / free0 * 100) / 100
        raise LaunchError(
            "ValueError",
            f"Loaded weights leave no GPU memory for the KV cache under "
            f"--mem-fraction-static={f}. Raise --mem-fraction-static above {need:.2f} "
            f"(weights use {weights:.2f} GB of {free0:.2f} GB available).")
    slots = args["max_mamba_cache_size"] or min(args["max_running_requests"] * 2, 256)
    ring = bool(args.get("enable_linear_replayssm_spec")) and spec
    # Speculation keeps a second state per slot, except under the ReplaySSM ring, which
    # charges each slot its ring of L records instead (0.5.23 kv_cache_configurator.py).
    mamba = slots * model.linear_state_gb_per_request * (2.0 if spec and not ring else 1.0)
    if ring:
        mamba += (slots * int(args["linear_replayssm_cache_len"])
                  * model.linear_ring_bytes_per_position / 1e9)
    if draft is not None and draft.per_request_gb:     # a draft's buffers per request row
        mamba += int(args["max_running_requests"]) * draft.per_request_gb
    graph_sets = 1 + (algo.shape.graph_sets if algo is not None else 0)
    graph = 0.0 if args["cuda_graph_config"]["decode"]["backend"] == "disabled" else (
        0.12 * graph_sets * len(args["cuda_graph_config"]["decode"]["bs"]))
    per_token = model.kv_bytes_per_token + model.kv_window_bytes_per_token + draft_kv
    kv = rest - mamba - graph
    page = max(1, int(args["page_size"]))
    tokens = int(max(kv, 0.0) * 1e9 / per_token) // page * page
    if tokens < 16 * page:
        raise LaunchError(
            "RuntimeError",
            "Not enough memory. Please try to increase --mem-fraction-static. "
            f"Current value: mem_fraction_static={f}")
    return MemoryPlan(
        capacity_gb=capacity, free_before_load_gb=free0, weights_gb=weights,
        avail_after_load_gb=avail, mamba_gb=mamba, graph_gb=graph, kv_gb=kv,
        kv_bytes_per_token=per_token, max_total_num_tokens=tokens,
        hangs=f > machine.safe_mem_fraction_max + 1e-9)
