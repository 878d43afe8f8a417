"""``tuner dashboard`` is read-only unless ``--allow-writes`` (issue 24, item 1): over real
HTTP, every write optuna-dashboard's API offers (DELETE, POST, PUT, PATCH) is refused and the
study is left whole; with the option, a DELETE removes the study, as the start-up line warns.
The access log stays quiet, and an address it cannot listen on is one line, exit 2."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import optuna
import pytest
from optuna.artifacts import FileSystemArtifactStore
from optuna.artifacts import upload_artifact

from tests.conftest import served_dashboard
from tests.conftest import tuner_argv


STUDY = "tiny"


@pytest.fixture
def tiny_study(tmp_path: Path) -> Path:
    """A study of two finished trials, one with an artifact (a server log)."""
    db = tmp_path / "s.db"
    study = optuna.create_study(study_name=STUDY, storage=f"sqlite:///{db}",
                                directions=["minimize", "maximize"])
    (tmp_path / "s.artifacts").mkdir()
    store = FileSystemArtifactStore(str(tmp_path / "s.artifacts"))
    (tmp_path / "server.log").write_text("server log\n")
    for tpot in (10.0, 12.0):
        trial = study.ask({"x": optuna.distributions.FloatDistribution(0, 1)})
        upload_artifact(artifact_store=store, file_path=str(tmp_path / "server.log"),
                        study_or_trial=trial)
        study.tell(trial, [tpot, 0.9])
    return db


def _ids(base: str) -> tuple[int, list[int], list[str]]:
    sid = httpx.get(base + "/api/studies", timeout=10).json()["study_summaries"][0]["study_id"]
    detail = httpx.get(f"{base}/api/studies/{sid}", params={"after": 0}, timeout=10).json()
    trials = detail["trials"]
    return sid, [t["trial_id"] for t in trials], [a["artifact_id"] for t in trials
                                                  for a in t["artifacts"]]


def test_every_write_is_refused_by_default_and_the_study_stays_whole(
        tiny_study: Path) -> None:
    with served_dashboard(STUDY, tiny_study) as (base, proc):
        sid, trial_ids, artifact_ids = _ids(base)
        assert len(trial_ids) == 2 and len(artifact_ids) == 2
        tid, aid = trial_ids[0], artifact_ids[0]
        writes = [
            ("DELETE", f"/api/studies/{sid}", None),
            ("delete", f"/api/studies/{sid}", None),           # methods are case-blind
            ("POST", "/api/studies", {"study_name": "new", "directions": ["minimize"]}),
            ("POST", f"/api/studies/{sid}/rename", {"study_name": "renamed"}),
            ("PUT", f"/api/studies/{sid}/note", {"version": 0, "body": "x"}),
            ("PUT", f"/api/studies/{sid}/{tid}/note", {"version": 0, "body": "x"}),
            ("POST", f"/api/trials/{tid}/user-attrs", {"user_attrs": {"a": 1}}),
            ("POST", f"/api/trials/{tid}/tell", {"state": "Fail"}),
            ("DELETE", f"/api/artifacts/{sid}/{tid}/{aid}", None),
            ("PATCH", f"/api/studies/{sid}", {"study_name": "x"}),
        ]
        for method, path, body in writes:
            resp = httpx.request(method, base + path, json=body, timeout=10)
            assert resp.status_code == 405, (method, path, resp.status_code, resp.text)
            assert "--allow-writes" in resp.json()["reason"]
        assert _ids(base) == (sid, trial_ids, artifact_ids)     # nothing changed
        assert httpx.get(f"{base}/dashboard", timeout=10).status_code == 200   # reads work
        head = httpx.head(f"{base}/api/studies", timeout=10)
        assert head.status_code == 200
    out = proc.stdout.read() if proc.stdout else ""
    assert "read-only" in out and "--allow-writes" in out
    assert "GET /api" not in out and "DELETE" not in out     # no access-log line per request
    names = [s.study_name for s in optuna.get_all_study_summaries(f"sqlite:///{tiny_study}")]
    assert names == [STUDY]
    assert len(list((tiny_study.parent / "s.artifacts").iterdir())) == 2


def test_allow_writes_says_what_it_enables_and_lets_a_delete_through(tiny_study: Path) -> None:
    with served_dashboard(STUDY, tiny_study, "--allow-writes") as (base, proc):
        sid, _, _ = _ids(base)
        resp = httpx.delete(f"{base}/api/studies/{sid}", timeout=10)
        assert resp.status_code in (200, 204), resp.text
    out = proc.stdout.read() if proc.stdout else ""
    assert "writes allowed" in out and "deleting" in out and "notes" in out
    assert optuna.get_all_study_summaries(f"sqlite:///{tiny_study}") == []


@contextmanager
def _taken_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


@pytest.mark.parametrize("where", [["--port", "99999"], ["--port", "0"],
                                   ["--host", "203.0.113.7"],     # not an address of ours
                                   ["--host", "999.1.1.1"], "taken"])
def test_an_address_it_cannot_listen_on_is_one_line_exit_2(
        tiny_study: Path, where: list[str] | str) -> None:
    with _taken_port() as taken:
        args = ["--port", str(taken)] if where == "taken" else where
        proc = subprocess.run(tuner_argv("dashboard", STUDY, "--storage", str(tiny_study),
                                         *args), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    assert "open http" not in proc.stdout           # nothing claims to be served
