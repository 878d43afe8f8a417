"""How `tuner sweep` starts: inputs checked before anything is written, a study's identity
kept, a spent budget said and nothing rewritten, the default final accuracy sample stated
(real CLI processes on the simulator)."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

from tests.conftest import GSM8K_DIR
from tests.conftest import SPARK
from tests.conftest import tuner_argv


def _sweep(tmp: Path, *extra: str, gsm8k: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(tuner_argv(
        "sweep", str(SPARK), "--engine", "sim", "--ray-address", "none", "--storage",
        str(tmp / "s.db"), "--study", "s", "--workdir", str(tmp / "runs"), "--gsm8k",
        gsm8k or str(GSM8K_DIR), *extra), capture_output=True, text=True, timeout=300,
        cwd=tmp)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_empty_budgets_and_a_bad_gsm8k_folder_exit_2_leaving_no_study(tmp_path: Path) -> None:
    for extra in (["--hours", "0"], ["--hours", "inf"], ["--hours", "-1"]):
        r = _sweep(tmp_path, *extra)
        assert r.returncode == 2 and "--hours" in r.stderr, r.stderr
    bad = tmp_path / "gsm8k"
    bad.mkdir()
    (bad / "test.jsonl").write_text('{"question": "q"}\n')
    (bad / "train.jsonl").write_text('{"question": "q", "answer": "#### 1"}\n')
    r = _sweep(tmp_path, "--trials", "1", gsm8k=str(bad))
    assert r.returncode == 2 and "test.jsonl:1: not a GSM8K record" in r.stderr, r.stderr
    r = _sweep(tmp_path, "--trials", "1", gsm8k=str(tmp_path / "missing"))
    assert r.returncode == 2 and "not found" in r.stderr, r.stderr
    assert not (tmp_path / "s.db").exists() and not (tmp_path / "runs").exists()


def test_a_study_keeps_its_measurement_setting_and_a_spent_budget_writes_nothing(
        tmp_path: Path) -> None:
    first = _sweep(tmp_path, "--trials", "1", "--questions", "6")
    assert first.returncode == 0, first.stderr
    # the default final sample, stated at the start (a scored workload)
    assert "final accuracy sample: the finalists and the baseline on 200 GSM8K" in first.stdout
    db = tmp_path / "s.db"
    before = _digest(db)
    other = _sweep(tmp_path, "--trials", "3", "--questions", "7")
    assert other.returncode == 2, other.stdout
    assert "workload questions: 6 -> 7" in other.stderr and "--study" in other.stderr
    assert _digest(db) == before                      # refused before any write
    again = _sweep(tmp_path, "--trials", "1", "--questions", "6", "--seed", "9")
    assert again.returncode == 0, again.stderr
    assert "nothing to run, nothing changed" in again.stdout
    assert _digest(db) == before                      # not even its options rewritten
    off = _sweep(tmp_path, "--trials", "1", "--questions", "6", "--study", "t",
                 "--final-questions", "0")
    assert off.returncode == 0, off.stderr
    assert "final accuracy sample" not in off.stdout
