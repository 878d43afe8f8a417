"""The simulator's speculative algorithms (``tuner_sim/speculative.py``): one registry, the
profiles keyed by algorithm, and profiles of the older shape (fixed NEXTN and DSPARK fields)
still loading as they did."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.conftest import GSM8K_DIR
from tests.conftest import REPO
from tuner.trial._server import free_port
from tuner_sim import profiles
from tuner_sim.perf import PerfModel
from tuner_sim.perf import Settings
from tuner_sim.perf import Workload
from tuner_sim.profiles import DenseDraft
from tuner_sim.profiles import DraftCosts
from tuner_sim.profiles import Machine
from tuner_sim.profiles import Model
from tuner_sim.profiles import load_machine
from tuner_sim.profiles import load_model_for_path
from tuner_sim.speculative import ALGORITHMS


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


def test_a_new_algorithm_is_costed_from_its_entry_and_profile_data_alone() -> None:
    """EAGLE3 has an entry (a draft tree of a dense external draft) but no shipped data.
    Given a draft, an acceptance table and the machine's fixed costs, keyed EAGLE3, it is
    served: each of its draft steps reads the dense draft once, the verify and the round's
    fixed cost as NEXTN's, and its acceptance reads its own table as a tree."""
    spark, ling = load_machine("dgx-spark"), load_model_for_path(LING)
    dspark = ling.drafts["DSPARK"]
    assert isinstance(dspark, DenseDraft) and ALGORITHMS["EAGLE3"].draft_kind is DenseDraft
    eagle3 = dspark.model_copy(update={"aliases": ["eagle3"], "block_size": None})
    model = ling.model_copy(update={
        "drafts": {**ling.drafts, "EAGLE3": eagle3},
        "acceptance": ling.acceptance.model_copy(update={"algorithms": {
            **ling.acceptance.algorithms, "EAGLE3": ling.acceptance.algorithms["NEXTN"]}})})
    machine = spark.model_copy(update={"drafts": {**spark.drafts, "EAGLE3": DraftCosts(
        forward_ms=0.5, round_ms=2.0)}})
    tree = dict(lm_head="bf16", speculative=True, steps=3, topk=1, draft_tokens=4)
    pm = PerfModel(machine, model, Settings(algorithm="EAGLE3", **tree))  # type: ignore[arg-type]
    nextn = PerfModel(machine, model, Settings(algorithm="EAGLE", **tree))  # type: ignore[arg-type]
    bw, eff = machine.bandwidth_gbs * 1e9, machine.efficiency
    one = (0.5 + eagle3.dense_read_gb * 1e9 / (bw * eff.dense_eff("bf16")) * 1e3
           + pm.lm_head_ms("bf16") + pm.kv_ms(600.0, eagle3.kv_bytes_per_token))
    assert pm.round_ms(600.0, 0.0) == pytest.approx(
        3 * one + pm.forward_ms(4, 600.0, 0.0) + 2.0)
    assert pm.round_ms(600.0, 0.0) != nextn.round_ms(600.0, 0.0)
    for content in ("math", "code"):
        assert pm.expected_accept_length("sampled", content) == pytest.approx(
            nextn.expected_accept_length("sampled", content))


def _refusal(*flags: str) -> str:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("TUNER_SIM_")},
           "TUNER_SIM_MACHINE": "dgx-spark", "TUNER_SIM_TIME_SCALE": "200",
           "TUNER_SIM_GSM8K": str(GSM8K_DIR)}
    proc = subprocess.run([sys.executable, "-m", "tuner_sim.fork", "serve", "--model-path",
                           LING, "--port", str(free_port()), *flags], capture_output=True,
                          text=True, env=env, cwd=REPO, timeout=60)
    assert proc.returncode == 1, proc.stdout[-2000:]
    return proc.stdout + proc.stderr


def test_an_algorithm_without_profile_data_is_refused_saying_which(tmp_path: Path) -> None:
    draft = tmp_path / "my-eagle3"
    draft.mkdir()
    (draft / "config.json").write_text(
        '{"architectures": ["LlamaForCausalLMEagle3"], "num_hidden_layers": 1, '
        '"hidden_size": 2560, "intermediate_size": 9728, "num_attention_heads": 32, '
        '"num_key_value_heads": 8, "head_dim": 128, "torch_dtype": "bfloat16"}')
    local = _refusal("--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path",
                     str(draft))
    assert "has no EAGLE3 acceptance (acceptance.algorithms.EAGLE3)" in local
    hub = _refusal("--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path",
                   "someone/eagle3-draft")
    assert "no EAGLE3 draft profile matches it" in hub
    ngram = _refusal("--speculative-algorithm", "NGRAM")
    assert "NGRAM is not modelled (NEXTN/EAGLE, EAGLE3, DSPARK are)" in ngram
