"""The sweep end to end: real SQLite, a real local Ray instance, real simulator processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import optuna
import psutil
import pytest

from tests.conftest import GSM8K_DIR
from tests.conftest import SPARK
from tests.conftest import tuner_argv
from tests.sweep_tests import assert_every_constraint_set
from tests.sweep_tests import assert_only_measurements_complete
from tests.sweep_tests import carries
from tests.sweep_tests import marked_env
from tests.sweep_tests import new_mark
from tuner.study._record import ROLE
from tuner.study.pooled import feasible_front


pytestmark = pytest.mark.slow


def sweep_argv(tmp: Path, *extra: str, trials: int = 5) -> list[str]:
    return tuner_argv("sweep", str(SPARK), "--engine", extra[0] if extra and extra[0].startswith(
        "sim") else "sim", "--gsm8k", str(GSM8K_DIR), "--storage", str(tmp / "s.db"),
        "--trials", str(trials), "--questions", "6", "--time-scale", "300", "--seed", "3",
        "--workdir", str(tmp / "runs"),
        *[e for e in extra if not e.startswith("sim")])


def load(tmp: Path) -> optuna.Study:
    return optuna.load_study(study_name="ling-3.0-flash-dgx-spark",
                             storage=f"sqlite:///{tmp / 's.db'}")


def leftovers(since: float, mark: str) -> list[str]:
    """Processes of this test (their environment carries ``mark``: the driver's, inherited)
    started after ``since`` that are still running: another test run's are not ours."""
    out = []
    for p in psutil.process_iter(["pid", "cmdline", "create_time", "status"]):
        cmd = " ".join(p.info["cmdline"] or [])
        if p.info["create_time"] < since or p.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        if ("tuner_sim" in cmd or "ray::" in cmd or "raylet" in cmd or "gcs_server" in cmd
                ) and carries(p.info["pid"], mark):
            out.append(f"{p.info['pid']} {cmd[:80]}")
    return out


def test_sweep_runs_records_and_leaves_a_consistent_study(tmp_path: Path) -> None:
    t0, mark = time.time(), new_mark()
    proc = subprocess.run(sweep_argv(tmp_path), capture_output=True, text=True, timeout=600,
                          env=marked_env(mark))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Pareto front" in proc.stdout
    study = load(tmp_path)
    trials = study.get_trials(deepcopy=False)
    assert trials[0].user_attrs[ROLE] == "baseline"
    assert trials[0].state == optuna.trial.TrialState.COMPLETE
    counted = [t for t in trials if t.user_attrs.get(ROLE) in ("baseline", "trial")]
    assert len(counted) == 5                # measured configurations: the budget
    for t in trials:
        if t.state == optuna.trial.TrialState.COMPLETE:
            assert_every_constraint_set(t)
        if t.state == optuna.trial.TrialState.FAIL:
            assert t.user_attrs.get("reason")
    metas = optuna.artifacts.get_all_artifact_meta(trials[0], storage=study._storage)
    assert {m.mimetype for m in metas} >= {"text/plain", "application/json"}
    for t in feasible_front(study):
        assert t.user_attrs.get("feasible") is True
    assert study.user_attrs["tuner:driver_lock"] == {}
    time.sleep(2)
    assert leftovers(t0, mark) == []


#: Every server takes 4 s of wall time to start (1,200 machine s at time scale 300): a trial
#: is reliably RUNNING when the test looks, so the kill lands mid-trial (forced, not raced).
SLOW_START = json.dumps([{"kind": "slow_start", "seconds": 1200}])


def young_server(after: float, younger_than: float, mark: str) -> bool:
    """Whether a simulator server of this test (``mark``) started after ``after`` has been
    up under ``younger_than`` seconds (under SLOW_START it is still starting: its trial runs
    for seconds more)."""
    now = time.time()
    for p in psutil.process_iter(["pid", "cmdline", "create_time", "status"]):
        cmd = " ".join(p.info["cmdline"] or [])
        if ("tuner_sim" in cmd and p.info["status"] != psutil.STATUS_ZOMBIE
                and after < p.info["create_time"] and now - p.info["create_time"] < younger_than
                and carries(p.info["pid"], mark)):
            return True
    return False


def kill_during_a_later_trial(tmp: Path, driver: subprocess.Popen[str], mark: str,
                              sig: int = signal.SIGKILL, times: int = 1) -> None:
    """Send ``sig`` (SIGKILL) to ``driver`` while a trial after the first completed one is
    surely mid-run: its server (started after a trial completed) is younger than half
    SLOW_START's 4 s."""
    deadline = time.time() + 300
    done_at = None
    while time.time() < deadline and driver.poll() is None:
        time.sleep(0.2)
        if done_at is None:
            try:
                study = load(tmp)
            except (KeyError, ValueError):
                continue
            if study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,)):
                done_at = time.time()
        elif young_server(done_at, 2.0, mark):
            for i in range(times):       # a terminal's Ctrl-C reaches the process group
                if i:
                    time.sleep(0.3)
                if times > 1:
                    os.killpg(driver.pid, sig)
                else:
                    driver.send_signal(sig)
            driver.wait(timeout=120)
            return
    driver.kill()
    raise AssertionError(f"no trial to interrupt (driver exit {driver.wait()}):\n"
                         + (tmp / "first.log").read_text()[-3000:])


@pytest.mark.parametrize("runner", [[], ["--ray-address", "none"]], ids=["ray", "local"])
def test_sigkill_then_resume_loses_nothing_and_runs_nothing_twice(tmp_path: Path,
                                                                  runner: list[str]) -> None:
    t0, mark = time.time(), new_mark()
    argv = sweep_argv(tmp_path, *runner, "--sim-faults", SLOW_START, trials=6)
    log = (tmp_path / "first.log").open("w")
    first = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, text=True,
                             env=marked_env(mark))
    kill_during_a_later_trial(tmp_path, first, mark)
    before = {t.number: (t.state, t.values) for t in load(tmp_path).get_trials()}
    interrupted = [n for n, (s, _) in before.items() if s == optuna.trial.TrialState.RUNNING]
    assert interrupted
    time.sleep(5)                 # the reaper ends the dead driver's trials, servers and Ray
    assert leftovers(t0, mark) == []
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=600,
                          env=marked_env(mark))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    study = load(tmp_path)
    after = {t.number: t for t in study.get_trials()}
    for n, (state, values) in before.items():          # nothing completed was lost
        if state == optuna.trial.TrialState.COMPLETE:
            assert after[n].state == state and after[n].values == values
    for n in interrupted:                               # failed, then re-run
        assert after[n].state == optuna.trial.TrialState.FAIL
        assert after[n].user_attrs.get("recovered") is True
        assert any(t.user_attrs.get("retry_of") == n and t.state.is_finished()
                   for t in after.values())
    measured = [t.user_attrs["config_hash"] for t in after.values()
                if t.user_attrs.get(ROLE) in ("baseline", "trial") and t.state.is_finished()
                and not t.user_attrs.get("recovered")]
    assert len(measured) == len(set(measured))          # no configuration measured twice
    counted = [t for t in after.values() if t.user_attrs.get(ROLE) in ("baseline", "trial")
               and not t.user_attrs.get("recovered") and t.state.is_finished()]
    assert len(counted) == 6                # the budget (measured configurations), both runs
    time.sleep(2)
    assert leftovers(t0, mark) == []


@pytest.mark.parametrize("runner", [[], ["--ray-address", "none"]], ids=["ray", "local"])
def test_sigterm_is_a_graceful_stop_and_the_resume_loses_nothing(tmp_path: Path,
                                                                 runner: list[str]) -> None:
    """SIGTERM was a crash: on Ray it ended in SIGABRT with C++ stack lines. Now it is
    Ctrl-C's stop: exit 143, the trial in flight FAIL (recovered) and queued again, nothing
    left running, the resume completes the budget."""
    t0, mark = time.time(), new_mark()
    argv = sweep_argv(tmp_path, *runner, "--sim-faults", SLOW_START, trials=6)
    log = (tmp_path / "first.log").open("w")
    first = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, text=True,
                             env=marked_env(mark))
    kill_during_a_later_trial(tmp_path, first, mark, signal.SIGTERM)
    text = (tmp_path / "first.log").read_text()
    assert first.returncode == 143, text[-3000:]
    assert "stopped (SIGTERM)" in text and "Traceback" not in text, text[-3000:]
    states = [t.state for t in load(tmp_path).get_trials()]
    assert optuna.trial.TrialState.RUNNING not in states          # nothing left as a crash
    assert optuna.trial.TrialState.WAITING in states              # queued again
    time.sleep(5)
    assert leftovers(t0, mark) == []
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=600,
                          env=marked_env(mark))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    after = load(tmp_path).get_trials()
    counted = [t for t in after if t.user_attrs.get(ROLE) in ("baseline", "trial")
               and not t.user_attrs.get("recovered") and t.state.is_finished()]
    assert len(counted) == 6


def test_a_double_ctrl_c_on_the_local_runner_is_one_clean_stop(tmp_path: Path) -> None:
    """Ctrl-C twice at a terminal (SIGINT to the whole process group): once a stray
    "Process SpawnProcess-2:" traceback from the trial's child process."""
    t0, mark = time.time(), new_mark()
    argv = sweep_argv(tmp_path, "--ray-address", "none", "--sim-faults", SLOW_START, trials=6)
    log = (tmp_path / "first.log").open("w")
    first = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, text=True,
                             env=marked_env(mark), start_new_session=True)
    kill_during_a_later_trial(tmp_path, first, mark, signal.SIGINT, times=2)
    text = (tmp_path / "first.log").read_text()
    assert first.returncode == 130, text[-3000:]
    assert "SpawnProcess" not in text and "Traceback" not in text, text[-3000:]
    time.sleep(5)
    assert leftovers(t0, mark) == []


def test_second_driver_is_refused(tmp_path: Path) -> None:
    argv = sweep_argv(tmp_path, trials=3)
    first = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            time.sleep(0.5)
            try:
                if load(tmp_path).user_attrs.get("tuner:driver_lock"):
                    break
            except (KeyError, ValueError):
                continue
        second = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        assert second.returncode == 1
        assert "is being run by" in second.stderr and "--break-lock" in second.stderr
    finally:
        first.wait(timeout=600)
    assert first.returncode == 0


@pytest.mark.timeout(900)     # 14 launches, some hanging until the timeout: long under load
def test_faulty_space_keeps_going_with_reasons_and_a_clean_front(tmp_path: Path) -> None:
    faults = json.dumps([
        {"kind": "crash_at_start", "when": {"speculative_num_steps": [3, 4, 5]}},
        {"kind": "hang", "when": {"moe_runner_backend": "marlin", "enable_fp32_lm_head": True}},
    ])
    # seed 3 draws both faulty configurations. The hang is ended by the start-up timeout (wall
    # seconds); the crash must be seen before it, so the timeout leaves a crash (under a
    # second here) ample room on a loaded machine: a 12 s timeout once read a crash as a
    # timeout under load. Only the one hanging configuration (and its retry) pays it.
    proc = subprocess.run(sweep_argv(tmp_path, "sim:fork-unshared", "--sim-faults", faults,
                                     "--sampler", "random", "--startup-timeout", "25",
                                     trials=14),
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    study = load(tmp_path)
    reasons = {t.user_attrs.get("reason") for t in study.get_trials()
               if t.state == optuna.trial.TrialState.FAIL}
    assert {"launch_error", "startup_timeout"} <= reasons      # both faults were met
    for t in study.get_trials():
        cfg = t.user_attrs.get("config") or {}
        if t.state != optuna.trial.TrialState.FAIL or not cfg:
            continue
        if cfg.get("spec_steps") in (3, 4, 5):   # the crash comes before the hang
            assert t.user_attrs["reason"] in ("launch_error", "oom")
        elif cfg.get("moe_backend") == "marlin" and cfg.get("lm_head") == "fp32":
            assert t.user_attrs["reason"] in ("startup_timeout", "oom")
        else:
            assert t.user_attrs["reason"] == "oom"             # no fault: only a misfit
    gated = [t for t in study.get_trials() if t.user_attrs.get("gate")]
    for t in study.best_trials:
        assert t.state == optuna.trial.TrialState.COMPLETE
        assert not t.user_attrs.get("gate")
    assert_only_measurements_complete(study)
    assert all(t not in study.best_trials for t in gated)


def _a_server_log_says(runs: Path, needle: str) -> bool:
    """Whether any server log under ``runs`` holds ``needle``; the folder appears only
    once the driver has started its first trial (CI once scanned it before that)."""
    if not runs.is_dir():
        return False
    try:
        return any(needle in f.read_text(errors="replace") for f in runs.rglob("*.log"))
    except FileNotFoundError:                     # a log moved while it was read
        return False


@pytest.mark.parametrize("runner", [["--ray-address", "none"], []], ids=["local", "ray"])
def test_ctrl_c_to_a_driver_that_ignores_it_never_records_a_healthy_configuration_crashed(
        tmp_path: Path, runner: list[str]) -> None:
    """Issue 34 item 4, finding 1: a driver started with SIGINT ignored (a script's
    background job inherits SIG_IGN) went on after a Ctrl-C to its process group, but
    the trial's server died of it, and the healthy baseline was recorded ``crashed``. A
    driver that ignores Ctrl-C runs its trials and servers ignoring it too."""
    # time scale 20 (the last one given): about 1 s a request, so the signal lands mid-trial
    argv = sweep_argv(tmp_path, *runner, "--time-scale", "20", trials=1)
    log = (tmp_path / "first.log").open("w")
    keep = signal.signal(signal.SIGINT, signal.SIG_IGN)   # as `tuner sweep ... &` in a script
    try:
        driver = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, text=True,
                                  start_new_session=True)
    finally:
        signal.signal(signal.SIGINT, keep)
    # the baseline's server decodes its first warm-up request: 7 more are still to come
    deadline = time.time() + 300
    while not _a_server_log_says(tmp_path / "runs", "Decode batch"):
        assert driver.poll() is None and time.time() < deadline, (
            (tmp_path / "first.log").read_text()[-3000:])
        time.sleep(0.1)
    os.killpg(driver.pid, signal.SIGINT)      # a terminal's Ctrl-C reaches the whole group
    driver.wait(timeout=600)
    text = (tmp_path / "first.log").read_text()
    assert driver.returncode == 0, text[-3000:]
    trials = load(tmp_path).get_trials()
    assert [(t.state.name, t.user_attrs.get("reason")) for t in trials] == [
        ("COMPLETE", None)], text[-3000:]
