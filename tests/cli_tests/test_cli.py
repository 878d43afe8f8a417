from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import GSM8K_DIR
from tests.conftest import SPARK
from tests.conftest import tuner_argv


def run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run(tuner_argv(*args), capture_output=True, text=True, timeout=120,
                          env=env)


def test_plan_json_is_the_launch_plan() -> None:
    proc = run("plan", str(SPARK), "--set", "moe_backend=humming", "--set", "lm_head=fp8",
               "--set", "speculative=NEXTN", "--set", "spec_draft_tokens=6", "--json",
               "--port", "31000")
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    assert plan["config"]["spec_draft_tokens"] == 4  # topk 1 (default), steps 3 (default)
    assert plan["argv"][plan["argv"].index("--port") + 1] == "31000"
    assert plan["env"]["SGLANG_ENABLE_FP8_LM_HEAD"] == "1"
    assert len(plan["config_hash"]) == 12


def test_plan_human_output_notes_the_adjustment() -> None:
    proc = run("plan", str(SPARK), "--set", "speculative=NEXTN", "--set", "spec_draft_tokens=6")
    assert proc.returncode == 0, proc.stderr
    assert "spec_draft_tokens: 6 -> 4" in proc.stdout
    assert "--speculative-num-draft-tokens 4" in proc.stdout


def test_plan_rejects_bad_sets_cleanly() -> None:
    for bad, msg in [("colour=red", "unknown knob 'colour'"),
                     ("mem_fraction=0.75", "outside its domain"),
                     ("spec_steps=three", "not a valid int"),
                     ("moe_backend", "expected KNOB=VALUE")]:
        proc = run("plan", str(SPARK), "--set", bad)
        assert proc.returncode == 2, (bad, proc.stdout)
        assert "Traceback" not in proc.stderr and msg in proc.stderr, proc.stderr


def test_doctor_without_sglang_says_so_and_exits_cleanly() -> None:
    proc = run("doctor", str(SPARK), "--engine-command", "sglang-not-installed-here serve")
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "not found" in proc.stdout and "--engine sim" in proc.stdout


def test_space_show_reports_size() -> None:
    proc = run("space", "show", str(SPARK))
    assert proc.returncode == 0, proc.stderr
    assert "112,320 configurations" in proc.stdout      # 22,464 x 5 maxima of running requests
    assert "spec_draft_tokens" in proc.stdout


def test_version_and_help() -> None:
    proc = run("--help")
    assert proc.returncode == 0 and "plan" in proc.stdout and "doctor" in proc.stdout
    assert run("--version").stdout.startswith("tuner ")


def test_doctor_auto_checks_the_simulator_when_no_sglang_is_installed() -> None:
    proc = run("doctor", str(SPARK), "--json")
    data = json.loads(proc.stdout)
    assert data["found"] and data["command"][1:3] == ["-m", "tuner_sim.fork"]


@pytest.mark.slow
def test_doctor_reports_the_version_of_a_real_sglang_install(tmp_path: Path) -> None:
    # The real 0.5.23 wheel, installed without its dependencies (no torch here: its --help
    # cannot run, its metadata can be read). Its version.py would say 0.0.0.dev0.
    wheels = tmp_path / "wheels"
    got = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                          "sglang==0.5.23", "-d", str(wheels)], capture_output=True, timeout=300)
    if got.returncode != 0:
        pytest.skip("PyPI unreachable: " + got.stderr.decode()[-200:])
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-compile",
                    "--target", str(site), *map(str, wheels.glob("*.whl"))], check=True,
                   timeout=300)
    env = {**os.environ, "PYTHONPATH": str(site), "PATH": f"{site / 'bin'}:{os.environ['PATH']}"}
    proc = subprocess.run(tuner_argv("doctor", "--json"), capture_output=True, text=True,
                          env=env, timeout=300)
    data = json.loads(proc.stdout)
    assert data["command"] == ["sglang", "serve"]          # auto found the installed one
    assert data["found"] and data["version"] == "0.5.23", data
    assert data["help_error"]                               # no torch: --help fails, said so


@pytest.mark.parametrize("bad", [["--time-scale", "0"], ["--noise", "-1"],
                                 ["--startup-timeout", "-5"], ["--trial-timeout", "0"],
                                 ["--search-questions", "40", "--questions", "30"]])
def test_bad_sweep_values_are_one_line_errors(bad: list[str], tmp_path: Path) -> None:
    proc = run("sweep", str(SPARK), "--engine", "sim", "--storage", str(tmp_path / "s.db"),
               *bad)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and bad[0] in proc.stderr
    assert not (tmp_path / "s.db").exists()              # nothing written


@pytest.mark.slow
def test_ray_without_gpus_says_so_for_a_real_engine() -> None:
    # A GPU-less Ray cluster asked for GPU trials: a clear error, not an AttributeError.
    from tuner.errors import UserError
    from tuner.sweep import RayRunner

    with pytest.raises(UserError, match="no GPU"):
        RayRunner(address=None, gpu=True, slots=None)


def test_a_bad_sampler_leaves_no_study_behind(tmp_path: Path) -> None:
    proc = run("sweep", str(SPARK), "--engine", "sim", "--storage", str(tmp_path / "s.db"),
               "--sampler", "bogus", "--gsm8k", str(GSM8K_DIR))
    assert proc.returncode == 2 and "--sampler 'bogus'" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_gsm8k_as_one_file_is_refused(tmp_path: Path) -> None:
    # One file would give the few-shot exemplars from the very split being scored.
    proc = run("trial", str(SPARK), "--engine", "sim", "--gsm8k", str(GSM8K_DIR / "test.jsonl"),
               "--workdir", str(tmp_path))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "expected a folder holding test.jsonl and train.jsonl" in proc.stderr


@pytest.mark.slow
def test_a_study_name_cannot_write_outside_trials(tmp_path: Path) -> None:
    cwd = tmp_path / "a" / "b"
    cwd.mkdir(parents=True)
    proc = subprocess.run(tuner_argv(
        "sweep", str(SPARK), "--engine", "sim", "--gsm8k", str(GSM8K_DIR), "--questions", "2",
        "--trials", "1", "--ray-address", "none", "--study", "../../escaped"),
        capture_output=True, text=True, cwd=cwd, timeout=300,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a"]
    assert sorted(p.name for p in cwd.iterdir()) == ["trials"]
    assert (cwd / "trials" / "runs" / "..-..-escaped").is_dir()


@pytest.mark.parametrize(("storage", "text"), [
    ("/nonexistent/dir/s.db", "cannot open it"),
    ("postgresql://tuner:s3cr3t-pw@127.0.0.1:1/db", "cannot open it"),   # nothing listens
    ("mysql://tuner:s3cr3t-pw@127.0.0.1:1/db", "no driver"),           # none installed
    ("/dev/null", "--storage /dev/null"),
])
def test_storage_that_cannot_be_opened_is_one_line(storage: str, text: str,
                                                   tmp_path: Path) -> None:
    proc = run("sweep", str(SPARK), "--engine", "sim", "--gsm8k", str(GSM8K_DIR),
               "--storage", storage, "--artifacts", str(tmp_path / "art"), "--trials", "1",
               "--ray-address", "none")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and text in proc.stderr
    assert proc.stderr.count("\n") == 1
    assert "s3cr3t-pw" not in proc.stdout + proc.stderr        # the password never shows


def test_an_artifact_folder_that_cannot_be_made_is_one_line(tmp_path: Path) -> None:
    proc = run("sweep", str(SPARK), "--engine", "sim", "--gsm8k", str(GSM8K_DIR),
               "--storage", str(tmp_path / "s.db"), "--artifacts", "/proc/no-such/art",
               "--trials", "1", "--ray-address", "none")
    assert proc.returncode == 2 and "--artifacts /proc/no-such/art" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(("address", "text"), [
    ("127.0.0.1:1", "no Ray head answers there"),
    ("nonsense", "expected auto, none or HOST:PORT")])
def test_an_unreachable_ray_address_is_one_line_at_once(address: str, text: str,
                                                        tmp_path: Path) -> None:
    # Ray itself retries for minutes; the loopback port 1 refuses at once.
    proc = run("sweep", str(SPARK), "--engine", "sim", "--gsm8k", str(GSM8K_DIR),
               "--storage", str(tmp_path / "s.db"), "--ray-address", address)
    assert proc.returncode == 2 and text in proc.stderr, proc.stderr
    assert not (tmp_path / "s.db").exists()            # the study was never touched


def test_sim_serve_is_the_simulator_itself_so_sigterm_leaves_nothing() -> None:
    """``tuner sim serve`` execs the simulator: a SIGTERM to the pid the user started ends
    the server (it used to leave a child serving)."""
    import signal
    import time

    import httpx
    import psutil

    from tuner.trial._server import free_port

    port = free_port()
    proc = subprocess.Popen(tuner_argv("sim", "serve", "--", "--model-path",
                                       "inclusionAI/Ling-3.0-flash-fp4",
                                       "--mem-fraction-static", "0.68", "--port", str(port)),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "TUNER_SIM_TIME_SCALE": "1000"})
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.3)
        else:
            raise AssertionError("the simulator never became healthy")
        serving = [c for c in psutil.net_connections("tcp") if c.laddr and c.laddr.port == port
                   and c.status == psutil.CONN_LISTEN]
        assert {c.pid for c in serving} == {proc.pid}       # the pid started is the server
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        time.sleep(0.5)
        assert not [c for c in psutil.net_connections("tcp") if c.laddr
                    and c.laddr.port == port and c.status == psutil.CONN_LISTEN]
    finally:
        if proc.poll() is None:
            proc.kill()
