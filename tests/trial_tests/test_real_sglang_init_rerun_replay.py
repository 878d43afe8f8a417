"""Replays of the rerun of ``tuner init``'s spaces on the H200 with the kit's SGLang 0.5.17,
after the fixes the first run found (docs/real-sglang-h200.md, "The rerun").

``tests/fixtures/real_sglang_h200/init/rerun/`` holds what came back: the two spaces that
``tuner init`` wrote there against the installed engine (decode graphs disabled by the
draft-graph rule, ``triton_kernel`` left out for the BF16 DeepSeek-V3, the tiny
Qwen3-Next's memory fraction bounded by the pool's bookkeeping), the TrialResults of a
3-launch Qwen3-Next sweep and of a NEXTN 5/4/8 DeepSeek-V3 trial, the sweep's report, the
queue's log and SGLang's memory lines from the server logs. Each test feeds them through
today's code.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.trial_tests.test_real_sglang_init_replay import DSA_0517
from tests.trial_tests.test_real_sglang_init_replay import _checkpoint
from tests.trial_tests.test_real_sglang_init_replay import _h200_caps
from tests.trial_tests.test_real_sglang_init_replay import _stand_in_source
from tests.trial_tests.test_real_sglang_init_replay import as_launched
from tuner.engines import make_engine
from tuner.models import machine
from tuner.models import read_model
from tuner.models import write_space
from tuner.models._memory import BOOKKEEPING_BYTES_PER_TOKEN
from tuner.models._memory import OUTSIDE_GIB
from tuner.models._memory import kv_bytes_per_token
from tuner.space import SearchSpace
from tuner.space import load_space
from tuner.space import parse_space
from tuner.trial import TrialResult
from tuner.trial._evidence import effect_check


HERE = Path(__file__).resolve().parents[1] / "fixtures" / "real_sglang_h200" / "init" / "rerun"
TRIALS = sorted(HERE.glob("trial-*.json"))
GIB = 1024**3


def _load(path: Path) -> TrialResult:
    return TrialResult.model_validate_json(path.read_text())


@pytest.mark.parametrize("model", ["dsv3", "qwen3next"])
def test_the_spaces_that_ran_are_what_todays_init_writes_stand_in(
        tmp_path: Path, model: str) -> None:
    """The spaces tuner init wrote on the H200 (the real installation) have the knobs,
    bounds, baseline and fixed flags today's init writes given a stand-in for it."""
    ran = ran_as_init_writes_today(tmp_path, HERE / f"{model}-h200.yaml", model, "h200")
    assert ran.spec.fixed_flags["--cuda-graph-backend-decode"] == "disabled"
    if model == "qwen3next":
        assert ran.spec.knobs["mem_fraction"].high == 0.87 == ran.spec.baseline["mem_fraction"]
    else:
        assert "moe_backend" not in ran.spec.knobs


def ran_as_init_writes_today(tmp_path: Path, space: Path, model: str, machine_id: str
                             ) -> SearchSpace:
    """The space tuner init wrote on the GPU machine, checked against what today's init
    writes for ``model`` on ``machine_id`` with a stand-in for that installation: the same
    knobs (as they launch), fixed flags and baseline."""
    ran = load_space(space)
    caps = _h200_caps(_stand_in_source(tmp_path, DSA_0517))
    today = parse_space(write_space(read_model(_checkpoint(tmp_path, model)),
                                    machine(machine_id), caps, drafts=[],
                                    engine_version="0.5.17"))
    assert as_launched(ran) == as_launched(today)
    assert dict(ran.spec.fixed_flags) == dict(today.spec.fixed_flags)
    assert ran.spec.baseline == today.spec.baseline
    return ran


def planned_today_and_confirmed(path: Path) -> None:
    """A recorded launch (its space beside it) is the plan today's adapter makes, and the
    real /server_info it recorded confirms every knob of it."""
    r = _load(path)
    assert r.status == "ok" and not r.simulated and r.plan.engine_version == "0.5.17"
    space = load_space(path.parent / f"{r.space}.yaml")
    engine = make_engine("sglang")
    config = engine.resolve(space, r.config)
    plan = engine.plan(space, config, host=r.plan.host, port=r.plan.port)
    assert plan.argv == r.plan.argv and plan.env == r.plan.env
    checks = effect_check(r.plan.evidence, r.server_info, "")
    assert [(c.knob, c.verdict) for c in checks] == [(c.knob, c.verdict) for c in r.effect]
    assert {c.verdict for c in checks} == {"confirmed"}
    assert {c.knob for c in checks} >= set(r.config)          # every knob of the launch


@pytest.mark.parametrize("path", TRIALS, ids=lambda p: p.stem)
def test_each_launch_planned_today_and_confirmed_by_the_real_server_info(path: Path) -> None:
    planned_today_and_confirmed(path)


def test_what_the_rerun_proved() -> None:
    """Values SGLang's own automatic choice would not produce: the NEXTN tree at 5/4/8
    (its default is 3/1/4), triton_kernel on the hybrid Qwen3-Next, its baseline at the
    bound that init now writes (the first run died at 0.91)."""
    proven: set[tuple[str, str, str]] = set()
    for path in TRIALS:
        r = _load(path)
        proven |= {(r.space, c.knob, str(r.config[c.knob])) for c in r.effect
                   if c.knob in r.config}
    assert {("dsv3-h200", "speculative", "NEXTN"), ("dsv3-h200", "spec_steps", "5"),
            ("dsv3-h200", "spec_topk", "4"), ("dsv3-h200", "spec_draft_tokens", "8"),
            ("qwen3next-h200", "moe_backend", "triton_kernel"),
            ("qwen3next-h200", "moe_backend", "auto"), ("qwen3next-h200", "lm_head", "fp32"),
            ("qwen3next-h200", "speculative", "off"),
            ("qwen3next-h200", "mem_fraction", "0.87")} <= proven
    nextn = _load(HERE / "trial-dsv3-nextn-5-4-8.json")
    info = nextn.server_info
    assert (info["speculative_num_steps"], info["speculative_eagle_topk"],
            info["speculative_num_draft_tokens"]) == (5, 4, 8)
    assert nextn.aggregates.accept_length is not None and nextn.aggregates.accept_length >= 1.0


def _memory_lines() -> list[dict[str, float]]:
    """Per launch, from SGLang's log lines: pool tokens, the target's pool GiB (and the
    NEXTN draft's), GiB free after the pools and GiB free once the server was ready."""
    out: list[dict[str, float]] = []
    cur: dict[str, float] = {}
    for line in (HERE / "server-memory-lines.log").read_text().splitlines():
        if m := re.search(r"#tokens: (\d+), K size: ([\d.]+) GB, V size: ([\d.]+) GB", line):
            cur = {"tokens": float(m[1]), "pool": float(m[2]) + float(m[3])}
        elif m := re.search(r"#tokens: (\d+), KV size: ([\d.]+) GB", line):
            key = "draft_pool" if "pool" in cur else "pool"     # NEXTN: the draft's own
            cur["tokens"], cur[key] = float(m[1]), float(m[2])
        elif m := re.search(r"Memory pool end\. avail mem=([\d.]+) GB", line):
            cur["after_pool"] = float(m[1])
        elif m := re.search(r"available_gpu_mem=([\d.]+) GB", line):
            cur["ready"] = float(m[1])
            out.append(cur)
            cur = {}
    return out


def test_sglangs_memory_lines_agree_with_the_plans_kv_and_bookkeeping_bound() -> None:
    """The KV bytes a token the memory plan computes are the pool's (SGLang's GB are GiB),
    and the memory SGLang took after its pool (the index arrays and the rest) stays under
    what the bound reserves for it: ``OUTSIDE_GIB`` plus the bytes a pool token."""
    launches = _memory_lines()
    assert len(launches) == 4
    tiny = Path(__file__).resolve().parents[1] / "fixtures" / "real_sglang_h200" / "init"
    kv = {"qwen3next": kv_bytes_per_token(read_model(tiny / "qwen3next-config.json")),
          "dsv3": kv_bytes_per_token(read_model(tiny / "dsv3-config.json"))}
    assert kv == {"qwen3next": 512.0, "dsv3": 2304.0}
    for i, launch in enumerate(launches):
        model = "dsv3" if i == 3 else "qwen3next"
        per_token = launch["pool"] * GIB / launch["tokens"]
        assert abs(per_token - kv[model]) / kv[model] < 0.01, model
        if model == "dsv3":     # the draft's pool: its one MTP layer's latent and rope key
            assert launch["draft_pool"] * GIB / launch["tokens"] == pytest.approx(
                kv[model] / 2, rel=0.01)
        taken = launch["after_pool"] - launch["ready"]
        assert 0 < taken <= OUTSIDE_GIB + launch["tokens"] * BOOKKEEPING_BYTES_PER_TOKEN / GIB
    # at 0.91, where the first run died, the reserve did not fit what the fraction left
    qwen = launches[0]
    tokens_091 = qwen["tokens"] * 0.91 / 0.87
    left_091 = (1 - 0.91) * machine("h200").memory_gib
    assert OUTSIDE_GIB + tokens_091 * BOOKKEEPING_BYTES_PER_TOKEN / GIB > left_091
