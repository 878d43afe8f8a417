"""The performance model: milliseconds of machine time from bytes moved, from first principles.

A decode forward of M tokens at context C reads

* the routed experts the M tokens touch: ``moe_layers x D(M) x expert_bytes`` at the MoE
  backend's streaming efficiency, plus the backend's fixed floor per layer (one cost model
  for a plain step, a NEXTN verify and a DSPARK verify: only M differs), where
  ``D(M) = E (1 - (1 - k/E)^M_eff)`` is the expected number of distinct experts among M
  tokens routed k of E each, and
  ``M_eff = 1 + (M - 1)(1 - overlap)`` shrinks when consecutive tokens reuse experts;
* the dense weights (attention, KDA, shared expert) once, FP8;
* the KV cache of the MLA layers for the context;
* the LM head once, at its precision;

over the machine's bandwidth, plus a fixed per-forward overhead. A round is costed by its
algorithm's shape (:mod:`tuner_sim.speculative`) from its draft's kind. A NEXTN round is
``steps`` draft forwards of the NEXTN layer (M = topk after the first) and one verify
forward of M = draft tokens, plus a per-round overhead. A DSPARK round is one forward of
the dense block draft (its layers, the shared LM head over gamma positions, its own KV)
and one verify forward of M = gamma + 1, plus a per-round overhead. Acceptance is a
per-position process whose rates depend on the draft, the content class and the decoding
mode (docs/simulator.md); a block draft's positions past its trained block size are never
accepted. All figures are machine time; the server divides by its time
scale before sleeping.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tuner_sim.profiles import AcceptanceClass
from tuner_sim.profiles import DenseDraft
from tuner_sim.profiles import Draft
from tuner_sim.profiles import DraftCosts
from tuner_sim.profiles import Machine
from tuner_sim.profiles import Model
from tuner_sim.profiles import MtpDraft
from tuner_sim.speculative import BLOCK
from tuner_sim.speculative import TREE
from tuner_sim.speculative import Algorithm
from tuner_sim.speculative import resolved


@dataclass(frozen=True)
class Settings:
    """The resolved server settings the model depends on."""

    moe_backend: str = "flashinfer_mxfp4"
    humming_w4a8: bool = False
    lm_head: str = "fp32"          # effective dtype of the vocab GEMM: fp32 | bf16 | fp8
    speculative: bool = False
    steps: int = 3
    topk: int = 1
    draft_tokens: int = 4
    spec_moe_backend: str | None = None
    draft_lm_head_ok: bool = True  # False: the draft reads FP8 weights as BF16 (the trap)
    #: resolved (/server_info's): EAGLE (NEXTN), EAGLE3, DSPARK (tuner_sim.speculative)
    algorithm: str = "EAGLE"
    gamma: int = 8                 # a block draft's tokens drafted per round (DSPARK's)

    @property
    def algo(self) -> Algorithm:
        """The registry's entry for :attr:`algorithm` (NEXTN's without speculation: whose
        acceptance table a request's rate is drawn from all the same)."""
        algo = resolved(self.algorithm)
        if algo is None:
            raise LookupError(f"simulator: speculative algorithm {self.algorithm} is not "
                              "modelled")
        return algo

    @property
    def block(self) -> bool:
        """Speculative with a block draft (one forward drafts ``gamma`` tokens)."""
        return self.speculative and self.algo.shape is BLOCK

    @property
    def drafted(self) -> int:
        """Draft tokens proposed per round (what a verify can accept at most)."""
        return self.algo.shape.drafted(self) if self.speculative else self.steps


def draft_tree_fits(s: Settings) -> bool:
    """Whether SGLang can build the EAGLE draft tree: ``organize_draft_results`` takes the
    top ``draft_tokens - 1`` of ``topk + (steps - 1) * topk**2`` scored candidates."""
    if not s.speculative or s.algo.shape is not TREE or s.topk == 1:
        return True
    return s.draft_tokens - 1 <= s.topk + (s.steps - 1) * s.topk * s.topk


def _truthy(v: str | None) -> bool:
    return v is not None and v.strip().lower() in ("1", "true", "yes", "on")


def settings_from(args: dict[str, Any], env: Callable[[str], str | None],
                  lm_head_module_shared: bool) -> Settings:
    """The model's settings from resolved server args and the env vars the engine reads
    (``env`` returns None for a variable the engine variant does not know)."""
    from tuner_sim.args import LaunchError

    fp8_head = _truthy(env("SGLANG_ENABLE_FP8_LM_HEAD"))
    lm_head = "fp8" if fp8_head else ("fp32" if args["enable_fp32_lm_head"] else "bf16")
    quant = env("SGLANG_HUMMING_INPUT_QUANT_CONFIG")
    w4a8 = False
    if quant and args["moe_runner_backend"] == "humming":
        try:
            cfg = json.loads(quant)
        except json.JSONDecodeError:
            raise LaunchError("json.decoder.JSONDecodeError",
                              "SGLANG_HUMMING_INPUT_QUANT_CONFIG is not valid JSON") from None
        dtype = cfg.get("a_dtype") or cfg.get("input_dtype") or cfg.get("dtype")
        w4a8 = str(dtype).startswith("float8")
    algorithm = args["speculative_algorithm"]
    spec = algorithm is not None
    algo = resolved(algorithm) if spec else None
    if spec and algo is None:
        raise LaunchError("NotImplementedError", f"simulator: speculative algorithm "
                          f"{algorithm} is not modelled")
    draft_tokens = args["speculative_num_draft_tokens"] or 4
    # The NEXTN draft of a fork without the module fix reads FP8 weights as BF16; DSPARK's
    # draft projects through the shared head module with its quant method (0.5.23's
    # project_through_lm_head), so it is assumed unaffected (docs/simulator.md).
    trap = (algo is not None and algo.shares_head_module and lm_head == "fp8"
            and not lm_head_module_shared)
    block = algo is not None and algo.shape is BLOCK
    return Settings(
        moe_backend=args["moe_runner_backend"], humming_w4a8=w4a8, lm_head=lm_head,
        speculative=spec, steps=args["speculative_num_steps"] or 3,
        topk=args["speculative_eagle_topk"] or 1, draft_tokens=draft_tokens,
        spec_moe_backend=args["speculative_moe_runner_backend"],
        draft_lm_head_ok=not trap, algorithm=algorithm or "EAGLE",
        gamma=draft_tokens - algo.window_extra if algo is not None and block else 8)


@dataclass(frozen=True)
class Workload:
    """What the traffic looks like to the model."""

    kind: str = "sampled"          # sampled | greedy
    context: float = 1200.0        # mean tokens in context during decode
    content: str = "math"          # math | code | chat | random (profiles.CONTENT_CLASSES)


class PerfModel:
    def __init__(self, machine: Machine, model: Model, settings: Settings) -> None:
        self.machine = machine
        self.model = model
        self.s = settings
        self.bw = machine.bandwidth_gbs * 1e9  # bytes/s

    # -- building blocks (milliseconds) ---------------------------------------------------------
    def distinct_experts(self, m_tokens: float, overlap: float, batch: int = 1) -> float:
        """Expected distinct routed experts one layer reads for ``batch`` requests of
        ``m_tokens`` each. Within a request, tokens overlap by ``overlap`` (batched: by the
        retained share of it); across requests, by the model's cross-request overlap."""
        e, k = self.model.routed_experts, self.model.experts_per_token
        if batch > 1:
            br = self.model.batch_routing
            per_request = 1.0 + max(m_tokens - 1.0, 0.0) * (1.0 - overlap * br.overlap_retained)
            m_eff = 1.0 + (batch * per_request - 1.0) * (1.0 - br.cross_request_overlap)
        else:
            m_eff = 1.0 + max(m_tokens - 1.0, 0.0) * (1.0 - overlap)
        return e * (1.0 - (1.0 - k / e) ** m_eff)

    def _moe_eff(self, backend: str) -> float:
        eff = self.machine.efficiency.moe_eff(backend)
        penalty = self.machine.efficiency.w4a8_penalty.get(backend)
        if penalty is not None and self.s.humming_w4a8:
            eff *= 1.0 - penalty
        return eff

    def _ms(self, nbytes: float, eff: float) -> float:
        return nbytes / (self.bw * eff) * 1e3

    def routed_ms(self, m_tokens: float, overlap: float, layers: int, backend: str,
                  batch: int = 1) -> float:
        nbytes = layers * self.distinct_experts(m_tokens, overlap, batch) * self.model.expert_bytes
        return (self._ms(nbytes, self._moe_eff(backend))
                + layers * self.machine.moe_layer_overhead_us.get(backend, 0.0) / 1000.0)

    def lm_head_ms(self, precision: str | None = None) -> float:
        precision = precision or self.s.lm_head
        per_param = 1.0 if precision == "fp8" else self.model.lm_head_bytes_per_param
        nbytes = self.model.lm_head_params_m * 1e6 * per_param
        return self._ms(nbytes, self.machine.efficiency.lm_head[precision])

    def kv_ms(self, context: float, bytes_per_token: int) -> float:
        return self._ms(context * bytes_per_token, self.machine.efficiency.kv)

    def context_ms(self, context: float) -> float:
        """One request's per-step reads besides the weights: its KV cache (full-attention
        layers over the whole context, sliding-window layers over their window) and its
        linear-attention state (read and written)."""
        m = self.model
        ms = self.kv_ms(context, m.kv_bytes_per_token)
        if m.kv_window_bytes_per_token:
            ms += self.kv_ms(min(context, m.kv_window_tokens), m.kv_window_bytes_per_token)
        if m.state_bytes_per_step:
            ms += self._ms(m.state_bytes_per_step, self.machine.efficiency.kv)
        return ms

    def _dense_eff(self) -> float:
        return self.machine.efficiency.dense_eff(self.model.quantization.get("dense", "fp8"))

    def forward_ms(self, m_tokens: float, context: float, overlap: float, batch: int = 1
                   ) -> float:
        """One target forward over ``batch`` requests of ``m_tokens`` each."""
        return (self.machine.step_overhead_ms
                + self.routed_ms(m_tokens, overlap, self.model.moe_layers, self.s.moe_backend,
                                 batch)
                + self._ms(self.model.dense_active_gb * 1e9, self._dense_eff())
                + self.lm_head_ms()
                + batch * self.context_ms(context)
                + batch * m_tokens * self.model.decode_us_per_token / 1e3)

    @property
    def draft(self) -> Draft | None:
        """The profile's draft for the launch's algorithm (None: the model has none)."""
        return self.s.algo.draft_of(self.model)

    @property
    def costs(self) -> DraftCosts:
        """The machine's fixed costs of the launch's algorithm."""
        return self.machine.drafts[self.s.algo.key]

    def draft_ms(self, m_tokens: float, context: float, overlap: float, batch: int = 1
                 ) -> float:
        """One forward of the launch's draft, by its kind: an MTP layer over ``m_tokens``
        per request, or a dense draft (whose weights a forward reads once, whatever the
        tokens)."""
        d = self.draft
        assert d is not None, f"the model profile has no {self.s.algo.key} draft"
        if isinstance(d, DenseDraft):
            return self.dense_draft_ms(d, context, batch)
        backend = self.s.spec_moe_backend or self.s.moe_backend
        return (self.costs.forward_ms
                + self.routed_ms(m_tokens, overlap, d.moe_layers, backend, batch)
                + self._ms(d.dense_active_gb * 1e9, self._dense_eff())
                + self.lm_head_ms()
                + batch * self.kv_ms(context, d.kv_bytes_per_token))

    def dense_draft_ms(self, d: DenseDraft, context: float, batch: int = 1) -> float:
        """One forward of a dense draft: its layers once, the shared LM head over its
        positions (BF16 when the target's head is BF16 with FP32 logits: the draft projects
        in the weight's dtype), its own KV over the context."""
        eff = self.machine.efficiency
        head = "bf16" if self.s.lm_head == "fp32" else self.s.lm_head
        return (self.costs.forward_ms
                + self._ms(d.dense_read_gb * 1e9, eff.dense_eff("bf16"))
                + self.lm_head_ms(head)
                + batch * self.kv_ms(context, d.kv_bytes_per_token))

    def round_ms(self, context: float, overlap: float, batch: int = 1) -> float:
        """One speculative round, as the algorithm's shape costs it (tuner_sim.speculative):
        the draft, then one verify of the draft tokens."""
        return self.s.algo.shape.round_ms(self, context, overlap, batch)

    def overlap(self, kind: str, content: str = "math") -> float:
        return float(getattr(getattr(self.model.routing_overlap, content), kind))

    def decode_ms(self, context: float, kind: str, batch: int = 1, content: str = "math"
                  ) -> float:
        """Machine time of one decode iteration (a plain step, or a speculative round)."""
        overlap = self.overlap(kind, content)
        if self.s.speculative:
            return self.round_ms(context, overlap, batch)
        return self.forward_ms(1, context, overlap, batch)

    def prefill_ms(self, new_tokens: int, cached_tokens: int = 0) -> float:
        """Time to first token: stream the experts the new tokens touch, compute, attention."""
        if new_tokens <= 0:
            new_tokens = 1
        m = self.model
        eff = self.machine.efficiency
        chunks = max(1, math.ceil(new_tokens / 8192))
        per_chunk = min(new_tokens, 8192)
        d = self.draft if self.s.speculative else None
        # an MTP draft's experts stream with the target's; a dense draft prefills its own
        # layers at its own rate
        layers = m.moe_layers + (d.moe_layers if isinstance(d, MtpDraft) else 0)
        experts = chunks * layers * self.distinct_experts(per_chunk, 0.0) * m.expert_bytes
        flops = 2.0 * m.params_active_b * 1e9 * new_tokens
        draft_ms = 0.0
        if isinstance(d, DenseDraft):
            rate = self.costs.prefill_tflops or self.machine.prefill_tflops
            draft_ms = 2.0 * d.params_b * 1e9 * new_tokens / (rate * 1e12) * 1e3
        pairs = new_tokens * (cached_tokens + new_tokens / 2)
        attn = m.prefill_attn_flops_per_pair * pairs
        if m.prefill_window_flops_per_pair:
            attn += m.prefill_window_flops_per_pair * new_tokens * min(
                m.kv_window_tokens, cached_tokens + new_tokens / 2)
        compute_ms = (flops + attn) / (self.machine.prefill_tflops * 1e12) * 1e3
        stream_ms = self._ms(experts, eff.prefill_moe) + self._ms(
            chunks * m.dense_active_gb * 1e9, self._dense_eff())
        return self.machine.prefill_overhead_ms + max(compute_ms, stream_ms) + 0.1 * min(
            compute_ms, stream_ms) + draft_ms + self.lm_head_ms() + (
            new_tokens * m.prefill_us_per_token / 1e3)

    # -- acceptance -------------------------------------------------------------------------------
    def acceptance_class(self, kind: str, content: str = "math") -> AcceptanceClass:
        algo = self.model.acceptance.algorithms[self.s.algo.key]
        return getattr(getattr(algo, content), kind)

    def position_probs(self, first: float, kind: str, content: str = "math") -> list[float]:
        """P(draft at depth i accepted | depths < i accepted), i = 1..drafted."""
        s = self.s
        if not self.s.draft_lm_head_ok:
            return [0.0] * max(0, min(s.steps, s.draft_tokens - 1))
        decay = self.acceptance_class(kind, content).decay
        # the tree's depth and width, or a block of gamma; a block draft proposes past its
        # trained block size blindly: those positions are never accepted, so a gamma above
        # it only adds verify cost (docs/simulator.md)
        depth, w, trained = s.algo.shape.reach(self)
        out = []
        for i in range(depth):
            p = min(max(first * decay ** i, 0.0), 1.0) if i < trained else 0.0
            out.append(1.0 - (1.0 - p) ** w)
        return out

    def accept_length_given(self, first: float, kind: str, content: str = "math") -> float:
        """Expected tokens per round for a request whose first-depth rate is ``first``."""
        total, run = 1.0, 1.0
        for p in self.position_probs(first, kind, content):
            run *= p
            total += run
        return total

    def expected_accept_length(self, kind: str, content: str = "math") -> float:
        """Trial accept length = sum tokens / sum verify rounds = 1 / E[1 / A(first)],
        over the Beta distribution of per-request rates."""
        if not self.s.speculative or not self.s.draft_lm_head_ok:
            return 1.0
        from scipy import integrate
        from scipy import stats

        c = self.acceptance_class(kind, content)
        a, b = c.first * c.concentration, (1 - c.first) * c.concentration
        dist = stats.beta(a, b)
        inv, _ = integrate.quad(
            lambda x: dist.pdf(x) / self.accept_length_given(x, kind, content), 0.0, 1.0,
            limit=200)
        return 1.0 / inv

    def expected_tpot_ms(self, workload: Workload) -> float:
        """Token-weighted mean TPOT for a batch-1 workload (machine milliseconds)."""
        step = self.decode_ms(workload.context, workload.kind, content=workload.content)
        return step / self.expected_accept_length(workload.kind, workload.content)
