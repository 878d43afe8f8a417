"""``tuner sweep``'s options as one typed record (``SweepArgs``), not a dict of keys."""

from __future__ import annotations

import inspect
from dataclasses import fields
from pathlib import Path

import pytest

from tuner.cli._sweep_args import SweepArgs
from tuner.cli.sweep import sweep


def test_every_option_of_the_command_is_a_field_with_its_default() -> None:
    """An option added to ``tuner sweep`` without a field fails here (and at run time):
    nothing reaches the sweep through a string key."""
    params = {n: p for n, p in inspect.signature(sweep).parameters.items() if n != "ctx"}
    assert set(params) == {f.name for f in fields(SweepArgs)}
    for f in fields(SweepArgs):
        default = getattr(params[f.name].default, "default", None)
        if f.name not in ("space_file", "regime") and default not in (None, ...):
            assert f.default == default, f.name


def test_from_cli_args_types_the_values_and_refuses_an_unknown_one() -> None:
    a = SweepArgs.from_cli_args({"space_file": "s.yaml", "workdir": "runs", "trials": None,
                                 "regime": ["four:4"], "engine": "sim"})
    assert a.space_file == Path("s.yaml") and a.workdir == Path("runs")
    assert a.regime == ("four:4",) and a.engine == "sim" and a.trials is None
    assert a.trial_budget == 30
    assert SweepArgs.from_cli_args({"space_file": "s", "hours": 1.0}).trial_budget is None
    with pytest.raises(TypeError, match="no field for"):
        SweepArgs.from_cli_args({"space_file": "s", "trails": 5})
    with pytest.raises(AttributeError):
        a.trials = 5  # type: ignore[misc]
