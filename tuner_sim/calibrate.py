"""Model vs published: every published number (docs/simulator.md) beside the model's prediction.

Workload shapes used for the predictions (documented in docs/simulator.md):

* synthetic: 32K input, 2K output, greedy, so the mean decode context is 33,792 tokens;
* GSM8K: 5-shot prompt of about 700 tokens whose few-shot prefix is served from the radix
  cache (96 new tokens prefilled per question), outputs lognormal (median 310, sigma 1.10),
  token-weighted mean decode context 700 + E[L^2] / (2 E[L]);
* SGLang's GB10 cookbook cells (docs/dspark.md): ``bench_serving`` random dataset, 8,192
  tokens in and 1,024 out, temperature 0, ignore_eos, BF16 LM head, flashinfer_mxfp4, each
  cell replayed through the scheduler model (:mod:`tuner_sim.load`: 40 requests at
  concurrency 1, 160 at 16, the cookbook's launch flags, each prompt its own acceptance
  from the prompt lottery). TPOT is the replay's median per-request TPOT (ASSUMED: the
  cookbook's is bench_serving's median), throughput input and output tokens over the
  replay's duration.
* third-party Spark rows by content (:func:`spark_rows`, docs/simulator.md "Real Spark
  rows"): ~50-token chat prompts, 1,024 out, T=0.6, mean decode context prompt + 512; the
  prompt lottery on 8K random prompts read as quantiles of the per-prompt acceptance;
* Qwen3.8-Flash-Next's cookbook cells (:func:`qwen38_rows`, docs/simulator.md): the same
  ``bench_serving`` random dataset at 1,024 tokens in and 256 out, T=0, each cell replayed
  through the scheduler model with the cell's own launch flags and its benchmark command's
  request count (8 at concurrency 1, twice the concurrency above: its ``numPromptsByConc``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tuner_sim.load import LoadResult
from tuner_sim.load import closed_loop
from tuner_sim.load import core_for
from tuner_sim.perf import PerfModel
from tuner_sim.perf import Settings
from tuner_sim.perf import Workload
from tuner_sim.profiles import DenseDraft
from tuner_sim.profiles import Machine
from tuner_sim.profiles import Model
from tuner_sim.profiles import load_machine
from tuner_sim.profiles import load_model_for_path


@dataclass(frozen=True)
class Row:
    table: str
    metric: str
    published: float
    model: float
    unit: str
    #: "withinN": must be within +-N% of the published figure; "above1": must exceed 1
    #: (published only as "slower than baseline"); "info": shown, not checked.
    check: str = "within5"

    @property
    def error_pct(self) -> float:
        return (self.model / self.published - 1.0) * 100.0

    @property
    def ok(self) -> bool | None:
        if self.check.startswith("within"):
            return abs(self.error_pct) <= float(self.check[6:])
        if self.check == "above1":
            return self.model > 1.0
        return None


BASELINE = Settings()
HUMMING = Settings(moe_backend="humming")
HUMMING_FP8 = Settings(moe_backend="humming", lm_head="fp8")
ALL_THREE = Settings(moe_backend="humming", lm_head="fp8", speculative=True, steps=3, topk=1,
                     draft_tokens=4)
TRAP = Settings(moe_backend="humming", lm_head="fp8", speculative=True, steps=3, topk=1,
                draft_tokens=4, draft_lm_head_ok=False)


def rows(machine_name: str = "dgx-spark") -> list[Row]:
    machine = load_machine(machine_name)
    model = load_model_for_path("inclusionAI/Ling-3.0-flash-fp4")
    g = model.gsm8k
    syn = Workload("greedy", 32768 + 1024, "random")
    med, sig = g.output_tokens_median, g.output_tokens_sigma
    mean_len = med * math.exp(sig**2 / 2)
    weighted_pos = med * math.exp(1.5 * sig**2) / 2
    gsm = Workload("sampled", 700 + weighted_pos)
    out: list[Row] = []

    def pm(s: Settings) -> PerfModel:
        return PerfModel(machine, model, s)

    base_syn = pm(BASELINE).expected_tpot_ms(syn)
    for name, s, tpot, tps in [
            ("baseline (flashinfer_mxfp4 + fp32 LM head)", BASELINE, 27.71, 36.09),
            ("+ humming", HUMMING, 25.35, 39.45),
            ("+ humming + FP8 LM head", HUMMING_FP8, 22.76, 43.94),
            ("+ humming + FP8 LM head + MTP 3/1/4", ALL_THREE, 9.72, 102.88)]:
        t = pm(s).expected_tpot_ms(syn)
        out.append(Row("synthetic 32K/2K greedy", f"{name}: TPOT", tpot, t, "ms"))
        out.append(Row("synthetic 32K/2K greedy", f"{name}: decode tok/s", tps, 1000 / t,
                       "tok/s"))
    out.append(Row("synthetic 32K/2K greedy", "MTP accept length", 3.90,
                   pm(ALL_THREE).expected_accept_length("greedy", "random"), ""))
    trap_syn = pm(TRAP).expected_tpot_ms(syn)
    out.append(Row("synthetic 32K/2K greedy", "LM-head module not shared: accept length",
                   1.00, pm(TRAP).expected_accept_length("greedy", "random"), ""))
    out.append(Row("synthetic 32K/2K greedy", "LM-head module not shared: TPOT / baseline "
                   "TPOT (published: slower than baseline)", 1.0, trap_syn / base_syn, "x",
                   check="above1"))

    for label, s, tpot, tps, e2e, p50, p95, ttft, mean_out in [
            ("baseline", BASELINE, 26.45, 37.81, 15.21, 8.36, 50.20, 0.207, 567),
            ("all three", ALL_THREE, 18.56, 53.89, 11.49, 6.11, 38.60, 0.214, 607)]:
        m = pm(s)
        t = m.expected_tpot_ms(gsm)
        ttft_s = m.prefill_ms(96, 640) / 1000
        z95 = 1.6448536269514722
        tbl = "GSM8K 1,319 x 5-shot, T=0.6"
        out += [
            Row(tbl, f"{label}: TPOT", tpot, t, "ms"),
            Row(tbl, f"{label}: decode tok/s", tps, 1000 / t, "tok/s"),
            Row(tbl, f"{label}: mean TTFT", ttft, ttft_s, "s", check="info"),
            Row(tbl, f"{label}: mean end-to-end latency", e2e,
                ttft_s + (mean_len - 1) * t / 1000, "s", check="info"),
            Row(tbl, f"{label}: P50 latency", p50, ttft_s + (med - 1) * t / 1000, "s",
                check="info"),
            Row(tbl, f"{label}: P95 latency", p95,
                ttft_s + (med * math.exp(z95 * sig) - 1) * t / 1000, "s", check="info"),
            Row(tbl, f"{label}: mean output tokens", mean_out, mean_len, "tok", check="info"),
        ]
    out += cookbook_rows(machine, model)
    acc = g.accuracy
    opt_acc = acc + g.accuracy_delta_pp.get("lm_head_fp8", 0.0) / 100
    out += [
        Row("GSM8K 1,319 x 5-shot, T=0.6", "baseline: accuracy", 96.89, acc * 100, "%"),
        Row("GSM8K 1,319 x 5-shot, T=0.6", "all three: accuracy", 96.82, opt_acc * 100, "%"),
        Row("GSM8K 1,319 x 5-shot, T=0.6", "all three: MTP accept length", 2.68,
            pm(ALL_THREE).expected_accept_length("sampled"), ""),
        Row("GSM8K 1,319 x 5-shot, T=0.6", "LM-head module not shared: accept length", 1.00,
            pm(TRAP).expected_accept_length("sampled"), ""),
        Row("GSM8K 1,319 x 5-shot, T=0.6", "LM-head module not shared: TPOT / baseline TPOT "
            "(published: slower than baseline)", 1.0,
            pm(TRAP).expected_tpot_ms(gsm) / pm(BASELINE).expected_tpot_ms(gsm), "x",
            check="above1"),
        Row("GSM8K 1,319 x 5-shot, T=0.6", "LM-head module not shared: decode tok/s "
            "(Ling fork notes)", 24.0, 1000 / pm(TRAP).expected_tpot_ms(gsm), "tok/s",
            check="info"),
    ]
    return out


#: the cookbook's launches (docs/dspark.md), as the simulator parses them
COOKBOOK_ARGV = ["--model-path", "inclusionAI/Ling-3.0-flash-fp4", "--moe-runner-backend",
                 "flashinfer_mxfp4", "--mem-fraction-static", "0.85"]
COOKBOOK_DSPARK_ARGV = [*COOKBOOK_ARGV, "--speculative-algorithm", "DSPARK",
                        "--speculative-draft-model-path", "inclusionAI/Ling-3.0-flash-dspark",
                        "--enable-linear-replayssm-spec", "--linear-replayssm-cache-len", "32"]
#: requests per replay, by concurrency: a long run's steady state at 16 (10 x the
#: concurrency); 40 prompts at 1, each drawing its own acceptance from the prompt lottery
#: (ASSUMED: the cookbook's ``--num-prompts`` is not published)
LOAD_PROMPTS = {1: 40, 16: 160}


def implied_mean_tpot_ms(concurrency: int, ttft_ms: float, tokens_per_s: float) -> float:
    """The mean TPOT a closed-loop cell's TTFT and throughput imply: ``concurrency``
    clients each finishing a request of 8,192 + 1,024 tokens every ``concurrency x 9,216 /
    tok/s`` seconds, less the TTFT, over 1,023 tokens (a steady state: Little's law)."""
    latency_ms = concurrency * (8192 + 1024) / tokens_per_s * 1000
    return (latency_ms - ttft_ms) / 1023


def cookbook_rows(machine: Machine, model: Model) -> list[Row]:
    """SGLang's GB10 cookbook cells for Ling-3.0-flash (docs/dspark.md): DSPARK and
    speculation off, each cell replayed through the scheduler model by
    :mod:`tuner_sim.load` (``bench_serving``: 40 prompts at concurrency 1, 160 at 16), the
    prompts' acceptance read from the prompt lottery at evenly spaced quantiles. The
    published TPOT is compared with the replay's median per-request TPOT (ASSUMED: the
    cookbook prints bench_serving's median; docs/simulator.md "Load"), tok/s with total
    (input + output) tokens over the replay's duration. Checked: TPOT within 3% and TTFT
    within 10% at concurrency 1, tok/s and everything at concurrency 16 within 5%."""
    tbl = "GB10 cookbook, random 8192/1024, T=0"
    cells = {"off": (COOKBOOK_ARGV, 25.76, 2069, 324, 106.51, 21650, 1129),
             "DSPARK": (COOKBOOK_DSPARK_ARGV, 9.48, 2172, 580, 38.09, 71292, 1157)}
    tokens_in, tokens_out = 8192, 1024
    out: list[Row] = []
    tpot1: dict[str, float] = {}
    for label, (argv, tpot, ttft, tps, tpot16, ttft16, tps16) in cells.items():
        def replay(c: int, argv: list[str] = argv) -> LoadResult:
            return closed_loop(core_for(argv, machine, model), prompts=LOAD_PROMPTS[c],
                               concurrency=c, input_tokens=tokens_in,
                               output_tokens=tokens_out, stratified=True)

        one = replay(1)
        tpot1[label] = one.median_tpot_ms
        out += [Row(tbl, f"{label}, concurrency 1: TPOT (model: the median prompt's)", tpot,
                    one.median_tpot_ms, "ms", check="within3"),
                Row(tbl, f"{label}, concurrency 1: mean TPOT (published: implied by its "
                    "TTFT and tok/s)", implied_mean_tpot_ms(1, ttft, tps), one.mean_tpot_ms,
                    "ms", check="info"),
                Row(tbl, f"{label}, concurrency 1: TTFT", ttft, one.mean_ttft_ms, "ms",
                    check="within10"),
                Row(tbl, f"{label}, concurrency 1: tok/s (in + out)", tps, one.tokens_per_s,
                    "tok/s")]
        r = replay(16)
        out += [Row(tbl, f"{label}, concurrency 16: TPOT (model: the median request's)",
                    tpot16, r.median_tpot_ms, "ms"),
                Row(tbl, f"{label}, concurrency 16: mean TPOT (published: implied by its "
                    "TTFT and tok/s)", implied_mean_tpot_ms(16, ttft16, tps16),
                    r.mean_tpot_ms, "ms", check="info"),
                Row(tbl, f"{label}, concurrency 16: mean TTFT (model: at most "
                    f"{r.most_running} running)", ttft16, r.mean_ttft_ms, "ms"),
                Row(tbl, f"{label}, concurrency 16: tok/s (in + out)", tps16, r.tokens_per_s,
                    "tok/s")]
    out.append(Row(tbl, "DSPARK speed-up over off at concurrency 1 (PR: ~2.7x)", 25.76 / 9.48,
                   tpot1["off"] / tpot1["DSPARK"], "x", check="info"))
    return out


#: the prompt lottery's quantiles of per-prompt acceptance read as a source's "best" and
#: "worst" prompt (ASSUMED: a prompt set of about 20, docs/simulator.md)
BEST_DRAW, WORST_DRAW = 0.95, 0.05


def prompt_tpot_ms(m: PerfModel, w: Workload, quantile: float) -> float:
    """TPOT of the prompt whose first-position rate is the ``quantile`` of its class's
    per-prompt distribution (a higher quantile accepts more: a faster prompt)."""
    from scipy import stats

    c = m.acceptance_class(w.kind, w.content)
    rate = float(stats.beta(c.first * c.concentration,
                            (1 - c.first) * c.concentration).ppf(quantile))
    step = m.decode_ms(w.context, w.kind, content=w.content)
    return step / m.accept_length_given(rate, w.kind, w.content)


def dspark_settings(backend: str, head: str, gamma: int = 8) -> Settings:
    return Settings(moe_backend=backend, lm_head=head, speculative=True, algorithm="DSPARK",
                    gamma=gamma, steps=1, topk=1, draft_tokens=gamma + 1)


#: docs/simulator.md, "Real Spark rows": Ling-3.0-flash on one DGX Spark, T=0.6, ~50-token
#: chat prompts (code 58, prose 50), 1,024 tokens out (0xBakeer/ling3-flash-spark)
SPARK_ROWS: list[tuple[str, Settings, float, float, float, float, float]] = [
    # profile, settings, code TPOT, its rerun, prose TPOT, its rerun, TTFT (range middle)
    ("humming-dspark", dspark_settings("humming", "fp8"), 14.62, 13.20, 23.07, 23.83, 183.5),
    ("cookbook", dspark_settings("flashinfer_mxfp4", "bf16"), 14.95, 0, 26.45, 0, 205.5),
    ("cookbook-exact (mem 0.85)", dspark_settings("flashinfer_mxfp4", "bf16"), 14.47, 0,
     25.08, 0, 187.5),
    ("humming-nextn", ALL_THREE, 18.11, 0, 22.23, 0, 178.0),
]
SPARK_PROMPT = {"code": 58, "chat": 50}


def spark_rows(machine_name: str = "dgx-spark") -> list[Row]:
    """The third-party Spark rows by content (docs/simulator.md), each checked within 8%;
    the prompt lottery on 8K random prompts; the block-size and draft-choice shape the
    rows imply. Empty on a machine that is not a GB10."""
    if machine_name != "dgx-spark":
        return []
    machine = load_machine(machine_name)
    model = load_model_for_path("inclusionAI/Ling-3.0-flash-fp4")

    def pm(s: Settings) -> PerfModel:
        return PerfModel(machine, model, s)

    tbl = "Spark rows by content (0xBakeer), T=0.6, 1,024 out"
    out: list[Row] = []
    for name, s, code, code2, prose, prose2, ttft in SPARK_ROWS:
        for content, pub, rerun in (("code", code, code2), ("chat", prose, prose2)):
            w = Workload("sampled", SPARK_PROMPT[content] + 512, content)
            t = pm(s).expected_tpot_ms(w)
            label = "prose" if content == "chat" else content
            out.append(Row(tbl, f"{name}: {label} TPOT", pub, t, "ms", check="within8"))
            if rerun:
                out.append(Row(tbl, f"{name}: {label} TPOT (after a reboot)", rerun, t, "ms",
                               check="within8"))
        out.append(Row(tbl, f"{name}: TTFT (range middle)", ttft,
                       pm(s).prefill_ms(SPARK_PROMPT["code"]), "ms", check="info"))
    cook = pm(dspark_settings("flashinfer_mxfp4", "bf16"))
    lot = Workload("sampled", 8192 + 512, "random")
    ltbl = "Spark prompt lottery, random 8K, cookbook DSPARK, T=0.6"
    out += [Row(ltbl, "fastest prompt (95th-percentile acceptance)", 9.6,
                prompt_tpot_ms(cook, lot, BEST_DRAW), "ms", check="within8"),
            Row(ltbl, "median prompt", 16.9, prompt_tpot_ms(cook, lot, 0.5), "ms",
                check="within8"),
            Row(ltbl, "slowest prompt (5th-percentile acceptance)", 39.9,
                prompt_tpot_ms(cook, lot, WORST_DRAW), "ms", check="info")]
    stbl = "Spark rows' shape (sampled, ~50-token prompts)"
    draft = model.drafts.get("DSPARK")
    trained = draft.block_size if isinstance(draft, DenseDraft) and draft.block_size else 8
    for backend, head in (("humming", "fp8"), ("flashinfer_mxfp4", "bf16")):
        w = Workload("sampled", SPARK_PROMPT["code"] + 512, "code")
        tp = {g: pm(dspark_settings(backend, head, g)).expected_tpot_ms(w) for g in range(2, 13)}
        out.append(Row(stbl, f"best DSPARK block size on code, {backend} (published: the "
                       "draft's trained block, within 2)", trained, min(tp, key=tp.__getitem__),
                       "", check="within25"))
    w = Workload("sampled", SPARK_PROMPT["chat"] + 512, "chat")
    best = min(pm(dspark_settings("humming", "fp8", g)).expected_tpot_ms(w)
               for g in range(2, 13))
    out.append(Row(stbl, "prose: NEXTN 3/1/4 TPOT / the best DSPARK's (within 5% of 1)", 1.0,
                   pm(ALL_THREE).expected_tpot_ms(w) / best, "x", check="within5"))
    wc = Workload("sampled", SPARK_PROMPT["code"] + 512, "code")
    out.append(Row(stbl, "code: DSPARK's lead, NEXTN TPOT / DSPARK's (humming; published "
                   "1.24, 1.37 after a reboot)", 18.11 / 14.62,
                   pm(ALL_THREE).expected_tpot_ms(wc)
                   / pm(dspark_settings("humming", "fp8")).expected_tpot_ms(wc), "x",
                   check="info"))
    return out


# ---- Qwen3.8-Flash-Next on the GB10 (sgl-project/sglang PR #37995's cookbook cells) ----

QWEN38 = "RadixArk/Qwen3.8-Flash-Next-NVFP4"
#: the 1x Spark cells' shared flags (docs/src/snippets/configs/Qwen/qwen3.8-flash-next.jsx):
#: TP 1, the n-gram table file-backed on the NVMe (the PLE Offload chip "On (NVMe file)")
_QWEN38_BASE = ["--model-path", QWEN38, "--tp-size", "1", "--fp4-gemm-backend",
                "flashinfer_cutlass", "--page-size", "64", "--chunked-prefill-size", "4096",
                "--context-length", "262144", "--reasoning-parser", "qwen3",
                "--mem-fraction-static", "0.85", "--ple-offload-embedding",
                "--ple-offload-backend", "file"]
_QWEN38_MTP = ["--speculative-algorithm", "NEXTN", "--speculative-num-steps", "3",
               "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4",
               "--max-running-requests", "8", "--max-mamba-cache-size", "40"]
_QWEN38_OFF = ["--mamba-radix-cache-strategy", "extra_buffer_lazy", "--max-running-requests",
               "24", "--max-mamba-cache-size", "96"]
#: RadixArk's export passes --quantization modelopt_fp4; NVIDIA's ModelOpt MIXED_PRECISION
#: export does not and pins the MoE runner instead (its 2x cells' flags)
QWEN38_ARGV = {
    ("RDXA", "low latency"): [*_QWEN38_BASE, "--quantization", "modelopt_fp4", *_QWEN38_MTP],
    ("RDXA", "high throughput"): [*_QWEN38_BASE, "--quantization", "modelopt_fp4",
                                  *_QWEN38_OFF],
    ("NVDA", "low latency"): [*_QWEN38_BASE, "--moe-runner-backend", "flashinfer_cutlass",
                              *_QWEN38_MTP],
    ("NVDA", "high throughput"): [*_QWEN38_BASE, "--moe-runner-backend",
                                  "flashinfer_cutlass", *_QWEN38_OFF],
}
#: (export, tier, nodes) -> [(concurrency, TTFT ms, TPOT ms, (input + output) tok/s per
#: GPU)], docs/src/snippets/configs/Qwen/qwen3.8-flash-next-benchmarks.jsx
QWEN38_CELLS: dict[tuple[str, str, int], list[tuple[int, float, float, float]]] = {
    ("RDXA", "low latency", 1): [(1, 648.92, 33.59, 137), (4, 1089.20, 60.10, 288),
                                 (8, 1341.05, 94.64, 358)],
    ("RDXA", "high throughput", 1): [(1, 580.18, 61.63, 80), (16, 7281.52, 181.30, 386),
                                     (24, 8336.78, 241.20, 415)],
    ("NVDA", "low latency", 1): [(1, 650.03, 33.26, 136), (4, 1546.18, 61.22, 266),
                                 (8, 2167.14, 95.63, 342)],
    ("NVDA", "high throughput", 1): [(1, 604.33, 63.54, 78), (16, 6272.56, 179.25, 397),
                                     (24, 7151.52, 246.79, 443)],
    ("RDXA", "low latency", 2): [(1, 457.14, 19.94, 116), (16, 2027.14, 79.16, 379),
                                 (24, 2301.03, 101.95, 464)],
    ("RDXA", "high throughput", 2): [(1, 416.42, 39.33, 60), (16, 4035.18, 90.87, 372),
                                     (96, 19531.95, 301.92, 603)],
    ("NVDA", "low latency", 2): [(1, 447.13, 18.70, 119), (16, 2161.72, 73.20, 415),
                                 (24, 1608.84, 97.80, 496)],
    ("NVDA", "high throughput", 2): [(1, 398.49, 38.62, 61), (16, 4949.99, 90.58, 364),
                                     (96, 17962.94, 289.52, 632)],
}
#: the KV pools the 1x RDXA cells' notes state (tokens)
QWEN38_POOLS = {"low latency": 93_000, "high throughput": 286_000}


def qwen38_rows(machine_name: str = "dgx-spark") -> list[Row]:
    """The twin of Qwen3.8-Flash-Next against the cookbook's cells. Calibrated on (FIT and
    checked within 5%): the RadixArk export's 1x TPOT at every concurrency and the
    high-throughput cell's TTFT at concurrency 1. Reported with their error (not fitted,
    not checked): the other TTFTs and the throughputs of those cells, NVIDIA's export on
    one Spark (the same twin), and the 2x cells at concurrency 1, TP=2, which the
    simulator does not model (the 1x twin's figure beside them). Empty on a machine that is
    not a GB10."""
    if machine_name != "dgx-spark":
        return []
    machine = load_machine(machine_name)
    model = load_model_for_path(QWEN38)
    out: list[Row] = []
    for (export, tier, nodes), cells in QWEN38_CELLS.items():
        argv = QWEN38_ARGV[(export, tier)]
        fitted = export == "RDXA" and nodes == 1
        tbl = (f"Qwen3.8-Flash-Next {export}, {nodes}x GB10 cookbook {tier}, random "
               "1024/256, T=0" + ("" if nodes == 1 else " (TP=2 not modelled: the 1x twin)"))
        # a pair's cells under load run 24 or 96 requests, whose state pool (120 or 384
        # slots of 0.12 GB) one Spark cannot hold: only its concurrency-1 cell is replayed
        for c, ttft, tpot, tps in cells if nodes == 1 else cells[:1]:
            r = closed_loop(core_for(argv, machine, model), prompts=8 if c == 1 else 2 * c,
                            concurrency=c, input_tokens=1024, output_tokens=256)
            ttft_check = "within5" if fitted and c == 1 and tier == "high throughput" \
                else "info"
            out += [Row(tbl, f"concurrency {c}: TPOT", tpot, r.mean_tpot_ms, "ms",
                        check="within5" if fitted else "info"),
                    Row(tbl, f"concurrency {c}: mean TTFT", ttft, r.mean_ttft_ms, "ms",
                        check=ttft_check),
                    Row(tbl, f"concurrency {c}: tok/s (in + out)" + (
                        "" if nodes == 1 else f", the pair's ({nodes} x per GPU)"),
                        tps * nodes, r.tokens_per_s, "tok/s", check="info")]
        if fitted:
            pool = core_for(argv, machine, model).limits.pool_tokens
            out.append(Row(tbl, "KV pool at --mem-fraction-static 0.85 (the cell's notes)",
                           QWEN38_POOLS[tier], pool, "tokens", check="info"))
    mtp = PerfModel(machine, model, Settings(moe_backend="flashinfer_cutlass", lm_head="bf16",
                                             speculative=True))
    out.append(Row("Qwen3.8-Flash-Next RDXA, 1x GB10 cookbook low latency, random 1024/256, "
                   "T=0", "MTP accept length on random tokens (published: 2.9-3.5 on "
                   "non-thinking output)", 3.2, mtp.expected_accept_length("greedy", "random"),
                   "", check="info"))
    return out
