"""The option groups ``tuner sweep`` and ``tuner trial`` share, as typed records.

Each command's options are one frozen dataclass (:class:`~tuner.cli._sweep_args.SweepArgs`,
:class:`TrialArgs`) built once from what Click parsed (the command line over the
``--config`` file over the defaults) by :meth:`CliArgs.from_cli_args`, as vLLM's engine
arguments are. The options both commands take are declared once, in :class:`EngineArgs`
(which engine, how it is started and checked) and :class:`WorkloadArgs` (what each launch
measures), and checked once (:meth:`WorkloadArgs.check`: the command line's values and a
``--config`` file's alike).
"""

from __future__ import annotations

import typing
from dataclasses import dataclass
from dataclasses import fields
from pathlib import Path
from typing import Any
from typing import Self

import typer

from tuner.cli._common import header_value


# The options both commands declare, once (Typer copies a declaration before it uses one,
# so sharing them is safe; the simulator's are in ``_engine_options``).
ENGINE = typer.Option("auto", help="auto, sglang, or sim[:fork|stock|fork-unshared]")
ENGINE_COMMAND = typer.Option(None, help="SGLang entry point (default: the space's)")
GSM8K = typer.Option(None, envvar="TUNER_GSM8K", help="folder with GSM8K test.jsonl and "
                     "train.jsonl, or 'online' to fetch the public files")
WORKLOAD = typer.Option(None, help="gsm8k (math), code, chat, mix, synthetic or jsonl "
                        "(default: the space's workload.kind)")
MAX_TOKENS = typer.Option(None, min=1, help="generation cap per request")
CHECK_ENGINE = typer.Option(True, help="check the engine knows every flag and env var "
                            "first (tuner doctor)")
WORKDIR = typer.Option(Path("trials/runs"), help="where server logs go")
API_KEY = typer.Option(None, envvar="TUNER_API_KEY", callback=header_value,
                       help="start servers with this --api-key and send it (or "
                       "TUNER_API_KEY); never stored")


@dataclass(frozen=True, kw_only=True)
class CliArgs:
    """A command's options; ``None``: not given, the default applies where it is used."""

    @classmethod
    def from_cli_args(cls, params: dict[str, Any]) -> Self:
        """From Click's parameters (paths may arrive as text from a ``--config`` file);
        a parameter this record lacks is a programming error, not a user's."""
        known = {f.name for f in fields(cls)}
        unknown = set(params) - known
        if unknown:
            raise TypeError(f"{cls.__name__} has no field for {sorted(unknown)}")
        values = {k: v for k, v in params.items() if v is not None}
        for name, hint in typing.get_type_hints(cls).items():
            if name not in known:
                continue
            if typing.get_origin(hint) is tuple:
                values[name] = tuple(values.get(name) or ())
            elif name in values and (hint is Path or Path in typing.get_args(hint)):
                values[name] = Path(values[name])
        return cls(**values)


@dataclass(frozen=True, kw_only=True)
class EngineArgs(CliArgs):
    """Which engine launches the servers, how it is started, and whether it is checked
    first (``--engine`` ... ``--api-key``)."""

    engine: str = "auto"
    engine_command: str | None = None
    time_scale: float | None = None
    noise: float = 0.02
    sim_faults: str | None = None
    sim_profiles: Path | None = None
    startup_timeout: float | None = None
    check_engine: bool = True
    workdir: Path = Path("trials/runs")
    api_key: str | None = None


@dataclass(frozen=True, kw_only=True)
class WorkloadArgs(CliArgs):
    """What each launch measures (``--gsm8k`` ... ``--max-tokens``); the space's workload
    with these changes is :func:`tuner.cli._common.workload_with`'s."""

    gsm8k: str | None = None
    workload: str | None = None
    mix: str | None = None
    regime: tuple[str, ...] = ()
    questions: int | None = None
    max_tokens: int | None = None

    @staticmethod
    def check(name: str, value: Any) -> None:
        """The one check of a ``workload``, ``mix`` or ``regime`` value beyond its type (a
        ``--config`` file's, located there, and the command line's): raises UserError."""
        from tuner.cli._common import parse_mix
        from tuner.cli._common import parse_regime
        from tuner.errors import UserError

        if name == "mix":
            parse_mix(value)
        elif name == "regime":
            parse_regime(value)
        elif name == "workload":
            from tuner.workloads import KINDS

            if value not in KINDS:
                raise UserError(f"unknown workload {value!r}; expected one of "
                                f"{', '.join(KINDS)}")


@dataclass(frozen=True, kw_only=True)
class TrialArgs(EngineArgs, WorkloadArgs):
    """One field per option of :func:`tuner.cli.trial.trial` (its help says what each
    means)."""

    space_file: Path
    set_: tuple[str, ...] = ()
    prompts: Path | None = None
    concurrency: int | None = None
    seed: int | None = None
    baseline: Path | None = None
    out: Path | None = None
    json_: bool = False
