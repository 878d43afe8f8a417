"""Every secret form in a storage URL is redacted everywhere and never stored (issue 24, item
3): the ``user:password@`` form was, but ``?password=`` (and ``sslpassword``, ``passfile``)
showed in the sweep header and hints, in errors, in the dashboard header, in
``profile.yaml`` and in the stored ``tuner:sweep_options``."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import httpx
import optuna
import pytest

from tests.conftest import GSM8K_DIR
from tests.conftest import SPARK
from tests.conftest import tuner_argv
from tests.postgres_server import PASSWORD
from tests.postgres_server import postgres_server
from tuner.study import redact_url
from tuner.study._storage import driver_url
from tuner.trial._server import free_port


STUDY = "ling-3.0-flash-dgx-spark"


@pytest.mark.parametrize(("url", "shown"), [
    ("postgresql://tuner:pw-1@h:5/db", "postgresql://tuner:***@h:5/db"),
    ("postgresql://tuner:p@w-1@h/db", "postgresql://tuner:***@h/db"),     # a raw @ in it
    ("postgresql://tuner@h/db?password=pw-1", "postgresql://tuner@h/db?password=***"),
    ("postgresql://h/db?sslmode=require&sslpassword=pw-1;passfile=/home/pw-1",
     "postgresql://h/db?sslmode=require&sslpassword=***;passfile=***"),
    ("postgresql://h/db?PassWord=pw-1&application_name=tuner",
     "postgresql://h/db?PassWord=***&application_name=tuner"),
    ("postgresql://h/db?pass%77ord=pw-1", "postgresql://h/db?pass%77ord=***"),   # %-escaped
    ("mysql://u@h/db?ssl_key=/pw-1.pem&auth_token=pw-1&charset=utf8",
     "mysql://u@h/db?ssl_key=***&auth_token=***&charset=utf8"),
    ("connection to host=h password='pw 1' failed", "connection to host=h password=*** failed"),
    ("sqlite:////tmp/s.db", "sqlite:////tmp/s.db"),
])
def test_every_secret_form_is_redacted(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(tuner_argv(*args), capture_output=True, text=True, timeout=600)
    assert PASSWORD not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    return proc


def _dashboard_header(url: str) -> str:
    port = free_port()
    proc = subprocess.Popen(tuner_argv("dashboard", STUDY, "--storage", url, "--port",
                                       str(port)), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        for _ in range(150):
            try:
                if httpx.get(f"http://127.0.0.1:{port}/api/meta", timeout=2).is_success:
                    break
            except httpx.HTTPError:
                assert proc.poll() is None
                time.sleep(0.2)
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    return proc.stdout.read() if proc.stdout else ""


@pytest.mark.slow
def test_a_password_in_the_query_shows_nowhere_and_is_never_stored(tmp_path: Path) -> None:
    art = tmp_path / "art"
    with postgres_server() as server:
        url = (f"postgresql://tuner@127.0.0.1:{server.port}/postgres?password={PASSWORD}"
               f"&sslpassword={PASSWORD}&application_name=tuner")
        sweep = _run("sweep", str(SPARK), "--engine", "sim", "--gsm8k", str(GSM8K_DIR),
                     "--storage", url, "--artifacts", str(art), "--trials", "1",
                     "--questions", "2", "--time-scale", "300", "--ray-address", "none",
                     "--workdir", str(tmp_path / "runs"), "--seed", "1")
        assert sweep.returncode == 0, sweep.stdout + sweep.stderr
        assert "password=***&sslpassword=***&application_name=tuner" in sweep.stdout
        export = _run("export", STUDY, "--storage", url, "--artifacts", str(art),
                      "--out", str(tmp_path / "profile"))
        assert export.returncode == 0, export.stdout + export.stderr
        assert "password=***" in (tmp_path / "profile" / "profile.yaml").read_text()
        header = _dashboard_header(url)
        assert "password=***" in header and PASSWORD not in header
        wrong = _run("report", STUDY, "--storage", url.replace(PASSWORD, "not-it-either"))
        assert wrong.returncode == 2 and "cannot open it" in wrong.stderr
        assert "not-it-either" not in wrong.stderr and "Traceback" not in wrong.stderr
        study = optuna.load_study(study_name=STUDY, storage=driver_url(url))
        trials, attrs = study.get_trials(), study.user_attrs
    stored = json.dumps([attrs, [t.user_attrs for t in trials],
                         [t.system_attrs for t in trials]], default=str)
    assert "password=***" in attrs["tuner:sweep_options"]["storage"]
    assert PASSWORD not in stored
    for f in tmp_path.rglob("*"):                  # logs, artifacts, the profile
        if f.is_file():
            assert PASSWORD.encode() not in f.read_bytes(), f
