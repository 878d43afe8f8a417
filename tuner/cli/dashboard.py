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
    launches: bool = typer.Option(False, "--launches", help="every launch as a trial (the "
                                  "raw study) instead of one trial per configuration"),
) -> None:
    """Serve optuna-dashboard for the study, read-only: one trial per configuration with
    the figures `tuner report` shows (its best trials are the tool's Pareto front; the pick
    is named in the study's note and by the `pick` attribute), and each configuration's
    server logs and results as artifacts; --launches: every launch (gated trials greyed as
    infeasible). Ctrl-C stops it."""
    from optuna.artifacts import FileSystemArtifactStore

    from tuner.cli._common import console
    from tuner.study import DASHBOARD_STUDY_ID
    from tuner.study import dashboard_storage
    from tuner.study import open_study
    from tuner.study import redact_url

    _, loc = open_study(study, storage, artifacts)
    out = console()
    out.print(f"optuna-dashboard for study [bold]{study}[/] ({redact_url(loc.storage_url)}), "
              "read-only")
    out.print(f"open http://{host}:{port}/dashboard/studies/{DASHBOARD_STUDY_ID}   "
              "(Ctrl-C stops)")
    out.print("[dim]" + ("every launch: gated trials are greyed out as infeasible, failed "
                         "ones shown failed" if launches else
                         "one trial per configuration, as `tuner report` shows it; the best "
                         "trials are its Pareto front; --launches shows every launch") + "[/]")
    from optuna_dashboard import run_server

    try:
        run_server(dashboard_storage(loc, study, launches=launches), host=host, port=port,
                   artifact_store=FileSystemArtifactStore(str(loc.artifacts)))
    except KeyboardInterrupt:
        raise typer.Exit(0) from None
