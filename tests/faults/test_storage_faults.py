"""The study's database goes away mid-run (a PostgreSQL server stopped at once, as in a crash
or a restart for maintenance): the sweep ends with one line (exit 1), leaves nothing
running, and the same command resumes once the database is back, losing nothing."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import optuna
import pytest

from tests.conftest import GSM8K_DIR
from tests.conftest import SPARK
from tests.conftest import tuner_argv
from tests.postgres_server import PASSWORD
from tests.postgres_server import postgres_server
from tests.sweep_tests import marked_env
from tests.sweep_tests import new_mark
from tests.sweep_tests.test_sweep import SLOW_START
from tests.sweep_tests.test_sweep import leftovers
from tests.sweep_tests.test_sweep import young_server
from tuner.study._storage import driver_url


pytestmark = pytest.mark.slow
STUDY = "ling-3.0-flash-dgx-spark"


def _argv(storage: str, tmp_path: Path) -> list[str]:
    return tuner_argv("sweep", str(SPARK), "--engine", "sim", "--gsm8k", str(GSM8K_DIR),
                      "--storage", storage, "--artifacts", str(tmp_path / "art"),
                      "--workdir", str(tmp_path / "runs"), "--trials", "5",
                      "--questions", "6", "--time-scale", "300", "--seed", "3",
                      "--ray-address", "none", "--sim-faults", SLOW_START)


def _cut_mid_trial(argv: list[str], storage: str, cut: Callable[[], None],
                   restore: Callable[[], None], secret: str | None = None) -> None:
    """Run the sweep until a trial is done and the next one's server is starting, then
    ``cut`` the storage: the sweep must end with one line (exit 1) and nothing running;
    after ``restore``, the same command must finish the sweep with nothing lost."""
    t0, mark = time.time(), new_mark()
    first = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=marked_env(mark))
    done_at = None
    deadline = time.time() + 300
    while time.time() < deadline and first.poll() is None:      # a later trial runs
        time.sleep(0.2)
        if done_at is None:
            try:
                study = optuna.load_study(study_name=STUDY, storage=storage)
            except KeyError:
                continue
            if study.get_trials(states=(optuna.trial.TrialState.COMPLETE,)):
                done_at = time.time()
        elif young_server(done_at, 2.0, mark):
            break
    before = {t.number: (t.state, t.values) for t in
              optuna.load_study(study_name=STUDY, storage=storage).get_trials()}
    cut()
    out, err = first.communicate(timeout=120)
    assert first.returncode == 1, out + err
    assert "the study's storage failed mid-run" in err and "Traceback" not in err
    assert err.strip().count("\n") == 0 and (secret is None or secret not in out + err)
    time.sleep(5)
    assert leftovers(t0, mark) == []                 # the trial and its server are gone
    restore()
    again = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stdout + again.stderr
    after = {t.number: t for t in
             optuna.load_study(study_name=STUDY, storage=storage).get_trials()}
    for n, (state, values) in before.items():          # nothing recorded was lost
        if state == optuna.trial.TrialState.COMPLETE:
            assert after[n].state == state and after[n].values == values
    counted = [t for t in after.values() if t.user_attrs.get("tuner:role") in
               ("baseline", "trial", "remeasure") and t.state.is_finished()
               and not t.user_attrs.get("recovered")]
    assert len(counted) == 5
    assert any(t.user_attrs.get("recovered") for t in after.values())   # the cut trial


def test_the_database_stopping_mid_run_is_one_line_and_resume_loses_nothing(
        tmp_path: Path) -> None:
    with postgres_server() as server:
        _cut_mid_trial(_argv(server.url, tmp_path), driver_url(server.url), server.stop,
                       server.start, secret=PASSWORD)


def _immutable(path: Path, on: bool) -> None:
    subprocess.run(["chattr", "+i" if on else "-i", str(path)], check=True,
                   capture_output=True)


def test_an_sqlite_file_made_read_only_mid_run_is_one_line_and_resume_loses_nothing(
        tmp_path: Path) -> None:
    """Read-only for root too: the file made immutable (``chattr +i``), as a disk
    remounted read-only; skipped where the file system or the user cannot do that."""
    db = tmp_path / "s.db"
    db.touch()
    try:
        _immutable(db, True)
        _immutable(db, False)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("chattr +i is not available here (needs root on ext4 or similar)")
    db.unlink()
    try:
        _cut_mid_trial(_argv(str(db), tmp_path), f"sqlite:///{db}",
                       lambda: _immutable(db, True), lambda: _immutable(db, False))
    finally:
        _immutable(db, False)          # pytest must be able to delete it


def test_a_read_only_sqlite_file_is_one_line_at_start(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    optuna.create_study(study_name=STUDY, storage=f"sqlite:///{db}")
    try:
        _immutable(db, True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("chattr +i is not available here (needs root on ext4 or similar)")
    try:
        proc = subprocess.run(_argv(str(db), tmp_path), capture_output=True, text=True,
                              timeout=300)
    finally:
        _immutable(db, False)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.strip().count("\n") == 0 and "Traceback" not in proc.stderr
    assert "attempt to write a readonly database" in proc.stderr, proc.stderr


def test_a_full_disk_at_the_start_is_one_line(tmp_path: Path) -> None:
    """The first write (the driver lock) fails: the file may not grow past 4 KiB
    (RLIMIT_FSIZE, SIGXFSZ ignored: what a full disk answers). Once a 129-line traceback:
    the claim ran outside the storage-error handler."""
    import resource
    import signal

    db = tmp_path / "s.db"
    optuna.create_study(study_name=STUDY, storage=f"sqlite:///{db}",
                        directions=["minimize", "maximize"])
    before = db.read_bytes()

    def full() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    proc = subprocess.run(_argv(str(db), tmp_path), capture_output=True, text=True,
                          timeout=300, preexec_fn=full)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stderr.strip().count("\n") == 0 and "Traceback" not in proc.stderr
    assert "the study's storage failed at the start" in proc.stderr, proc.stderr
    assert db.read_bytes() == before                 # nothing half-written


def test_a_database_deleted_mid_run_is_said_and_never_silently_recreated(
        tmp_path: Path) -> None:
    """Once: "nothing recorded is lost" for a deleted database, then the same command began
    an empty study and measured the baseline again."""
    db = tmp_path / "s.db"
    argv = _argv(str(db), tmp_path)
    first = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 300
    while time.time() < deadline and first.poll() is None:     # the baseline is recorded
        time.sleep(0.2)
        try:
            study = optuna.load_study(study_name=STUDY, storage=f"sqlite:///{db}")
        except KeyError:
            continue
        if study.get_trials(states=(optuna.trial.TrialState.COMPLETE,)):
            break
    db.unlink()
    out, err = first.communicate(timeout=120)
    assert first.returncode == 1, out + err
    assert "was deleted or moved while the sweep ran" in err and "Traceback" not in err, err
    assert "nothing recorded is lost" not in err
    again = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert again.returncode == 2, again.stdout + again.stderr
    assert "no study database at" in again.stderr and not db.exists()
