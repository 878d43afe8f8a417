"""What a twin predicts for a model that has no published figures (``tuner sim calibrate
--model PATH`` on a DERIVED twin): its derived sizes and the figures the tool would
measure, each labelled with the twin's source. Nothing is checked: there is nothing to
check against.

Workload shapes are ``tuner_sim.calibrate``'s: batch-1 decode at a GSM8K-like context of
1,200 tokens (sampled) and at the cookbook's 8,192 + 512 (greedy, random tokens); TTFT of a
cold prompt; a concurrency-16 replay of 8,192 in / 1,024 out through the scheduler model.
"""

from __future__ import annotations

from dataclasses import dataclass

from tuner_sim.args import LaunchError
from tuner_sim.load import closed_loop
from tuner_sim.load import core_for
from tuner_sim.perf import PerfModel
from tuner_sim.perf import Settings
from tuner_sim.perf import Workload
from tuner_sim.profiles import Machine
from tuner_sim.profiles import Model


@dataclass(frozen=True)
class Prediction:
    table: str
    metric: str
    model: float | None           # None: the launch is refused (``note`` says how)
    unit: str
    source: str                   # the twin's: DERIVED, or calibrated
    note: str = ""


def fraction_for(machine: Machine) -> float:
    """The memory fraction the predictions launch with: 0.85, or just under the machine's
    safe limit where that is lower (a GB10's 0.70)."""
    return round(min(0.85, machine.safe_mem_fraction_max - 0.02), 2)


def _sizes(model: Model, machine: Machine, path: str, src: str) -> list[Prediction]:
    t = "derived from config.json"
    mtp = model.drafts.get("NEXTN")
    out = [Prediction(t, "weights resident", model.weights_gb, "GB", src),
           Prediction(t, "parameters (total / active per token)", model.params_total_b,
                      "B", src, f"{model.params_active_b:.2f} B active"),
           Prediction(t, "KV cache per token", model.kv_bytes_per_token
                      + model.kv_window_bytes_per_token, "B", src),
           Prediction(t, "linear-attention state per request",
                      model.linear_state_gb_per_request * 1e3, "MB", src),
           Prediction(t, "NEXTN (MTP) layer", mtp.resident_gb if mtp else 0.0, "GB", src,
                      "" if mtp else "none in the checkpoint")]
    f = fraction_for(machine)
    argv = ["--model-path", path, "--mem-fraction-static", str(f)]
    try:
        core = core_for(argv, machine, model)
        out.append(Prediction(t, f"KV pool at --mem-fraction-static {f}",
                              core.limits.pool_tokens, "tokens", src))
    except LaunchError as exc:
        out.append(Prediction(t, f"KV pool at --mem-fraction-static {f}", None, "tokens",
                              src, f"refused: {exc.exc_type}: {exc.message}"))
    return out


def _decode(model: Model, machine: Machine, src: str) -> list[Prediction]:
    t = "batch 1"
    out: list[Prediction] = []
    runs = [("no speculation, BF16 LM head", Settings(moe_backend="auto", lm_head="bf16"))]
    if "NEXTN" in model.drafts:
        runs.append(("NEXTN 3/1/4", Settings(moe_backend="auto", lm_head="bf16",
                                             speculative=True)))
    for name, s in runs:
        pm = PerfModel(machine, model, s)
        for w, label in [(Workload("sampled", 1200, "math"), "math, T>0, context 1,200"),
                         (Workload("greedy", 8192 + 512, "random"),
                          "random tokens, T=0, context 8,704")]:
            out.append(Prediction(t, f"{name}: TPOT ({label})", pm.expected_tpot_ms(w),
                                  "ms", src))
    pm = PerfModel(machine, model, runs[0][1])
    out += [Prediction(t, f"TTFT of {n:,} new tokens", pm.prefill_ms(n), "ms", src)
            for n in (1024, 8192, 32768)]
    return out


def _load(model: Model, machine: Machine, path: str, src: str) -> list[Prediction]:
    argv = ["--model-path", path, "--mem-fraction-static", str(fraction_for(machine))]
    try:
        r = closed_loop(core_for(argv, machine, model), prompts=160, concurrency=16,
                        input_tokens=8192, output_tokens=1024)
    except LaunchError:
        return []                      # the sizes say why it cannot start
    t = "concurrency 16, random 8192/1024, T=0"
    return [Prediction(t, "TPOT", r.mean_tpot_ms, "ms", src),
            Prediction(t, f"TTFT (at most {r.most_running} running)", r.mean_ttft_ms, "ms",
                       src),
            Prediction(t, "tok/s (in + out)", r.tokens_per_s, "tok/s", src)]


def predictions(model: Model, machine: Machine, path: str) -> list[Prediction]:
    """Every figure the twin of ``model`` (served from ``path``) predicts on ``machine``."""
    src = model.twin
    out = _sizes(model, machine, path, src)
    if out[-1].model is None:          # it cannot start: nothing to decode
        return out
    return out + _decode(model, machine, src) + _load(model, machine, path, src)
