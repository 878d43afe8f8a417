"""The simulator's speculative algorithms (``tuner_sim/speculative.py``): one registry, and
profile data keyed by algorithm (docs/simulator.md, "Adding a speculative algorithm");
profiles of the older shape load in ``test_profiles.py``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import GSM8K_DIR
from tests.conftest import REPO
from tuner.trial._server import free_port
from tuner_sim.perf import PerfModel
from tuner_sim.perf import Settings
from tuner_sim.profiles import DenseDraft
from tuner_sim.profiles import DraftCosts
from tuner_sim.profiles import load_machine
from tuner_sim.profiles import load_model_for_path
from tuner_sim.speculative import ALGORITHMS


LING = "inclusionAI/Ling-3.0-flash-fp4"


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
