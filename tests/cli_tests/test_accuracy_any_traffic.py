"""Accuracy is gated whatever the traffic (issue 36), through real `tuner` processes on
the simulator: a code/chat mix is gated on a GSM8K sample answered beside it, so a
numerics change that costs 3 points is never exported; with ``--final-questions 0`` every
output says "accuracy not checked" beside the pick."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import optuna
import pandas as pd
import pytest
import yaml

from tests.conftest import GSM8K_DIR
from tests.conftest import SPARK
from tests.conftest import tuner_argv
from tuner.study import locate
from tuner.study.storages import dashboard_storage


pytestmark = pytest.mark.slow
#: a numerics change that loses 3 points on math and code: any LM head but the FP32 one
LOSSY_HEAD = [{"kind": "accuracy_drop", "arg": 3, "content": ["math", "code"],
               "when": {"enable_fp32_lm_head": False}}]


def _tuner(cwd: Path, *args: str) -> str:
    out = subprocess.run(tuner_argv(*args), capture_output=True, text=True, timeout=900,
                         cwd=cwd, env={**os.environ, "COLUMNS": "220"})
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def test_a_code_chat_mix_never_exports_a_head_that_loses_three_points(tmp_path: Path) -> None:
    db = tmp_path / "mix.db"
    swept = _tuner(tmp_path, "sweep", str(SPARK), "--engine", "sim", "--gsm8k",
                   str(GSM8K_DIR), "--mix", "code=0.8,chat=0.2", "--trials", "16",
                   "--questions", "10", "--seed", "0", "--study", "s", "--storage", str(db),
                   "--sim-faults", json.dumps(LOSSY_HEAD))
    assert "also answer 400 GSM8K questions after the mix" in swept       # said at the start
    report = json.loads(_tuner(tmp_path, "report", "s", "--storage", str(db), "--json"))
    board = report["leaderboard"]
    lossy = [r for r in board if r["config"]["lm_head"] != "fp32"]
    assert lossy and all(r["kind"] != "feasible" or not r["confirmed"] for r in lossy)
    refused = [r for r in board if r["verdict"] == "refused: the final accuracy sample"]
    assert refused and all(r["config"]["lm_head"] != "fp32" for r in refused)
    gate = report["accuracy_gate"]                    # the report names the gate and why
    assert gate["final_sample"]["refused"] >= 1
    assert any(r["refused"] and r["questions"] >= 400 for r in gate["final_launches"])
    assert report["pick"]["config"]["lm_head"] == "fp32"
    assert report["pick"]["accuracy_sample"] == "final sample"
    _tuner(tmp_path, "export", "s", "--storage", str(db), "--out", str(tmp_path / "prof"))
    prof = yaml.safe_load((tmp_path / "prof" / "profile.yaml").read_text())
    assert prof["config"]["lm_head"] == "fp32" and prof["figures"]["accuracy_checked"]
    for pick in ("most-accurate", "knee"):          # no --pick exports the lossy head
        out = subprocess.run(tuner_argv("export", "s", "--storage", str(db), "--pick", pick,
                                        "--out", str(tmp_path / pick)),
                             capture_output=True, text=True, timeout=300, cwd=tmp_path)
        if out.returncode == 0:
            got = yaml.safe_load((tmp_path / pick / "profile.yaml").read_text())
            assert got["config"]["lm_head"] == "fp32"


def test_without_a_final_sample_every_output_says_accuracy_not_checked(
        tmp_path: Path) -> None:
    db = tmp_path / "chat.db"
    swept = _tuner(tmp_path, "sweep", str(SPARK), "--engine", "sim", "--workload", "chat",
                   "--final-questions", "0", "--trials", "6", "--questions", "6",
                   "--seed", "1", "--study", "c", "--storage", str(db))
    said = "accuracy not checked"
    lines = swept.splitlines()
    assert said in lines[0]                                   # the header
    assert said in next(x for x in reversed(lines) if "elapsed" in x)  # the status line
    assert said in next(x for x in lines if x.startswith("the pick #"))  # the end's
    where = ["c", "--storage", str(db)]
    text = _tuner(tmp_path, "report", *where)
    assert "pick (accuracy not checked)" in text
    report = json.loads(_tuner(tmp_path, "report", *where, "--json"))
    assert report["pick"]["verdict"] == "pick (accuracy not checked)"
    _tuner(tmp_path, "report", *where, "--csv", str(tmp_path / "c.csv"), "--html",
           str(tmp_path / "c.html"))
    rows = pd.read_csv(tmp_path / "c.csv")
    assert rows[rows["pick"]]["verdict"].item() == "pick (accuracy not checked)"
    assert "pick (accuracy not checked)" in (tmp_path / "c.html").read_text()
    out = _tuner(tmp_path, "export", *where, "--out", str(tmp_path / "prof"))
    assert "pick (accuracy not checked)" in out
    prof = yaml.safe_load((tmp_path / "prof" / "profile.yaml").read_text())
    assert prof["figures"]["accuracy_checked"] is False
    assert "not checked" in prof["figures"]["accuracy_is"]
    view = optuna.load_study(study_name="c", storage=dashboard_storage(locate(str(db), "c"),
                                                                       "c"))
    assert view.best_trial.number == report["pick"]["trial"]
    assert view.best_trial.user_attrs["verdict"] == "pick (accuracy not checked)"


def test_a_code_sweep_without_gsm8k_data_says_how_to_gate_or_opt_out(tmp_path: Path) -> None:
    out = subprocess.run(tuner_argv("sweep", str(SPARK), "--engine", "sim", "--workload",
                                    "code", "--trials", "3", "--storage",
                                    str(tmp_path / "x.db")),
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "--gsm8k DIR" in out.stderr and "--final-questions 0" in out.stderr
    assert not (tmp_path / "x.db").exists()                  # refused before the study


def test_a_code_sweep_reports_pass_at_1_with_its_interval_for_the_finalists_and_baseline(
        tmp_path: Path) -> None:
    db = tmp_path / "code.db"
    _tuner(tmp_path, "sweep", str(SPARK), "--engine", "sim", "--gsm8k", str(GSM8K_DIR),
           "--workload", "code", "--trials", "12", "--questions", "12",
           "--final-questions", "60", "--seed", "2", "--study", "k", "--storage", str(db))
    report = json.loads(_tuner(tmp_path, "report", "k", "--storage", str(db), "--json"))
    rows = {r["trial"]: r for r in report["leaderboard"]}
    finalists = [r for r in rows.values() if r["confirmed"]]
    base = next(r for r in rows.values() if r["differs_from_baseline"] == "(baseline)")
    assert finalists and base["confirmed"]          # the baseline's launch on the sample
    for r in [*finalists, base]:
        kinds = r["accuracy_by_kind"]
        assert kinds is not None and "GSM8K sample" in kinds, r
        assert re.search(r"code \d+\.\d% \[\d+\.\d%, \d+\.\d%\] on 12", kinds), kinds
    text = " ".join(_tuner(tmp_path, "report", "k", "--storage", str(db)).split())
    shown = re.search(r"code [^]]*\] on 12", finalists[0]["accuracy_by_kind"])
    assert shown is not None and shown.group(0) in text
