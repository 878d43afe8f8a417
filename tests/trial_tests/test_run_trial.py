"""Trials against real simulator processes: truthful figures, the trap, and every failure."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.conftest import GSM8K_DIR
from tests.conftest import SPARK
from tests.conftest import tuner_argv
from tests.simulator import sim_env
from tuner.engines import inspect_engine
from tuner.engines import make_engine
from tuner.space import SearchSpace
from tuner.space import load_space
from tuner.trial import TrialOptions
from tuner.trial import TrialResult
from tuner.trial import run_trial
from tuner.trial._server import port_is_free
from tuner_sim.perf import PerfModel
from tuner_sim.perf import Settings
from tuner_sim.profiles import load_machine
from tuner_sim.profiles import load_model_for_path


pytestmark = pytest.mark.slow
SPACE = load_space(SPARK)
OPTIMISED = {"moe_backend": "humming", "lm_head": "fp8", "speculative": "NEXTN"}


def trial(tmp_path: Path, settings: dict[str, Any] | None = None, *, variant: str = "fork",
          scale: float = 100.0, workload: dict[str, Any] | None = None, caps: bool = False,
          startup_timeout: float = 30.0, faults: list[dict[str, Any]] | None = None,
          space: SearchSpace = SPACE, **opts: Any) -> TrialResult:
    env = sim_env(tmp_path, scale)
    if faults is not None:
        env["TUNER_SIM_FAULTS"] = json.dumps(faults)
    engine = make_engine(f"sim:{variant}", sim_env=env)
    wl = SPACE.spec.workload.model_copy(update={"questions": 12, **(workload or {})})
    options = TrialOptions(
        workdir=tmp_path / "logs", workload=wl, gsm8k=str(GSM8K_DIR),
        startup_timeout_s=startup_timeout,
        capabilities=inspect_engine(engine.entry_command(SPACE)) if caps else None,  # type: ignore[attr-defined]
        **opts)
    return run_trial(space, engine, engine.resolve(space, settings or {}), options)


def assert_clean(r: TrialResult) -> None:
    assert r.cleanup == []
    assert port_is_free("127.0.0.1", r.plan.port)
    assert not [p for p in psutil.process_iter(["cmdline"])
                if f"--port {r.plan.port}" in " ".join(p.info["cmdline"] or [])]


def model_tpot(settings: Settings, context: float, accept: float = 1.0) -> float:
    """The model's TPOT for the synthetic workload: random token ids, greedy."""
    pm = PerfModel(load_machine("dgx-spark"), load_model_for_path("x/ling-3.0-flash-fp4"),
                   settings)
    return pm.decode_ms(context, "greedy", content="random") / accept


SYNTH = {"kind": "synthetic", "input_len": 2048, "output_len": 256, "questions": 6,
         "warmup_requests": 1}


# A low time scale: wall-clock overheads at the first and last chunk are multiplied by the
# scale, and must stay well under 1% of a request's decode time on a busy 2-core CI machine
# (benchmarks/sim_fidelity.py measures the error per scale).
PRECISE_SCALE = 5.0


def test_noise_off_tpot_within_1_percent_of_the_model(tmp_path: Path) -> None:
    r = trial(tmp_path, {}, workload=SYNTH, scale=PRECISE_SCALE)
    assert r.ok, r.message
    expected = model_tpot(Settings(), 2048 + 256 / 2)
    assert r.aggregates is not None and r.aggregates.tpot_ms is not None
    assert abs(r.aggregates.tpot_ms / expected - 1) < 0.01, (r.aggregates.tpot_ms, expected)
    assert r.simulated and r.time_scale == PRECISE_SCALE
    assert_clean(r)


def test_noise_off_speculative_tpot_within_1_percent_of_the_model(tmp_path: Path) -> None:
    r = trial(tmp_path, OPTIMISED, workload=SYNTH, scale=PRECISE_SCALE)
    a = r.aggregates
    assert r.ok and a is not None and a.accept_length is not None and a.tpot_ms is not None
    settings = Settings(moe_backend="humming", lm_head="fp8", speculative=True)
    # decode tokens per request exclude the prefill token: rounds = (n-1) / per-round tokens
    per_round = sum(x.completion_tokens - 1 for x in r.requests) / sum(
        x.verify_rounds or 0 for x in r.requests)
    expected = model_tpot(settings, 2048 + 256 / 2, per_round)
    assert abs(a.tpot_ms / expected - 1) < 0.01, (a.tpot_ms, expected)


def test_baseline_vs_optimised_reproduces_the_published_gsm8k_ratio(tmp_path: Path) -> None:
    wl = {"questions": 40}
    base = trial(tmp_path / "b", {}, workload=wl)
    opt = trial(tmp_path / "o", OPTIMISED, workload=wl)
    assert base.ok and opt.ok
    ratio = opt.aggregates.tpot_ms / base.aggregates.tpot_ms  # type: ignore[union-attr,operator]
    assert abs(ratio / (18.56 / 26.45) - 1) < 0.05, ratio
    assert {c.verdict for c in opt.effect} <= {"confirmed", "unobservable"}
    assert opt.gate is not None and opt.gate.passed


def test_the_published_trap_is_gated_as_collapse(tmp_path: Path) -> None:
    r = trial(tmp_path, OPTIMISED, variant="fork-unshared")
    assert r.ok and r.gate is not None and not r.gate.passed
    assert [x.rule for x in r.gate.fired()] == ["collapse"]
    assert r.aggregates is not None and round(r.aggregates.accept_length or 0, 2) == 1.00
    lm = next(c for c in r.effect if c.knob == "lm_head")
    assert lm.verdict == "confirmed" and "weak" in (lm.note or "")   # the log line lies


def test_the_shared_module_passes_the_gate(tmp_path: Path) -> None:
    r = trial(tmp_path, OPTIMISED, variant="fork")
    assert r.feasible and (r.aggregates.accept_length or 0) > 2.0  # type: ignore[union-attr]


def test_the_record_keeps_every_server_info_field_its_evidence_reads(tmp_path: Path) -> None:
    """A recorded trial can be re-checked from itself: the DSPARK draft path and block size
    (and the fixed flags' fields) were dropped once, and a re-check called them
    mismatched (seen on the real H200 run, docs/real-sglang-h200.md)."""
    from tuner.trial._evidence import effect_check

    r = trial(tmp_path, {"speculative": "DSPARK", "dspark_block_size": 4}, workload=SYNTH)
    assert r.ok, r.message
    read = {f.split(".")[0] for ev in r.plan.evidence
            for f in (*ev.server_info, *ev.server_info_if_present)}
    assert {"speculative_draft_model_path", "speculative_dspark_block_size"} <= read
    assert read <= set(r.server_info)
    again = effect_check(r.plan.evidence, r.server_info, "")     # the record, no log
    assert not [p for c in again for p in c.problems if not p.startswith("log line")]


def test_stock_with_fp8_lm_head_is_unsupported_before_launch(tmp_path: Path) -> None:
    r = trial(tmp_path, {"lm_head": "fp8"}, variant="stock", caps=True)
    assert r.status == "failed" and r.reason == "unsupported_knob"
    assert r.effect[0].knob == "lm_head" and r.effect[0].verdict == "unsupported"
    assert not Path(r.log_path or "").exists()                     # nothing was launched


def test_stock_with_fp8_lm_head_is_never_silently_confirmed(tmp_path: Path) -> None:
    r = trial(tmp_path, {"lm_head": "fp8"}, variant="stock", caps=False)
    assert r.reason == "effect_mismatch"
    lm = next(c for c in r.effect if c.knob == "lm_head")
    assert lm.verdict == "mismatched" and "Online FP8" in lm.problems[0]
    assert_clean(r)


@pytest.mark.parametrize(("fault", "reason", "text"), [
    ({"kind": "oom_at_start"}, "oom", "CUDA out of memory"),
    ({"kind": "crash_at_start"}, "launch_error", "simulated crash"),
    ({"kind": "hang"}, "startup_timeout", "not ready after"),
    ({"kind": "crash_after", "after": 3}, "crashed", "died during the benchmark"),
    ({"kind": "ignore_flag", "arg": "--moe-runner-backend"}, "effect_mismatch",
     "moe_runner_backend='flashinfer_mxfp4', expected 'humming'"),
    # a fixed flag silently dropped: the default shows, the trial stops before measuring
    ({"kind": "ignore_flag", "arg": "--attention-backend"}, "effect_mismatch",
     "(fixed) --attention-backend=flashinfer: server_info attention_backend="),
])
def test_faults_end_with_the_right_reason_and_nothing_left(tmp_path: Path, fault: dict,
                                                           reason: str, text: str) -> None:
    r = trial(tmp_path, {"moe_backend": "humming"}, faults=[fault], startup_timeout=5.0)
    assert r.status == "failed" and r.reason == reason, (r.reason, r.message)
    assert text in (r.message or "") + (r.log_tail or "")
    assert r.log_tail
    assert_clean(r)


def test_synthetic_ids_outside_the_vocabulary_crash_the_server_as_on_a_gpu(
        tmp_path: Path) -> None:
    # The bug class seen on a real H200: ids beyond the model's vocabulary kill the server.
    # A local model folder with a 4,096-token vocabulary (the simulator reads its
    # config.json as SGLang does): the bound the tool finds in the folder is safe...
    folder = tmp_path / "ling-3.0-flash-fp4"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"vocab_size": 4096}))
    model = SPACE.spec.model.model_copy(update={"path": str(folder)})
    space = dataclasses.replace(SPACE, spec=SPACE.spec.model_copy(update={"model": model}))
    small = {**SYNTH, "input_len": 64, "output_len": 16, "questions": 2}
    assert trial(tmp_path / "a", workload=small, space=space).ok
    # ...and one taken from the wrong model (the declared 157,184) dies the GPU's way.
    r = trial(tmp_path / "b", workload=small, space=space, vocab_size=157184)
    assert r.status == "failed" and r.reason == "crashed", (r.reason, r.message)
    assert "device-side assert" in (r.log_tail or "")
    assert_clean(r)


def test_conditional_fault_only_hits_matching_configs(tmp_path: Path) -> None:
    faults = [{"kind": "crash_at_start", "when": {"moe_runner_backend": "marlin"}}]
    assert trial(tmp_path / "a", {"moe_backend": "marlin"}, faults=faults).reason == (
        "launch_error")
    assert trial(tmp_path / "b", {"moe_backend": "humming"}, faults=faults).ok


def test_accuracy_gate_against_a_baseline(tmp_path: Path) -> None:
    # Accuracy does not depend on timing: run fast.
    base = trial(tmp_path / "b", {}, workload={"questions": 30}, scale=1000.0)
    lossy = trial(tmp_path / "w", {"moe_backend": "humming", "humming_activation": "fp8"},
                  workload={"questions": 30}, scale=1000.0,
                  baseline_per_question=base.aggregates.per_question)  # type: ignore[union-attr]
    rule = next(x for x in lossy.gate.rules if x.rule == "accuracy_drop")  # type: ignore[union-attr]
    assert "McNemar" in rule.detail and not rule.fired   # a 0.45 pp loss is within noise


def test_cli_trial_json_and_exit_codes(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    proc = subprocess.run(tuner_argv(
        "trial", str(SPARK), "--engine", "sim:fork-unshared", "--gsm8k", str(GSM8K_DIR),
        "--questions", "6", "--set", "moe_backend=humming", "--set", "lm_head=fp8",
        "--set", "speculative=NEXTN", "--out", str(out), "--workdir", str(tmp_path),
        "--json"), capture_output=True, text=True, timeout=180)
    assert proc.returncode == 1, proc.stderr                       # gated: collapse
    r = TrialResult.model_validate_json(proc.stdout)
    assert r.gate is not None and not r.gate.passed
    assert TrialResult.model_validate_json(out.read_text()) == r
    assert r.schema_version == 1 and len(r.requests) == 6


def test_an_injected_accuracy_drop_is_unseen_on_30_questions_and_caught_on_400(
        tmp_path: Path) -> None:
    """The simulator's ``accuracy_drop`` fault: 3 points off the FP8-head configurations, on
    the same questions every launch; the gate needs the larger sample to see it."""
    fp8 = {"moe_backend": "humming", "lm_head": "fp8"}
    drop = [{"kind": "accuracy_drop", "arg": 3, "when": {"SGLANG_ENABLE_FP8_LM_HEAD": "1"}}]
    verdicts = {}
    for n in (30, 400):
        wl = {"questions": n}
        base = trial(tmp_path / f"b{n}", fp8 | {"lm_head": "bf16"}, workload=wl,
                     scale=1000.0, faults=drop)          # bf16: the fault does not apply
        lossy = trial(tmp_path / f"w{n}", fp8, workload=wl, scale=1000.0, faults=drop,
                      baseline_per_question=base.aggregates.per_question)  # type: ignore[union-attr]
        assert lossy.ok and base.ok
        assert lossy.aggregates.accuracy < base.aggregates.accuracy  # type: ignore[union-attr,operator]
        verdicts[n] = [r.rule for r in lossy.gate.fired()]  # type: ignore[union-attr]
    assert verdicts == {30: [], 400: ["accuracy_drop"]}, verdicts
