"""Every secret form in a storage URL is redacted everywhere and never stored (issue 24, item
3): the ``user:password@`` form was, but ``?password=`` (and ``sslpassword``, ``passfile``)
showed in the sweep header and hints, in errors, in the dashboard header, in
``profile.yaml`` and in the stored ``tuner:sweep_options``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
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
from tuner.study._storage import driver_url
from tuner.study.storages import redact_url
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


#: An engine entry point that records, before it becomes the simulator (``exec``: the same
#: process), the environment it was started with and its parent's, the trial process (a
#: local runner's job, a Ray worker), read raw from /proc as anyone allowed to would.
ENV_RECORDER = '''
import os, sys
out = os.path.join(sys.argv.pop(1), str(os.getpid()))
os.makedirs(out)
for name, pid in (("server", os.getpid()), ("trial", os.getppid())):
    with open(f"/proc/{pid}/environ", "rb") as src, open(f"{out}/{name}", "wb") as dst:
        dst.write(src.read())
os.execv(sys.executable, [sys.executable, "-m", "tuner_sim.fork", *sys.argv[1:]])
'''


@pytest.mark.slow
@pytest.mark.parametrize("runner", ["local", "ray"])
def test_pgpassword_reaches_no_trial_process_and_no_server(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runner: str) -> None:
    """Issue 34 item 4, finding 2: with ``PGPASSWORD`` set (a storage URL without its
    password, as libpq allows), the password was in the environment of every trial
    process and every engine server. The driver still reads it: the study is on a
    PostgreSQL server that asks for it."""
    from tuner.engines import make_engine
    from tuner.space import load_space
    from tuner.study import locate
    from tuner.sweep import Driver
    from tuner.sweep import LocalRunner
    from tuner.sweep import RayRunner
    from tuner.sweep import SweepSettings
    from tuner.trial import TrialOptions

    recorder, seen = tmp_path / "record_env.py", tmp_path / "seen"
    recorder.write_text(ENV_RECORDER)
    seen.mkdir()
    space = load_space(SPARK)
    engine = make_engine("sim", command=[sys.executable, str(recorder), str(seen), "serve"],
                         sim_env={"TUNER_SIM_TIME_SCALE": "300"})
    opts = TrialOptions(workdir=tmp_path / "runs", workload=space.spec.workload.model_copy(
        update={"questions": 2}), gsm8k=str(GSM8K_DIR), startup_timeout_s=120)
    with postgres_server() as server:
        url = f"postgresql://tuner@127.0.0.1:{server.port}/postgres"      # no password
        monkeypatch.setenv("PGPASSWORD", PASSWORD)
        monkeypatch.setenv("TUNER_API_KEY", "k-" + PASSWORD)
        settings = SweepSettings(study_name=STUDY, location=locate(url, STUDY, str(
            tmp_path / "art")), trials=2, seed=1, deadline_s=300)
        Driver(space, engine, opts, settings, lambda: LocalRunner(slots=1) if runner ==
               "local" else RayRunner(address=None, gpu=False, slots=1)).run()
        assert os.environ["PGPASSWORD"] == PASSWORD           # the driver's, put back
        study = optuna.load_study(study_name=STUDY, storage=driver_url(url))
        assert [t.state.name for t in study.get_trials()] == ["COMPLETE", "COMPLETE"]
    launches = sorted(seen.iterdir())
    assert len(launches) == 2                                  # both launches recorded
    for launch in launches:
        for name in ("server", "trial"):
            env = (launch / name).read_bytes()
            assert b"TUNER_SIM_TIME_SCALE=300" in env or name == "trial", (launch, name)
            assert PASSWORD.encode() not in env, (launch, name)
            assert b"PGPASSWORD=" not in env and b"TUNER_API_KEY=" not in env, (launch, name)


@pytest.mark.parametrize(("name", "secret"), [
    ("PGPASSWORD", True), ("PGPASSFILE", True), ("PGSSLKEY", True), ("MYSQL_PWD", True),
    ("TUNER_API_KEY", True), ("PGHOST", False), ("PGSSLROOTCERT", False),
    ("HF_TOKEN", False),                  # the engine's own: it downloads gated models
    ("TOKENIZERS_PARALLELISM", False), ("TUNER_SIM_TIME_SCALE", False)])
def test_the_secrets_a_child_process_is_not_given(name: str, secret: bool) -> None:
    from tuner.processes import child_env
    from tuner.processes import is_secret_env

    assert is_secret_env(name) is secret
    assert (name in child_env({name: "x", "PATH": "/bin"})) is not secret
