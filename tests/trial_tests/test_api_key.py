"""A server started with an API key: trials and sweeps send it, no file the tool writes
holds it (the plan, the TrialResult, the server log, the study, its artifacts)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import GSM8K_DIR
from tests.conftest import SPARK
from tests.conftest import tuner_argv
from tuner.engines import make_engine
from tuner.errors import SpaceError
from tuner.space import parse_space


pytestmark = pytest.mark.slow
KEY = "sk-tuner-test-7f3a9c"


def _files_holding(root: Path, needle: str) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]


def test_trial_and_sweep_send_the_key_and_store_it_nowhere(tmp_path: Path) -> None:
    env = {**os.environ, "TUNER_API_KEY": KEY, "TUNER_SIM_TIME_SCALE": "200"}
    out = tmp_path / "trial.json"
    trial = subprocess.run(tuner_argv(
        "trial", str(SPARK), "--engine", "sim", "--gsm8k", str(GSM8K_DIR), "--questions",
        "3", "--workdir", str(tmp_path / "runs"), "--out", str(out), "--json"),
        capture_output=True, text=True, timeout=180, env=env)
    assert trial.returncode == 0, trial.stderr[-2000:]
    result = json.loads(out.read_text())
    assert result["status"] == "ok"             # the server demanded the key and got it
    logs = list((tmp_path / "runs").glob("*.log"))
    assert logs and "'api_key': '***'" in logs[0].read_text()    # started with a key...
    sweep = subprocess.run(tuner_argv(
        "sweep", str(SPARK), "--engine", "sim", "--gsm8k", str(GSM8K_DIR), "--questions", "3",
        "--trials", "2", "--ray-address", "none", "--storage", str(tmp_path / "s.db"),
        "--workdir", str(tmp_path / "runs")), capture_output=True, text=True, timeout=300,
        env=env)
    assert sweep.returncode == 0, sweep.stdout[-2000:] + sweep.stderr[-2000:]
    assert (tmp_path / "s.artifacts").is_dir()
    assert _files_holding(tmp_path, KEY) == []                  # ...and it is nowhere
    assert KEY not in trial.stdout + trial.stderr + sweep.stdout + sweep.stderr


def test_a_key_in_the_space_file_is_refused_with_its_location() -> None:
    text = SPARK.read_text().replace("fixed_flags:\n", "fixed_flags:\n  --api-key: abc\n", 1)
    with pytest.raises(SpaceError, match=r"--api-key does not belong in a space file"):
        make_engine("sglang").validate_space(parse_space(text, file="night.yaml"))
