"""``tuner verify``: check a running server against an exported profile."""

from __future__ import annotations

from pathlib import Path

import typer

from tuner.cli._common import header_value


def check_inputs(url: str, gsm8k: str | None) -> None:
    """``--url`` an http(s) URL with a host and a valid port, ``--gsm8k`` a readable GSM8K
    folder: refused in one line, not reported as a server that fails its checks."""
    from urllib.parse import urlsplit

    from tuner.errors import UserError

    try:
        parts = urlsplit(url)
        _ = parts.port                                 # raises when out of range
    except ValueError as exc:
        raise UserError(f"--url {url!r}: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UserError(f"--url {url!r}: expected http://HOST:PORT (the running server)")
    if gsm8k is not None and gsm8k != "online":
        from tuner.workloads import gsm8k as data

        for split in ("test", "train"):
            data.load_split(gsm8k, split)


def verify(
    profile: Path = typer.Argument(..., help="profile.yaml written by tuner export"),
    url: str = typer.Option("http://127.0.0.1:30000", help="the running server"),
    api_key: str = typer.Option(None, envvar="TUNER_API_KEY", callback=header_value,
                                help="the server's --api-key "
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

    check_inputs(url, gsm8k if requests > 0 else None)
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
