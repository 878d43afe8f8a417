"""``tuner space validate|show``: check a search-space file, or list its knobs and size."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer


if TYPE_CHECKING:
    from tuner.space import SearchSpace


app = typer.Typer(help="Check or describe a search-space file.", no_args_is_help=True)


@app.command("validate")
def validate(file: Path = typer.Argument(..., help="search-space YAML file")) -> None:
    """Validate FILE: schema, conditions, domains, machine limits and engine flags.

    Exit code 0 when valid; 2 with one located error line (file:line: key: problem).
    """
    from tuner.cli._common import load_checked_space

    space = load_checked_space(file)
    typer.echo(f"{file}: ok ({len(space.knobs)} knobs, space {space.name!r})")


@app.command("show")
def show(file: Path = typer.Argument(..., help="search-space YAML file")) -> None:
    """Show FILE's model, machine, knobs with domains and conditions, and the space size."""

    from tuner.cli._common import console
    from tuner.cli._common import load_checked_space
    from tuner.engines import make_engine
    from tuner.errors import ConfigError

    engine = make_engine("sglang")
    space = load_checked_space(file, engine)
    spec = space.spec
    out = console()
    out.print(f"[bold]{spec.name}[/bold]  {spec.description or ''}".rstrip())
    out.print(f"model    {spec.model.id} ({spec.model.path})")
    m = spec.machine
    extras = ", ".join(x for x in (
        f"sm {m.compute_capability}" if m.compute_capability else "",
        f"{m.memory_gib:g} GiB" if m.memory_gib else "",
        f"{m.bandwidth_gbs:g} GB/s" if m.bandwidth_gbs else "") if x)
    out.print(f"machine  {m.id}: {m.gpus} x {m.gpu} ({extras})")
    cmd = " ".join(spec.engine.command)
    out.print(f"engine   {spec.engine.name} {spec.engine.version}: {cmd}")
    for flag, lim in spec.limits.items():
        bound = " ".join(x for x in (f"min {lim.min:g}" if lim.min is not None else "",
                                     f"max {lim.max:g}" if lim.max is not None else "") if x)
        out.print(f"limit    {flag} {bound}" + (f"  ({lim.reason})" if lim.reason else ""))
    out.print(_knob_table(space, out.width), highlight=False, markup=False)
    try:
        configs = list(space.iter_configs())
    except ValueError:
        out.print(f"size     continuous (raw product of discrete knobs {space.raw_size():g})")
        return
    canonical: set[str] = set()
    refused = 0
    for c in configs:
        try:
            canonical.add(engine.canonicalize(space, c).hash())
        except ConfigError:
            refused += 1
    out.print(f"size     {len(configs):,} configurations with conditions applied; "
              f"{len(canonical):,} valid and distinct after SGLang's resolution rules, "
              f"{refused:,} refused (e.g. a draft tree SGLang cannot build) "
              f"(raw product {space.raw_size():,.0f})")


def _knob_table(space: SearchSpace, width: int) -> str:
    """One block per knob: its name, domain and baseline, then when it is active, what it
    sends and how its effect is proven, wrapped by word at ``width`` (a table of six
    columns cut words at 80 columns)."""
    import textwrap

    base = space.complete({})
    blocks: list[str] = ["knobs"]
    for name in space.order:
        k = space.knob(name)
        when = ", ".join(f"{p}={v}" for p, v in k.when.items())
        if k.flag:
            maps = k.flag
        elif k.env:
            maps = f"${k.env}"
        else:
            names = {n: None for c in (k.values or {}).values()
                     for n in [*c.flags, *(f"${e}" for e in c.env)]}
            maps = " ".join(names)
        evs = [k.evidence] if k.evidence else list((k.evidence_by_value or {}).values())
        kinds = sorted({kind for e in evs for kind, present in (
            ("server_info", bool(e.server_info)), ("log", bool(e.log or e.log_absent)),
            ("none observable", bool(e.none))) if present})
        head = f"{name}  {space.describe_domain(name)}  (baseline {base.get(name, '-')})"
        detail = "; ".join(x for x in (f"when {when}" if when else "",
                                       f"sends {maps}" if maps else "",
                                       f"proven by {', '.join(kinds)}" if kinds else "")
                           if x)
        blocks += [textwrap.fill(head, width, initial_indent="  ", subsequent_indent="    ",
                                 break_long_words=False, break_on_hyphens=False),
                   textwrap.fill(detail, width, initial_indent="      ",
                                 subsequent_indent="      ", break_long_words=False,
                                 break_on_hyphens=False)]
    return "\n".join(blocks)
