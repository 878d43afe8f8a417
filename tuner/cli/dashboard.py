"""``tuner dashboard``: optuna-dashboard on a study's storage, with its artifacts.

Served read-only unless ``--allow-writes``: optuna-dashboard's API is unauthenticated, and
one ``DELETE /api/studies/1`` removes a study and its artifacts, so a thin WSGI wrapper
answers every request that is not a read (GET, HEAD) with 405. The per-request access log is
quiet (server errors still print).
"""

from __future__ import annotations

from typing import Any

import typer


#: Request methods that only read; every other one is a write and refused by default.
READS = frozenset({"GET", "HEAD"})

#: What optuna-dashboard's API lets a client change (its ``_app.py`` and
#: ``artifact/_backend.py`` routes): what ``--allow-writes`` enables.
WRITES = ("deleting, renaming and creating studies", "editing study and trial notes",
          "uploading and deleting artifacts", "telling trials' results and states",
          "setting trials' user attributes", "recording and removing preference feedback")


def read_only(app: Any) -> Any:
    """``app`` (a WSGI application) answering only reads: any other method gets
    ``405 Method Not Allowed`` with a JSON ``reason`` (what optuna-dashboard's page shows)
    and never reaches ``app``."""
    import json

    reason = json.dumps({"reason": "this dashboard is read-only (tuner dashboard); restart "
                         "it with --allow-writes to change the study"}).encode()

    def wrapped(environ: dict[str, Any], start_response: Any) -> Any:
        if str(environ.get("REQUEST_METHOD", "GET")).upper() in READS:
            return app(environ, start_response)
        start_response("405 Method Not Allowed", [
            ("Content-Type", "application/json"), ("Allow", ", ".join(sorted(READS))),
            ("Content-Length", str(len(reason)))])
        return [reason]

    return wrapped


def make_server(app: Any, host: str, port: int) -> Any:
    """A threaded wsgiref server for ``app`` on ``host:port`` whose access log is quiet
    (a request answered 5xx is still logged, and so are errors); a bind that fails is a
    one-line :class:`~tuner.errors.UserError`."""
    from socketserver import ThreadingMixIn
    from wsgiref.simple_server import WSGIRequestHandler
    from wsgiref.simple_server import WSGIServer
    from wsgiref.simple_server import make_server as wsgiref_server

    from tuner.errors import UserError

    class Server(ThreadingMixIn, WSGIServer):
        daemon_threads = True

    class QuietHandler(WSGIRequestHandler):
        def log_request(self, code: Any = "-", size: Any = "-") -> None:
            if str(code).startswith("5"):
                super().log_request(code, size)

    try:
        return wsgiref_server(host, port, app, server_class=Server,
                              handler_class=QuietHandler)
    except OSError as exc:
        raise UserError(f"--host {host} --port {port}: cannot listen there "
                        f"({exc.strerror or exc})") from None


def dashboard(
    study: str = typer.Argument(..., help="study name"),
    storage: str = typer.Option(None, help="Optuna storage URL or journal file (default "
                                "trials/<study>.db)"),
    artifacts: str = typer.Option(None, help="artifact folder (default: next to the study)"),
    host: str = typer.Option("127.0.0.1", help="address to bind (127.0.0.1: this machine "
                             "only)"),
    port: int = typer.Option(8080, min=1, max=65535, help="port"),
    allow_writes: bool = typer.Option(
        False, "--allow-writes", help="let the dashboard change the study: "
        + "; ".join(WRITES) + " (default: read-only, every write refused with 405)"),
) -> None:
    """Serve optuna-dashboard for the study: Pareto front (gated trials infeasible, grey),
    trial tables with the key figures, and each trial's server log and results as
    artifacts. Read-only unless --allow-writes. Ctrl-C stops it."""
    from optuna.artifacts import FileSystemArtifactStore
    from optuna_dashboard import wsgi

    from tuner.cli._common import console
    from tuner.study import open_study
    from tuner.study import redact_url

    st, loc = open_study(study, storage, artifacts)
    app = wsgi(loc.storage(), artifact_store=FileSystemArtifactStore(str(loc.artifacts)))
    server = make_server(app if allow_writes else read_only(app), host, port)
    out = console()
    out.print(f"optuna-dashboard for study [bold]{study}[/] ({redact_url(loc.storage_url)})")
    out.print(f"open http://{host}:{port}/dashboard/studies/{st._study_id}   (Ctrl-C stops)")
    if allow_writes:
        out.print("[yellow]writes allowed[/]: anyone who can reach this address can change "
                  "the study: " + "; ".join(WRITES))
    else:
        out.print("[dim]read-only: the dashboard's writes (deleting a study, notes, "
                  "artifact uploads...) are refused; --allow-writes enables them[/]")
    out.print("[dim]gated trials are stored in both constraint formats, so the dashboard's "
              "Pareto plot greys them out; failed trials are shown failed (the sampler's "
              "stand-ins for them are never stored)[/]")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        raise typer.Exit(0) from None
    finally:
        server.server_close()
