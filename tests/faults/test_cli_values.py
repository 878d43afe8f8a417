"""Bad command-line values: one line, exit 2, no traceback, nothing created, never a value
accepted in silence (issue 24's CLI sweep: the cases that once crashed or were clamped)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import GSM8K_DIR
from tests.conftest import SPARK
from tests.conftest import tuner_argv


def _tuner(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(tuner_argv(*args), capture_output=True, text=True, timeout=300,
                          cwd=tmp)


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("cli-values")
    r = _tuner(tmp, "sweep", str(SPARK), "--engine", "sim", "--ray-address", "none",
               "--trials", "1", "--questions", "4", "--gsm8k", str(GSM8K_DIR), "--storage",
               str(tmp / "s.db"), "--study", "s", "--workdir", str(tmp / "runs"))
    assert r.returncode == 0, r.stderr
    return tmp


SWEEP = ["sweep", str(SPARK), "--engine", "sim", "--ray-address", "none", "--gsm8k",
         str(GSM8K_DIR)]


@pytest.mark.parametrize(("args", "says"), [
    ([*SWEEP, "--seed", "-1"], "--seed"),
    ([*SWEEP, "--questions", "100000"], "1,319 questions"),
    ([*SWEEP, "--sim-profiles", "/no/such/folder"], "--sim-profiles"),
    ([*SWEEP, "--final-questions", "5000"], "--final-questions"),
    (["plan", str(SPARK), "--port", "99999"], "--port"),
    (["export", "s", "--tpot-tolerance", "nan"], "--tpot-tolerance"),
    (["trial", str(SPARK), "--seed", "-1"], "--seed"),
])
def test_an_impossible_value_is_refused_in_one_line(tmp_path: Path, args: list[str],
                                                    says: str) -> None:
    r = _tuner(tmp_path, *args)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert says in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not (tmp_path / "trials").exists()         # nothing created


def test_a_storage_in_a_missing_folder_creates_no_folder(tmp_path: Path) -> None:
    missing = tmp_path / "no" / "such"
    r = _tuner(tmp_path, *SWEEP, "--trials", "1", "--storage", f"sqlite:///{missing}/s.db")
    assert r.returncode == 2 and "does not exist" in r.stderr, r.stderr
    assert not (tmp_path / "no").exists()


@pytest.mark.parametrize("case", ["html-unwritable", "csv-folder", "out-under-file",
                                  "pick-negative"])
def test_reads_and_writes_of_a_study_fail_in_one_line(study: Path, tmp_path: Path,
                                                      case: str) -> None:
    where = ["s", "--storage", str(study / "s.db"), "--artifacts", str(study / "s.artifacts")]
    (tmp_path / "file").write_text("x")
    args = {"html-unwritable": ["report", *where[:3], "--html", "/proc/no/r.html"],
            "csv-folder": ["report", *where[:3], "--csv", str(tmp_path)],
            "out-under-file": ["export", *where, "--out", str(tmp_path / "file" / "p")],
            "pick-negative": ["export", *where, "--pick", "trial:-1"]}[case]
    r = _tuner(tmp_path, *args)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert r.stderr.startswith("error: ") and "Traceback" not in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
