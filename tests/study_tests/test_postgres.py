"""A study in a real PostgreSQL server (started by the test): sweep, report and export work,
and the password appears in no output, file or stored attribute."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import optuna
import pytest

from tests.conftest import GSM8K_DIR
from tests.conftest import SPARK
from tests.conftest import tuner_argv
from tests.postgres_server import PASSWORD
from tests.postgres_server import postgres_server
from tuner.study._storage import driver_url


pytestmark = pytest.mark.slow
STUDY = "ling-3.0-flash-dgx-spark"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(tuner_argv(*args), capture_output=True, text=True, timeout=600)
    assert PASSWORD not in proc.stdout + proc.stderr
    return proc


def test_sweep_report_export_on_postgresql_never_show_the_password(tmp_path: Path) -> None:
    art = tmp_path / "art"
    with postgres_server() as server:
        url = server.url
        sweep = _run("sweep", str(SPARK), "--engine", "sim", "--gsm8k", str(GSM8K_DIR),
                     "--storage", url, "--artifacts", str(art), "--trials", "4",
                     "--questions", "6", "--time-scale", "300", "--ray-address", "none",
                     "--workdir", str(tmp_path / "runs"), "--seed", "1")
        assert sweep.returncode == 0, sweep.stdout + sweep.stderr
        assert "tuner:***@127.0.0.1" in sweep.stdout
        report = _run("report", STUDY, "--storage", url, "--csv", str(tmp_path / "r.csv"),
                      "--json")
        assert report.returncode == 0, report.stderr
        export = _run("export", STUDY, "--storage", url, "--artifacts", str(art),
                      "--out", str(tmp_path / "profile"))
        assert export.returncode == 0, export.stderr
        wrong = _run("report", STUDY, "--storage", url.replace(PASSWORD, "not-it"))
        assert wrong.returncode != 0 and "Traceback" not in wrong.stderr
        assert "cannot open it" in wrong.stderr
        study = optuna.load_study(study_name=STUDY, storage=driver_url(url))
        trials, attrs = study.get_trials(), study.user_attrs    # read before the server stops
    stored = json.dumps([attrs, [t.user_attrs for t in trials]], default=str)
    assert len([t for t in trials if t.state.is_finished()]) == 4
    assert "***" in attrs["tuner:sweep_options"]["storage"]
    assert PASSWORD not in stored
    assert (tmp_path / "profile" / "launch.sh").is_file()
    for f in tmp_path.rglob("*"):                  # logs, artifacts, profile, report files
        if f.is_file():
            assert PASSWORD.encode() not in f.read_bytes(), f
