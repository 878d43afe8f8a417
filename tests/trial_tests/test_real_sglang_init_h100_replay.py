"""Replays of ``tuner init --machine h100`` on a lent H100 with the kit's SGLang 0.5.17
(docs/real-sglang-h200.md, "On an H100").

``tests/fixtures/real_sglang_h200/init/h100/`` holds what came back: the two spaces init
wrote there against the installed engine for the H100 profile, the TrialResults of a
``triton_kernel`` + FP32-head Qwen3-MoE trial, a NEXTN 4/2/6 Qwen3-Next trial and a
3-launch Qwen3-MoE sweep of the space as written, the sweep's report, the queue's log and
SGLang's memory lines. With the H200 runs beside them (``init/``, ``init/rerun/``), every
value of every knob of the tiny models' generated spaces has been proved on a real engine;
the last test says so.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.trial_tests.test_real_sglang_init_rerun_replay import planned_today_and_confirmed
from tests.trial_tests.test_real_sglang_init_rerun_replay import ran_as_init_writes_today
from tuner.models import machine
from tuner.models import read_model
from tuner.models._memory import BOOKKEEPING_BYTES_PER_TOKEN
from tuner.models._memory import OUTSIDE_GIB
from tuner.models._memory import kv_bytes_per_token
from tuner.space import load_space
from tuner.trial import TrialResult


INIT = Path(__file__).resolve().parents[1] / "fixtures" / "real_sglang_h200" / "init"
HERE = INIT / "h100"
TRIALS = sorted(HERE.glob("trial-*.json"))
GIB = 1024**3


def _load(path: Path) -> TrialResult:
    return TrialResult.model_validate_json(path.read_text())


def test_the_run_was_on_an_h100_whose_memory_the_profile_states() -> None:
    log = (HERE / "device.log").read_text()
    assert "NVIDIA H100 80GB HBM3 79.18 GiB sglang 0.5.17" in log
    assert "== machine profile: h100" in log
    assert machine("h100").memory_gib == pytest.approx(79.18, abs=0.05)
    assert {_load(p).machine for p in TRIALS} == {"h100"}


@pytest.mark.parametrize("model", ["qwen3moe", "qwen3next"])
def test_the_spaces_that_ran_are_what_todays_init_writes_for_the_h100_stand_in(
        tmp_path: Path, model: str) -> None:
    ran = ran_as_init_writes_today(tmp_path, HERE / f"{model}-h100.yaml", model, "h100")
    # SGLang 0.5.23's automatic fraction for an 80 GB card, under the H100's cap
    assert ran.spec.baseline["mem_fraction"] == 0.84
    high = ran.spec.knobs["mem_fraction"].high
    assert high == (0.86 if model == "qwen3next" else machine("h100").fraction_cap)


@pytest.mark.parametrize("path", TRIALS, ids=lambda p: p.stem)
def test_each_launch_planned_today_and_confirmed_by_the_real_server_info(path: Path) -> None:
    planned_today_and_confirmed(path)


def test_the_sweep_of_the_space_as_written_ran_and_reported() -> None:
    report = json.loads((HERE / "report-qwen3moe.json").read_text())
    sweep = [_load(p) for p in TRIALS if "-sweep-" in p.stem]
    assert len(sweep) == 3 and {r.status for r in sweep} == {"ok"}
    assert "== sweep qwen3moe-h100 exit 0" in (HERE / "device.log").read_text()
    assert report["study"] == "qwen3moe-h100" and report["simulated"] is False
    assert report["pick"]["config"] in [r.config for r in sweep]


def _proved(folder: Path) -> set[tuple[str, str, str]]:
    """(model, knob, value) confirmed from the real /server_info in a folder's launches."""
    out = set()
    for path in folder.glob("trial-*.json"):
        r = _load(path)
        model = r.space.rsplit("-", 1)[0]
        out |= {(model, c.knob, str(r.config[c.knob])) for c in r.effect
                if c.knob in r.config and c.verdict == "confirmed"}
    return out


def test_every_value_of_every_knob_of_the_tiny_models_spaces_was_proved() -> None:
    """Across the H200 runs and this one: each value of a knob whose values set different
    flags and read different evidence (``evidence_by_value``), and a value of a knob that
    passes its value through one flag (the value read back is the one sent)."""
    proved = _proved(INIT) | _proved(INIT / "rerun") | _proved(HERE)
    spaces = {"qwen3moe": HERE / "qwen3moe-h100.yaml", "qwen3next": HERE / "qwen3next-h100.yaml",
              "dsv3": INIT / "rerun" / "dsv3-h200.yaml"}
    missing = []
    for model, path in spaces.items():
        knobs = load_space(path).spec.knobs
        for name, knob in knobs.items():
            if knob.evidence_by_value is not None:
                missing += [(model, name, str(v)) for v in knob.choices
                            if (model, name, str(v)) not in proved]
            elif not any(m == model and k == name for m, k, _ in proved):
                missing.append((model, name, "any"))
    assert missing == []
    # the NEXTN trees off SGLang's automatic 3/1/4 on both MTP models
    assert {("qwen3next", "spec_steps", "4"), ("qwen3next", "spec_topk", "2"),
            ("qwen3next", "spec_draft_tokens", "6"), ("dsv3", "spec_steps", "5")} <= proved


def test_sglangs_memory_lines_on_the_h100_stay_under_the_bookkeeping_bound() -> None:
    """The pool's bytes a token are the plan's, and what SGLang took after its pool stays
    under what the bound reserves (``OUTSIDE_GIB`` plus the bytes a pool token)."""
    text = (HERE / "server-memory-lines.log").read_text()
    launches = [chunk for chunk in text.split("## ")[1:]]
    assert len(launches) == 5
    kv = {"qwen3moe": kv_bytes_per_token(read_model(INIT / "qwen3moe-config.json")),
          "qwen3next": kv_bytes_per_token(read_model(INIT / "qwen3next-config.json"))}
    for chunk in launches:
        model = "qwen3next" if "42bc92bd056f" in chunk.splitlines()[0] else "qwen3moe"
        pools = re.findall(r"#tokens: (\d+), K size: ([\d.]+) GB, V size: ([\d.]+) GB", chunk)
        tokens = float(pools[0][0])
        assert float(pools[0][1]) * 2 * GIB / tokens == pytest.approx(kv[model], rel=0.01)
        after_pool = float(re.findall(r"Memory pool end\. avail mem=([\d.]+) GB", chunk)[-1])
        ready = float(re.search(r"available_gpu_mem=([\d.]+) GB", chunk)[1])
        taken = after_pool - ready
        assert 0 < taken <= OUTSIDE_GIB + len(pools) * tokens * BOOKKEEPING_BYTES_PER_TOKEN / GIB
