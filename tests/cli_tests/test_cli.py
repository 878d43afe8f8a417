from __future__ import annotations

import json
import os
import subprocess

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
    assert "20,352 configurations" in proc.stdout
    assert "spec_draft_tokens" in proc.stdout


def test_version_and_help() -> None:
    proc = run("--help")
    assert proc.returncode == 0 and "plan" in proc.stdout and "doctor" in proc.stdout
    assert run("--version").stdout.startswith("tuner ")
