"""``tuner verify``: check a running server against an exported profile."""

from __future__ import annotations

from pathlib import Path

import typer


def verify(
    profile: Path = typer.Argument(..., help="profile.yaml written by tuner export"),
    url: str = typer.Option("http://127.0.0.1:30000", help="the running server"),
    api_key: str = typer.Option(None, envvar="TUNER_API_KEY", help="the server's --api-key "
                                "(or TUNER_API_KEY)"),
    log: Path = typer.Option(None, help="the server's log file: also check its log lines"),
    requests: int = typer.Option(8, min=0, help="requests of the verify workload (0: "
                                 "settings only)"),
    gsm8k: str = typer.Option(None, envvar="TUNER_GSM8K", help="GSM8K folder for a "
                              "GSM8K-shaped verify workload (else a synthetic one)"),
) -> None:
    """PASS/FAIL/UNVERIFIED per check with reasons; exit code 0 only when every check
    passes. A knob only the server log can prove (the FP8 LM head) is UNVERIFIED without
    --log: a server that silently ignores it would otherwise pass."""
    import yaml

    from tuner.cli._common import console
    from tuner.engines import make_engine
    from tuner.errors import UserError
    from tuner.export import verify as run_verify

    try:
        data = yaml.safe_load(profile.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise UserError(f"{profile}: cannot read the profile ({exc.__class__.__name__})"
                        ) from None
    if not isinstance(data, dict) or "expect" not in data:
        raise UserError(f"{profile}: not a tuner profile (no 'expect' section)")
    log_text = None
    if log is not None:
        try:
            log_text = log.read_text(errors="replace")
        except OSError as exc:
            raise UserError(f"--log {log}: {exc.strerror}") from None
    measured_with = str((data.get("engine") or {}).get("measured_with") or "sglang")
    checks = run_verify(data, url, make_engine(measured_with).protocol(), api_key=api_key,
                        log_text=log_text, requests=requests, gsm8k=gsm8k)
    from rich.table import Table

    t = Table(title=f"verify {url} against {profile}")
    for col in ("check", "result", "expected", "observed"):
        t.add_column(col, overflow="fold")
    for c in checks:
        mark = ("[yellow]UNVERIFIED[/]" if c.unverified else
                {True: "[green]PASS[/]", False: "[red]FAIL[/]", None: "[dim]info[/]"}[c.passed])
        t.add_row(c.name, mark, c.expected, c.observed)
    out = console()
    out.print(t)
    passed = sum(c.passed is True for c in checks)
    unverified = [c.name for c in checks if c.unverified]
    shown = [c.name for c in checks if c.passed is None and not c.unverified]
    out.print(f"compared {passed + sum(c.passed is False for c in checks)}, passed {passed}; "
              f"not compared: {', '.join(unverified + shown) or 'nothing'}", highlight=False)
    failed = [c.name for c in checks if c.passed is False]
    if failed:
        out.print(f"[red bold]FAIL[/]: {', '.join(failed)}")
        raise typer.Exit(1)
    if unverified:
        out.print(f"[yellow bold]UNVERIFIED[/]: {', '.join(unverified)} (pass --log FILE, "
                  "the server's log)")
        raise typer.Exit(1)
    out.print("[green bold]PASS[/]: the server is the profile")
