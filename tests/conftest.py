from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest


REPO = Path(__file__).resolve().parent.parent
SPACES = REPO / "search_spaces"
SPARK = SPACES / "ling-3.0-flash-dgx-spark.yaml"
H200 = SPACES / "ling-3.0-flash-h200.yaml"
GSM8K_DIR = Path(os.environ.get("TUNER_GSM8K_DIR", REPO.parent / "shared" / "data" / "gsm8k"))


def pytest_configure(config: pytest.Config) -> None:
    """Tests read GSM8K from ../shared/data/gsm8k beside the clone, or TUNER_GSM8K_DIR: a
    clone elsewhere gets one line saying so, not dozens of failures (issue 24)."""
    if not (GSM8K_DIR / "test.jsonl").is_file():
        raise pytest.UsageError(f"GSM8K not found at {GSM8K_DIR} (test.jsonl, train.jsonl): "
                                "set TUNER_GSM8K_DIR to the folder holding them")


def tuner_argv(*args: str) -> list[str]:
    """Run the CLI as a user would (a real process), with this interpreter."""
    return [sys.executable, "-m", "tuner", *args]


def run_tuner(cwd: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """``tuner ARGS`` in ``cwd`` as a real process, its output captured as text."""
    return subprocess.run(tuner_argv(*args), capture_output=True, text=True, timeout=timeout,
                          cwd=cwd)


@contextmanager
def served_dashboard(study: str, storage: Path, *extra: str
                     ) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """``tuner dashboard`` for ``study`` in the SQLite file ``storage`` as a real process:
    yields its base URL (once its API answers) and the process, stops it after."""
    import httpx

    from tuner.trial._server import free_port

    port = free_port()
    proc = subprocess.Popen(tuner_argv("dashboard", study, "--storage", str(storage),
                                       "--port", str(port), *extra), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})   # kept at SIGTERM
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(150):
            try:
                if httpx.get(base + "/api/meta", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                assert proc.poll() is None, proc.communicate()[0]
                time.sleep(0.2)
        yield base, proc
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def serve_dashboard(study: str, storage: Path, *extra: str) -> Iterator[str]:
    """:func:`served_dashboard` for a fixture or a loop: yields the base URL only."""
    with served_dashboard(study, storage, *extra) as (base, _):
        yield base


@pytest.fixture
def spark_text() -> str:
    return SPARK.read_text()


def load_space_text(text: str) -> Any:
    from tuner.space import parse_space

    return parse_space(text, file="space")


def spark_searching_memory(tmp: Path) -> Path:
    """The Spark space with its memory fraction searched for speed (``role: speed``), as a
    user may write it: some launches then do not fit (out of memory)."""
    text = SPARK.read_text().replace("    role: capacity\n", "    role: speed\n", 1)
    assert "role: speed" in text and load_space_text(text).knob("mem_fraction").role == "speed"
    path = tmp / "spark-searching-memory.yaml"
    path.write_text(text)
    return path
