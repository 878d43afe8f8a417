from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest


REPO = Path(__file__).resolve().parent.parent
SPACES = REPO / "search_spaces"
SPARK = SPACES / "ling-3.0-flash-dgx-spark.yaml"
H200 = SPACES / "ling-3.0-flash-h200.yaml"
GSM8K_DIR = Path(os.environ.get("TUNER_GSM8K_DIR", REPO.parent / "shared" / "data" / "gsm8k"))


def tuner_argv(*args: str) -> list[str]:
    """Run the CLI as a user would (a real process), with this interpreter."""
    return [sys.executable, "-m", "tuner", *args]


@pytest.fixture
def spark_text() -> str:
    return SPARK.read_text()


def spark_searching_memory(tmp: Path) -> Path:
    """The Spark space with its memory fraction searched for speed (``role: speed``), as a
    user may write it: some launches then do not fit (out of memory)."""
    text = SPARK.read_text().replace("    role: capacity\n", "    role: speed\n")
    assert "role: speed" in text
    path = tmp / "spark-searching-memory.yaml"
    path.write_text(text)
    return path
