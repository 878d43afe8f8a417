"""``tuner doctor``: what the installed engine accepts, knob by knob, before a night is spent."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

import typer


if TYPE_CHECKING:
    from tuner.engines import Capabilities
    from tuner.engines import Support
    from tuner.space import SearchSpace


def doctor(
    space_file: Path = typer.Argument(None, metavar="[SPACE]",
                                      help="search-space file to check knob by knob"),
    engine: str = typer.Option("auto", help="auto (the installed SGLang, else the "
                               "simulator), sglang, or sim[:fork|stock|fork-unshared]"),
    engine_command: str = typer.Option(None, help="entry point to probe (default: the "
                                       "space's engine command, or 'sglang serve')"),
    json_: bool = typer.Option(False, "--json", help="print the findings as JSON"),
) -> None:
    """Detect the engine's version, flags and env vars; say per knob whether it can take effect.

    Exit code: 0 when the engine is found and nothing is unsupported; 1 when the engine is
    missing or a knob or fixed setting is unsupported; 2 for a bad space or option.
    """
    import json

    from tuner.cli._common import load_checked_space
    from tuner.cli._common import split_command
    from tuner.engines import inspect_engine
    from tuner.engines import knob_support

    eng, note = _choose(engine, engine_command)
    space = load_checked_space(space_file, eng) if space_file else None
    if space is not None:
        command = eng.entry_command(space)
    else:
        command = split_command(engine_command) or getattr(eng, "command", None) or [
            "sglang", "serve"]
    caps = inspect_engine(command)
    supports = knob_support(space, caps) if (space is not None and caps.found) else []
    if space is not None and caps.found:
        supports += _speculation(space, caps, eng.simulated)
    if json_:
        typer.echo(json.dumps({
            "command": command, "found": caps.found, "reason": caps.reason,
            "version": caps.version,
            "source_root": str(caps.source_root) if caps.source_root else None,
            "flags_known": len(caps.flags) if caps.flags is not None else None,
            "help_error": caps.help_error,
            "flags_source": caps.flags_source,
            "knobs": [{"knob": s.knob, "status": s.status, "detail": s.detail}
                      for s in supports],
        }, indent=2))
    else:
        _print(command, caps, space, supports, note)
    if not caps.found or any(s.status == "unsupported" for s in supports):
        raise typer.Exit(1)


def _speculation(space: SearchSpace, caps: Capabilities, simulated: bool) -> list[Support]:
    """Rows for the block-draft algorithms the space launches (does the engine serve
    them?) and for its draft models (can they be loaded here?)."""
    from tuner.engines import Support
    from tuner.engines import algorithm_support
    from tuner.engines import block_drafts_of
    from tuner.engines import draft_presence

    rows = [Support(f"(algorithm) {a.name}", *algorithm_support(caps, a.name, a.block_flag))
            for a in block_drafts_of(space)]
    for name, draft in space.spec.model.drafts.items():
        if simulated:
            rows.append(Support(f"(draft) {name}", "supported", f"{draft.path}: the "
                                "simulator needs no weights (its profile stands for them)"))
        else:
            rows.append(Support(f"(draft) {name}", *draft_presence(draft.path)))
    return rows


def _choose(engine: str, engine_command: str | None) -> tuple[Any, str | None]:
    """The engine to inspect; ``auto`` is what is installed (doctor needs no GPU)."""
    import shutil

    from tuner.cli._common import split_command
    from tuner.engines import make_engine

    note = None
    if engine == "auto":
        given = split_command(engine_command)
        engine = "sglang" if (given or shutil.which("sglang")) else "sim"
        if engine == "sim":
            note = "no sglang command here: checking the built-in simulator (--engine sim)"
    return make_engine(engine, command=split_command(engine_command)), note


def _print(command: list[str], caps: Capabilities, space: SearchSpace | None,
           supports: list[Support],
           note: str | None) -> None:
    from rich.markup import escape
    from rich.table import Table

    from tuner.cli._common import console

    out = console()
    if note:
        out.print(f"[yellow]{note}[/]")
    out.print(f"engine command  {escape(' '.join(command))}")
    if not caps.found:
        out.print(f"[red]not found[/red]: {escape(str(caps.reason))}")
        out.print(escape("SGLang is not installed here. On a GPU machine: pip install "
                         "'moe-tuner[sglang]'. Without a GPU, tune against the simulator: "
                         "--engine sim"))
        return
    out.print(f"version         {caps.version or 'unknown'}")
    out.print(f"source          {caps.source_root or 'unknown'}"
              + ("" if caps.source_root else " (env-var support is unknown, not refused: "
                 "the entry point imports no engine package this tool knows)"))
    if caps.flags is not None and caps.help_error is None:
        out.print(f"flags           {len(caps.flags)} accepted (from --help)")
    elif caps.flags is not None:
        out.print(f"flags           {len(caps.flags)} from {caps.flags_source}; --help could "
                  f"not run: {escape(str(caps.help_error))}")
    else:
        out.print(f"flags           unknown: {escape(str(caps.help_error))}")
    if space is not None and space.spec.engine.version != caps.version:
        out.print(f"[yellow]note[/yellow] the space was written for "
                  f"{space.spec.engine.name} {space.spec.engine.version}")
    if supports and space is not None:
        table = Table(title=f"knobs of {space.name}")
        for col in ("knob", "status", "detail"):
            table.add_column(col)
        colour = {"supported": "green", "unsupported": "red", "unknown": "yellow"}
        for s in supports:
            table.add_row(s.knob, f"[{colour[s.status]}]{s.status}[/]", escape(s.detail))
        out.print(table)
