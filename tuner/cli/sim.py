"""``tuner sim``: the built-in Spark simulator, run as its own process (never imported)."""

from __future__ import annotations

import typer


app = typer.Typer(help="The built-in simulator: a drop-in SGLang stand-in calibrated to "
                       "published DGX Spark numbers.", no_args_is_help=True)

_PASS = {"allow_extra_args": True, "ignore_unknown_options": True}


def _run(argv: list[str]) -> None:
    """Become ``python ARGV`` (exec, not a child: a SIGTERM or Ctrl-C sent to this process
    reaches the simulator itself, and nothing is left running when it ends)."""
    import os
    import sys

    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, [sys.executable, *argv])


@app.command("calibrate")
def calibrate(
    json_: bool = typer.Option(False, "--json", help="print rows as JSON"),
    machine: str = typer.Option("dgx-spark", help="machine profile"),
    model: str | None = typer.Option(
        None, help="a local checkpoint folder (or its config.json): the twin's predictions "
        "for it, labelled DERIVED when no calibrated profile matches it"),
) -> None:
    """Print every published figure beside the model's prediction, with the error of each.

    Exit code 1 when a checked figure is off by more than 5%. With --model, a model that has
    no published figures gets the predictions of its twin DERIVED from config.json, none
    checked.
    """
    _run(["-m", "tuner_sim", "calibrate", "--machine", machine,
          *(["--model", model] if model else []), *(["--json"] if json_ else [])])


@app.command("serve", context_settings=_PASS)
def serve(
    ctx: typer.Context,
    variant: str = typer.Option("fork", help="fork, stock or fork-unshared"),
) -> None:
    """Start the simulator with SGLang flags: tuner sim serve [--variant V] -- --model-path ...

    Simulator settings come from TUNER_SIM_* env vars (see docs/simulator.md).
    """
    from tuner.engines import SIM_VARIANTS
    from tuner.errors import UserError

    if variant not in SIM_VARIANTS:
        raise UserError(f"unknown variant {variant!r}; expected one of {', '.join(SIM_VARIANTS)}")
    _run(["-m", SIM_VARIANTS[variant], "serve", *ctx.args])
