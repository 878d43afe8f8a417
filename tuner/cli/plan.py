"""``tuner plan``: the canonical configuration and the exact launch it becomes."""

from __future__ import annotations

from pathlib import Path

import typer

from tuner.cli._common import address


def plan(
    file: Path = typer.Argument(..., help="search-space YAML file"),
    set_: list[str] = typer.Option(None, "--set", metavar="KNOB=VALUE",
                                   help="repeatable; other knobs keep their baseline value"),
    engine: str = typer.Option("sglang", help="sglang, or sim[:fork|stock|fork-unshared]"),
    engine_command: str = typer.Option(None, help="entry point before the flags, e.g. "
                                       "'python -m sglang.launch_server' (default: the "
                                       "space's, normally 'sglang serve')"),
    host: str = typer.Option("127.0.0.1", callback=address,
                             help="address the server binds"),
    port: int = typer.Option(30000, min=1, max=65535, help="port the server listens on"),
    json_: bool = typer.Option(False, "--json", help="print the LaunchPlan as JSON"),
) -> None:
    """Print the canonical configuration, argv and env exactly as they would be launched."""
    import shlex

    from tuner.cli._common import console
    from tuner.cli._common import load_checked_space
    from tuner.cli._common import parse_sets
    from tuner.cli._common import split_command
    from tuner.engines import make_engine

    eng = make_engine(engine, command=split_command(engine_command))
    space = load_checked_space(file, eng)
    assigned = parse_sets(space, set_)
    completed = space.complete(assigned)
    config = eng.canonicalize(space, completed)
    lp = eng.plan(space, config, host=host, port=port)
    if json_:
        typer.echo(lp.model_dump_json(indent=2))
        return
    out = console()
    changes = []
    for name, value in assigned.items():
        if name not in completed:
            changes.append(f"{name}={value} ignored: inactive in this configuration")
        elif name not in config:
            changes.append(f"{name} dropped: it has no effect here (SGLang ignores it)")
        elif config[name] != value:
            changes.append(f"{name}: {value} -> {config[name]} (SGLang's resolution)")
    for name in completed:
        if name not in config and name not in assigned:
            changes.append(f"{name} dropped: it has no effect here (SGLang ignores it)")
    out.print(f"[bold]config[/bold] {config.describe()}   [dim]hash {lp.config_hash}[/dim]")
    for line in changes + lp.notes:
        out.print(f"  [yellow]note[/yellow] {line}")
    out.print("[bold]env[/bold]")
    for k, v in lp.env.items():
        out.print(f"  {k}={shlex.quote(v)}")
    out.print("[bold]argv[/bold]")
    out.print("  " + shlex.join(lp.argv))
    out.print("[bold]evidence expected[/bold]")
    for ev in lp.evidence:
        parts = [f"server_info {f}={v!r}" for f, v in ev.server_info.items()]
        parts += [f"server_info {f}={v!r} where the server shows it"
                  for f, v in ev.server_info_if_present.items()]
        parts += [f"log /{p}/" for p in ev.log] + [f"no log /{p}/" for p in ev.log_absent]
        if ev.none:
            parts.append(f"unobservable: {ev.none}")
        out.print(f"  {ev.knob}={ev.value}: " + ("; ".join(parts) or "nothing to check"),
                  highlight=False)
