"""``tuner dashboard``: optuna-dashboard on a study's storage, with its artifacts.

Served read-only unless ``--allow-writes``: optuna-dashboard's API is unauthenticated, and
one ``DELETE /api/studies/1`` removes a study and its artifacts, so a thin WSGI wrapper
answers every request that is not a read (GET, HEAD) with 405. The per-request access log is
quiet (server errors still print).
"""

from __future__ import annotations

from typing import Any

import typer

from tuner.cli._common import address


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
    host: str = typer.Option("127.0.0.1", callback=address, help="address to bind "
                             "(127.0.0.1: this machine only)"),
    port: int = typer.Option(8080, min=1, max=65535, help="port"),
    launches: bool = typer.Option(False, "--launches", help="every launch as a trial (the "
                                  "raw study) instead of one trial per configuration"),
    allow_writes: bool = typer.Option(
        False, "--allow-writes", help="serve the raw study (as --launches) and let the "
        "dashboard change it: " + "; ".join(WRITES) + " (default: read-only, every write "
        "refused with 405)"),
) -> None:
    """Serve optuna-dashboard for the study, read-only: one trial per configuration with
    the figures `tuner report` shows (its best trials are the tool's Pareto front; the pick
    is named in the study's note and by the `pick` attribute), and each configuration's
    server logs and results as artifacts; --launches: every launch (gated trials greyed as
    infeasible). Ctrl-C stops it."""
    from optuna.artifacts import FileSystemArtifactStore
    from optuna_dashboard import wsgi

    from tuner.cli._common import console
    from tuner.study import open_study
    from tuner.study.storages import DASHBOARD_STUDY_ID
    from tuner.study.storages import dashboard_storage
    from tuner.study.storages import redact_url

    st = open_study(study, storage, artifacts)
    loc = st.location
    store = FileSystemArtifactStore(str(loc.artifacts))
    if allow_writes:              # writes go to the study itself, never to a view of it
        app, sid = wsgi(loc.storage(), artifact_store=store), st.study_id
    else:
        view = dashboard_storage(loc, study, launches=launches)
        app = read_only(wsgi(view, artifact_store=store))
        sid = DASHBOARD_STUDY_ID
    server = make_server(app, host, port)
    out = console()
    out.print(f"optuna-dashboard for study [bold]{study}[/] ({redact_url(loc.storage_url)})")
    out.print(f"open http://{host}:{port}/dashboard/studies/{sid}   (Ctrl-C stops)")
    if not allow_writes:
        for i, name in view.regime_studies():     # one study per load regime
            out.print(f"  {name}: http://{host}:{port}/dashboard/studies/{i}  (goodput "
                      "and accuracy; the regime's front)", highlight=False)
    if allow_writes:
        out.print("[yellow]writes allowed[/]: anyone who can reach this address can change "
                  "the study: " + "; ".join(WRITES) + "; every launch is shown")
    else:
        out.print("[dim]read-only: the dashboard's writes (deleting a study, notes, "
                  "artifact uploads...) are refused; --allow-writes enables them[/]")
        out.print("[dim]" + ("every launch: gated trials are greyed out as infeasible, "
                             "failed ones shown failed" if launches else
                             "one trial per configuration, as `tuner report` shows it; the "
                             "best trials are its Pareto front; --launches shows every "
                             "launch") + "[/]")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        raise typer.Exit(0) from None
    finally:
        server.server_close()
