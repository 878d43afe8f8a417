from __future__ import annotations

import re

from tests.conftest import REPO


def _commands() -> list[str]:
    text = (REPO / "README.md").read_text()
    return re.findall(r"```(?:sh|bash)\n(.*?)\n```", text, re.S)[:2]


def test_readme_opens_with_two_commands_and_ci_runs_the_test_one() -> None:
    main, tests = _commands()
    assert "tuner" in main and "pip install" in main
    assert "pytest" in tests
    ci = (REPO / ".ci" / "run").read_text()
    assert tests.strip() in ci
