"""Entry point of the ``tuner`` command.

Each subcommand lives in its own module and imports what it needs inside its function, so
``tuner --help`` stays instant.
"""

from __future__ import annotations

import sys

import typer

from tuner import __version__
from tuner.cli import dashboard
from tuner.cli import doctor
from tuner.cli import export
from tuner.cli import init
from tuner.cli import plan
from tuner.cli import probe
from tuner.cli import report
from tuner.cli import sim
from tuner.cli import space
from tuner.cli import sweep
from tuner.cli import trial
from tuner.cli import verify
from tuner.errors import UserError
from tuner.errors import printable


app = typer.Typer(
    name="tuner",
    help="Find the fastest SGLang launch configuration for a MoE model without losing "
         "accuracy.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,
)
app.add_typer(space.app, name="space")
app.add_typer(sim.app, name="sim")
app.command("init")(init.init)
app.command("plan")(plan.plan)
app.command("doctor")(doctor.doctor)
app.command("trial")(trial.trial)
app.command("sweep")(sweep.sweep)
app.command("export")(export.export)
app.command("verify")(verify.verify)
app.command("report")(report.report)
app.command("dashboard")(dashboard.dashboard)
app.command("probe")(probe.probe)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"tuner {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print the version and exit."),
) -> None:
    """Find the fastest SGLang launch configuration for a MoE model without losing accuracy."""


def main() -> None:
    try:
        app()
    except UserError as exc:
        print(f"error: {printable(str(exc))}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt as exc:       # Ctrl-C, or SIGTERM in a sweep (tuner.sweep)
        term = type(exc).__name__ == "Terminated"
        print("stopped (SIGTERM)" if term else "interrupted", file=sys.stderr)
        sys.exit(143 if term else 130)
