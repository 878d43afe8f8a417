"""The study's database goes away mid-run (a PostgreSQL server stopped at once, as in a crash
or a restart for maintenance): the sweep ends with one line (exit 1), leaves nothing
running, and the same command resumes once the database is back, losing nothing."""

from __future__ import annotations

import subprocess
import time
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


def test_the_database_stopping_mid_run_is_one_line_and_resume_loses_nothing(
        tmp_path: Path) -> None:
    t0, mark = time.time(), new_mark()
    with postgres_server() as server:
        argv = tuner_argv("sweep", str(SPARK), "--engine", "sim", "--gsm8k", str(GSM8K_DIR),
                          "--storage", server.url, "--artifacts", str(tmp_path / "art"),
                          "--workdir", str(tmp_path / "runs"), "--trials", "5",
                          "--questions", "6", "--time-scale", "300", "--seed", "3",
                          "--ray-address", "none", "--sim-faults", SLOW_START)
        first = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True, env=marked_env(mark))
        storage = driver_url(server.url)
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
        server.stop()
        out, err = first.communicate(timeout=120)
        assert first.returncode == 1, out + err
        assert "the study's storage failed mid-run" in err and "Traceback" not in err
        assert err.strip().count("\n") == 0 and PASSWORD not in out + err
        time.sleep(5)
        assert leftovers(t0, mark) == []                 # the trial and its server are gone
        server.start()
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
