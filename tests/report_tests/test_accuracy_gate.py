"""The report states what the accuracy gate could see: each final-sample comparison with
the baseline and the smallest drop it refuses with 80% probability (model-backed runner
with a 3-point drop on FP8 LM heads, tests/sweep_tests/test_final_sample.py)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.conftest import tuner_argv
from tests.sweep_tests.model_runner import model_sweep
from tests.sweep_tests.test_final_sample import DropsOnFp8Head
from tuner.study import summaries


def _report(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(tuner_argv("report", "s", "--storage", str(db), *args),
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "COLUMNS": "220"})


def test_report_states_the_final_samples_power(tmp_path: Path) -> None:
    study = model_sweep(tmp_path, DropsOnFp8Head(seed=0), trials=30, seed=0,
                        final_questions=1000)
    lm_head = {s.number: s.config.get("lm_head") for s in summaries(study)}
    proc = _report(tmp_path / "s.db", "--json")
    assert proc.returncode == 0, proc.stderr
    gate = json.loads(proc.stdout)["accuracy_gate"]
    final, screening = gate["final_sample"], gate["screening"]
    assert final["questions"] == 1000 and final["refused"] >= 1
    assert final["configurations"] < final["launches"]       # the pick launched 3 times
    # 1000 paired questions see a 3-point drop; the screening's 60 cannot
    assert final["detectable_pp"] is not None and final["detectable_pp"] < 3.0
    assert screening["questions"] == 60 and screening["refused"] == 0
    assert screening["detectable_pp"] > 3.0
    refused = [r for r in gate["final_launches"] if r["refused"]]
    assert refused and {lm_head[r["trial"]] for r in refused} == {"fp8"}
    assert all(r["drop_pp"] > 1.0 and r["p_drop"] < 0.05 for r in refused)
    passed = [r for r in gate["final_launches"] if not r["refused"]]
    assert passed and all(lm_head[r["trial"]] != "fp8" for r in passed)
    assert any(line.startswith("the pick #") for line in gate["summary"])

    text = _report(tmp_path / "s.db", "--html", str(tmp_path / "r.html")).stdout
    assert "Accuracy gate" in text and "Final accuracy sample" in text
    page = (tmp_path / "r.html").read_text()
    assert "<h2>Accuracy gate</h2>" in page and "Final accuracy sample" in page
    assert "refused with 80% probability" in page
    assert f"a true drop of {final['detectable_pp']:.1f} pp is refused with 80%" in text


def test_report_says_when_there_is_no_final_sample(tmp_path: Path) -> None:
    model_sweep(tmp_path, DropsOnFp8Head(seed=1), trials=12, seed=1)
    gate = json.loads(_report(tmp_path / "s.db", "--json").stdout)["accuracy_gate"]
    assert gate["final_sample"]["launches"] == 0 and not gate["final_launches"]
    assert any("no final accuracy sample" in line for line in gate["summary"])
    assert gate["screening"]["launches"] >= 1



class DropsOffTheBaselineHead(DropsOnFp8Head):
    """Every LM head but the baseline's (FP32) loses 3 points, the fastest finalists too."""

    def lossy(self, config: dict) -> bool:
        return config.get("lm_head") != "fp32"


def test_report_says_when_the_pick_fell_back_to_the_baseline(tmp_path: Path) -> None:
    # 12 trials: the finals have 2 launches, the baseline's on the final sample and one
    # finalist's, which the gate refuses: nothing faster passed, the pick is the baseline
    study = model_sweep(tmp_path, DropsOffTheBaselineHead(seed=3), trials=12, seed=3,
                        final_questions=1000)
    assert next(s for s in summaries(study) if s.final_sample and s.gate)
    gate = json.loads(_report(tmp_path / "s.db", "--json").stdout)["accuracy_gate"]
    assert gate["final_sample"]["refused"] == 1
    assert any(line.startswith("the pick is the baseline: no faster configuration passed")
               for line in gate["summary"]), gate["summary"]
