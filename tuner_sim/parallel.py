"""Tensor parallelism (``--tp-size N``): one rank's share of the model, and what talking
costs. The simulator models rank 0; every rank does the same work in lockstep.

Per rank (docs/simulator.md, "Tensor parallelism"):

* every weight is split N ways (SGLang's TP shards the attention heads, each expert's
  intermediate dimension, the dense MLPs and the vocabulary of the embedding and the LM
  head): resident bytes and bytes read per step are 1/N; so are the KV cache and the
  linear-attention state (heads split), and a prefill's FLOPs. DERIVED from how TP shards,
  with one simplification stated: MLA's latent KV, replicated on every rank by SGLang, is
  split here too;
* each layer all-reduces twice per forward (after attention and after the MLP/MoE): an
  ASSUMED ``ALLREDUCE_US`` of fixed latency each (small decode messages over NVLink are
  latency-bound; no measured figure is in the repository), added to every forward's and
  every draft forward's step overhead.
"""

from __future__ import annotations

from tuner_sim.profiles import DenseDraft
from tuner_sim.profiles import Draft
from tuner_sim.profiles import Machine
from tuner_sim.profiles import Model
from tuner_sim.profiles import MtpDraft


#: ASSUMED: one all-reduce of a decode step's activations (a few KB to a few MB), us
ALLREDUCE_US = 8.0
#: all-reduces per layer per forward: attention output, MLP/MoE output
ALLREDUCES_PER_LAYER = 2


def per_rank(model: Model, machine: Machine, tp: int) -> tuple[Model, Machine]:
    """(the share of ``model`` one of ``tp`` ranks holds and reads, ``machine`` with the
    all-reduces in its step overheads); unchanged for ``tp`` 1."""
    if tp <= 1:
        return model, machine
    split: dict[str, object] = {
        "expert_bytes_per_param": model.expert_bytes_per_param / tp,
        "dense_active_gb": model.dense_active_gb / tp,
        "embedding_gb": model.embedding_gb / tp,
        "lm_head_params_m": model.lm_head_params_m / tp,
        "kv_bytes_per_token": max(1, model.kv_bytes_per_token // tp),
        "kv_window_bytes_per_token": model.kv_window_bytes_per_token // tp,
        "linear_state_gb_per_request": model.linear_state_gb_per_request / tp,
        "state_bytes_per_step": model.state_bytes_per_step / tp,
        "linear_ring_bytes_per_position": model.linear_ring_bytes_per_position // tp,
        "prefill_attn_flops_per_pair": model.prefill_attn_flops_per_pair / tp,
        "prefill_window_flops_per_pair": model.prefill_window_flops_per_pair / tp,
    }
    ms = ALLREDUCE_US * ALLREDUCES_PER_LAYER / 1000
    talk = machine.model_copy(update={
        "step_overhead_ms": machine.step_overhead_ms + model.layers * ms,
        "drafts": {k: c.model_copy(update={
            "forward_ms": c.forward_ms + _talking_layers(model.drafts.get(k)) * ms})
            for k, c in machine.drafts.items()},
        "prefill_overhead_ms": machine.prefill_overhead_ms + model.layers * ms})
    split["drafts"] = {k: _draft_share(d, tp) for k, d in model.drafts.items()}
    return model.model_copy(update=split), talk


def _draft_share(d: Draft, tp: int) -> Draft:
    """One rank's share of a speculative draft, by its kind."""
    if isinstance(d, DenseDraft):
        return d.model_copy(update={
            "resident_gb": d.resident_gb / tp, "dense_read_gb": d.dense_read_gb / tp,
            "kv_bytes_per_token": max(1, d.kv_bytes_per_token // tp),
            "per_request_gb": d.per_request_gb / tp})
    return d.model_copy(update={
        "weights_gb": d.weights_gb / tp, "dense_active_gb": d.dense_active_gb / tp,
        "kv_bytes_per_token": max(1, d.kv_bytes_per_token // tp)})


def _talking_layers(d: Draft | None) -> int:
    """Layers whose all-reduces a draft forward adds: an MTP draft's. A dense draft's are
    not charged, as before issue 35 (a gap: its layers are split and all-reduce too; no
    TP launch of one is calibrated); no draft, no forward."""
    return d.moe_layers if isinstance(d, MtpDraft) else 0


def describe_tp(model: Model, tp: int) -> str:
    """The start-up log's line for a TP launch."""
    return (f"simulator: tensor parallel {tp}: rank 0 holds {model.weights_gb:.2f} GB of "
            f"weights and {model.kv_bytes_per_token} B/token of KV (1/{tp} each); "
            f"{ALLREDUCES_PER_LAYER} all-reduces per layer of {ALLREDUCE_US:g} us each "
            "(ASSUMED)")
