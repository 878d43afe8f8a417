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


def test_every_option_of_tuner_trial_is_a_field_of_trial_args() -> None:
    from tuner.cli._args import TrialArgs
    from tuner.cli.trial import trial

    params = {n: p for n, p in inspect.signature(trial).parameters.items() if n != "ctx"}
    assert set(params) == {f.name for f in fields(TrialArgs)}
    for f in fields(TrialArgs):
        default = getattr(params[f.name].default, "default", None)
        if f.name not in ("space_file", "regime", "set_") and default not in (None, ...):
            assert f.default == default, f.name
    a = TrialArgs.from_cli_args({"space_file": "s.yaml", "set_": ["a=1"], "out": "r.json",
                                 "regime": None, "json_": True})
    assert a.set_ == ("a=1",) and a.out == Path("r.json") and a.regime == () and a.json_
    with pytest.raises(TypeError, match="TrialArgs has no field for"):
        TrialArgs.from_cli_args({"space_file": "s", "trials": 5})


def test_the_shared_options_are_one_group_with_one_declaration() -> None:
    """``tuner sweep`` and ``tuner trial`` take the engine and workload options from the
    same groups: the same fields, defaults and Typer declarations (no copies to drift)."""
    from tuner.cli import _args
    from tuner.cli._args import EngineArgs
    from tuner.cli._args import TrialArgs
    from tuner.cli._args import WorkloadArgs
    from tuner.cli.trial import trial

    shared = {f.name for f in fields(EngineArgs)} | {f.name for f in fields(WorkloadArgs)}
    assert shared <= {f.name for f in fields(SweepArgs)}
    assert shared <= {f.name for f in fields(TrialArgs)}
    for name in ("engine", "engine_command", "gsm8k", "workload", "max_tokens",
                 "check_engine", "workdir", "api_key"):
        declared = getattr(_args, name.upper())
        for command in (sweep, trial):
            assert inspect.signature(command).parameters[name].default is declared, name


@pytest.mark.parametrize("name, value, message", [
    ("workload", "bogus", "unknown workload 'bogus'; expected one of gsm8k"),
    ("mix", "code", "--mix 'code': expected CLASS=SHARE"),
    ("regime", "four", "--regime 'four': expected NAME:USERS"),
])
def test_one_check_for_the_command_line_and_the_config_file(
        name: str, value: str, message: str) -> None:
    """The check a ``--config`` file's value gets (located there) is the command line's:
    ``workload_with`` raises the same message for the same value."""
    from tests.conftest import SPARK
    from tuner.cli._args import WorkloadArgs
    from tuner.cli._common import workload_with
    from tuner.errors import UserError
    from tuner.space import load_space

    with pytest.raises(UserError, match=message):
        WorkloadArgs.check(name, value)
    given = {"workload": {"kind": value}, "mix": {"mix": value},
             "regime": {"regimes": [value]}}[name]
    with pytest.raises(UserError, match=message):
        workload_with(load_space(SPARK), **given)
