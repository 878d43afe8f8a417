"""Hostile or broken space files end in one located line and exit 2, quickly and without a
traceback: alias bombs, deep nesting, nan/inf, runaway domains, special files."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import SPARK
from tests.conftest import tuner_argv
from tuner.errors import SpaceError
from tuner.space import parse_space


BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
    f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
    f"*{chr(97 + i)}]\n" for i in range(12))


def test_an_alias_bomb_is_refused_before_anything_expands() -> None:
    with pytest.raises(SpaceError, match="anchors and aliases") as err:
        parse_space(BOMB, file="bomb.yaml")
    assert err.value.line == 1                      # the first anchor, before expansion


def test_deep_nesting_is_refused() -> None:
    deep = "schema_version: 1\nx: " + "[" * 500 + "]" * 500 + "\n"
    with pytest.raises(SpaceError, match="nested deeper than"):
        parse_space(deep, file="deep.yaml")


@pytest.mark.parametrize(("old", "new", "where"), [
    ("    high: 0.70\n", "    high: .inf\n", "knobs.mem_fraction.high"),
    ("    low: 0.55\n", "    low: .nan\n", "knobs.mem_fraction.low"),
    ("    step: 0.01\n", "    step: 0.0000000001\n", "knobs.mem_fraction.high"),
])
def test_non_finite_and_runaway_domains_are_refused(old: str, new: str, where: str) -> None:
    text = SPARK.read_text()
    assert old in text
    with pytest.raises(SpaceError) as err:
        parse_space(text.replace(old, new, 1), file="x.yaml")
    assert where in str(err.value)


@pytest.mark.parametrize(("key", "value"), [("questions", 0), ("concurrency", 0),
                                            ("top_p", 0), ("output_len", -1)])
def test_workload_values_are_bounded(key: str, value: int) -> None:
    head, _, workload = SPARK.read_text().partition("workload:\n")
    lines = [ln for ln in workload.splitlines() if not ln.startswith(f"  {key}:")]
    text = head + "workload:\n" + "\n".join([f"  {key}: {value}", *lines]) + "\n"
    with pytest.raises(SpaceError, match=f"workload.{key}"):
        parse_space(text, file="x.yaml")


def _validate(path: Path | str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(tuner_argv("space", "validate", str(path)), capture_output=True,
                          text=True, timeout=60)


def test_special_files_are_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "space.yaml"
    os.mkfifo(fifo)                    # opening it for reading would block for ever
    loop = tmp_path / "loop.yaml"
    loop.symlink_to(loop)
    big = tmp_path / "big.yaml"
    big.write_text("# " + "x" * (2 * 1024 * 1024) + "\n")
    for path, text in [(fifo, "not a regular file"), ("/dev/zero", "not a regular file"),
                       (loop, "no such file"), (big, "larger than"),
                       (tmp_path, "not a regular")]:
        proc = _validate(path)
        assert proc.returncode == 2, (path, proc.stdout, proc.stderr)
        assert "Traceback" not in proc.stderr and text in proc.stderr, (path, proc.stderr)
        assert proc.stderr.count("\n") == 1
