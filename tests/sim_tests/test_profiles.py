"""Simulator profiles of the shape before issue 35 (fixed NEXTN and DSPARK fields, Humming's
fixed W4A8 and JIT fields; tests/fixtures/sim_profiles_old) load to the profiles the shipped
files give: a user's ``--sim-profiles`` folder written then still serves as it did."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import yaml

from tests.conftest import REPO
from tuner_sim import profiles
from tuner_sim.perf import PerfModel
from tuner_sim.perf import Settings
from tuner_sim.perf import Workload
from tuner_sim.profiles import DenseDraft
from tuner_sim.profiles import DraftCosts
from tuner_sim.profiles import JitBuild
from tuner_sim.profiles import Machine
from tuner_sim.profiles import Model
from tuner_sim.profiles import load_machine
from tuner_sim.profiles import load_model_for_path


OLD = REPO / "tests" / "fixtures" / "sim_profiles_old"
LING = "inclusionAI/Ling-3.0-flash-fp4"


@pytest.fixture
def old_profiles(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """``--sim-profiles`` pointing at profiles written before issue 35 (the simulator
    reads the folder through ``TUNER_SIM_PROFILE_DIR``)."""
    profiles._read.cache_clear()
    monkeypatch.setenv("TUNER_SIM_PROFILE_DIR", str(OLD))
    yield monkeypatch
    profiles._read.cache_clear()


def _shipped(monkeypatch: pytest.MonkeyPatch) -> None:
    """Back to the shipped profiles."""
    monkeypatch.delenv("TUNER_SIM_PROFILE_DIR")
    profiles._read.cache_clear()


def test_the_old_profile_files_are_the_old_shape() -> None:
    machine = yaml.safe_load((OLD / "machines" / "dgx-spark.yaml").read_text())
    model = yaml.safe_load((OLD / "models" / "ling-3.0-flash-fp4.yaml").read_text())
    assert {"draft_step_overhead_ms", "dspark_round_overhead_ms",
            "draft_prefill_tflops"} <= set(machine) and "drafts" not in machine
    assert {"nextn", "dspark"} <= set(model) and "drafts" not in model


@pytest.mark.parametrize("name", ["dgx-spark", "h200"])
def test_an_old_machine_profile_loads_to_the_shipped_one(
        name: str, old_profiles: pytest.MonkeyPatch) -> None:
    old = load_machine(name)
    _shipped(old_profiles)
    assert old == load_machine(name)
    assert set(old.drafts) == {"NEXTN", "DSPARK"}


def test_an_old_model_profile_loads_to_the_shipped_one(
        old_profiles: pytest.MonkeyPatch) -> None:
    old = load_model_for_path(LING)
    _shipped(old_profiles)
    new = load_model_for_path(LING)
    assert old == new and set(new.drafts) == {"NEXTN", "DSPARK"}
    assert isinstance(old.drafts["DSPARK"], DenseDraft) and old.drafts["DSPARK"].block_size == 8
    spark = load_machine("dgx-spark")
    s = Settings(lm_head="bf16", speculative=True, algorithm="DSPARK", gamma=8, steps=1,
                 draft_tokens=9)
    w = Workload("greedy", 8704, "random")
    assert PerfModel(spark, old, s).expected_tpot_ms(w) == PerfModel(
        spark, new, s).expected_tpot_ms(w)


def test_a_profile_of_both_shapes_keeps_its_drafts_entry() -> None:
    data = yaml.safe_load((OLD / "machines" / "h200.yaml").read_text())
    data["drafts"] = {"NEXTN": {"forward_ms": 9.0, "round_ms": 9.0}}
    m = Machine.model_validate(data)
    assert m.drafts["NEXTN"] == DraftCosts(forward_ms=9.0, round_ms=9.0)
    assert m.drafts["DSPARK"].forward_ms == 0.35               # the old fields' own
    assert Model.model_validate({**yaml.safe_load(
        (OLD / "models" / "ling-3.0-flash-fp4.yaml").read_text()), "nextn": None}
    ).drafts.keys() == {"DSPARK"}


def test_humming_constants_are_keyed_by_backend_and_old_ones_move_there() -> None:
    old = yaml.safe_load((OLD / "machines" / "dgx-spark.yaml").read_text())
    assert "humming_w4a8_penalty" in old["efficiency"] and "humming_kernels" in old["startup"]
    m = Machine.model_validate(old)
    assert m.efficiency.w4a8_penalty == {"humming": 0.03}
    assert m.startup.jit == {"humming": JitBuild(s_per_kernel=4.0, kernels=6)}
    old["efficiency"]["w4a8_penalty"] = {"humming": 0.5}       # the mapping's own wins
    assert Machine.model_validate(old).efficiency.w4a8_penalty == {"humming": 0.5}
