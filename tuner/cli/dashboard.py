"""``tuner dashboard``: optuna-dashboard on a study's storage, with its artifacts."""

from __future__ import annotations

import typer


def dashboard(
    study: str = typer.Argument(..., help="study name"),
    storage: str = typer.Option(None, help="Optuna storage URL or journal file (default "
                                "trials/<study>.db)"),
    artifacts: str = typer.Option(None, help="artifact folder (default: next to the study)"),
    host: str = typer.Option("127.0.0.1", help="address to bind (127.0.0.1: this machine "
                             "only)"),
    port: int = typer.Option(8080, help="port"),
) -> None:
    """Serve optuna-dashboard for the study: Pareto front (gated trials infeasible, grey),
    trial tables with the key figures, and each trial's server log and results as
    artifacts. Ctrl-C stops it."""
    from optuna.artifacts import FileSystemArtifactStore

    from tuner.cli._common import console
    from tuner.study import open_study
    from tuner.study import redact_url

    st, loc = open_study(study, storage, artifacts)
    out = console()
    out.print(f"optuna-dashboard for study [bold]{study}[/] ({redact_url(loc.storage_url)})")
    out.print(f"open http://{host}:{port}/dashboard/studies/{st._study_id}   (Ctrl-C stops)")
    out.print("[dim]gated trials are stored in both constraint formats, so the dashboard's "
              "Pareto plot greys them out; failed trials are shown failed (the sampler's "
              "stand-ins for them are never stored)[/]")
    from optuna_dashboard import run_server

    try:
        run_server(loc.storage(), host=host, port=port,
                   artifact_store=FileSystemArtifactStore(str(loc.artifacts)))
    except KeyboardInterrupt:
        raise typer.Exit(0) from None
