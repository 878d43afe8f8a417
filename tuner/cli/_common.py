"""Helpers shared by subcommands (kept light: imported on every ``tuner`` start)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from tuner.errors import UserError


if TYPE_CHECKING:
    from rich.console import Console

    from tuner.engines import Engine
    from tuner.space import SearchSpace


def console(stderr: bool = False) -> Console:
    """A rich console; 160 columns when writing to a pipe or file (logs stay readable)."""
    import os
    import sys

    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    width = None if stream.isatty() or "COLUMNS" in os.environ else 160
    return Console(stderr=stderr, highlight=False, soft_wrap=True, width=width)


def load_checked_space(path: Path | str, engine: Engine | None = None) -> SearchSpace:
    """Load a space and check it against the engine's flags (located errors, exit 2)."""
    from tuner.engines import make_engine
    from tuner.engines import space_engines
    from tuner.space import load_space

    space = load_space(path)
    known = space_engines()
    if space.spec.engine.name not in known:
        raise space.error(("engine", "name"), f"unknown engine {space.spec.engine.name!r}; "
                                              f"expected one of {', '.join(known)}")
    (engine or make_engine(space.spec.engine.name)).validate_space(space)
    return space


def parse_sets(space: SearchSpace, items: list[str] | None) -> dict[str, Any]:
    """``["a=1", "b=x"]`` -> typed knob values (exit 2 on unknown knobs or bad values)."""
    out: dict[str, Any] = {}
    for item in items or []:
        name, sep, raw = item.partition("=")
        if not sep or not name.strip():
            raise UserError(f"--set {item!r}: expected KNOB=VALUE")
        name = name.strip()
        out[name] = space.coerce(name, raw)
    return out


def split_command(text: str | None) -> list[str] | None:
    """An engine command given as one option value, split like a shell would (never run
    through a shell)."""
    import shlex

    if text is None:
        return None
    try:
        parts = shlex.split(text)
    except ValueError as exc:
        raise UserError(f"--engine-command {text!r}: {exc}") from None
    if not parts:
        raise UserError("--engine-command is empty")
    return parts


@contextlib.contextmanager
def writing(option: str, path: Path | str) -> Iterator[None]:
    """Writes to a path the user named: a folder where a file goes, an unwritable place or
    a full disk is one line naming the option, exit 2, not a traceback."""
    try:
        yield
    except OSError as exc:
        raise UserError(f"{option} {path}: cannot write there "
                        f"({exc.strerror or exc.__class__.__name__})") from None


def finite(value: float | None) -> float | None:
    """An option callback: a number, not NaN (Click's ranges let NaN through)."""
    import math

    import typer

    if value is not None and not math.isfinite(value):
        raise typer.BadParameter(f"{value} is not a finite number")
    return value


def address(value: str | None) -> str | None:
    """``--host``: an address or host name; empty (every interface, by accident), spaces or
    control characters are refused."""
    import typer

    if value is not None and (not value.strip() or not value.isprintable() or " " in value):
        raise typer.BadParameter(f"{value!r} is not an address or host name (0.0.0.0 binds "
                                 "every interface)")
    return value


def header_value(value: str | None) -> str | None:
    """``--api-key``: sent as an HTTP header, so printable and not empty (a newline once
    left every server unready until the start-up timeout)."""
    import typer

    if value is not None and (not value.strip() or not value.isprintable()):
        raise typer.BadParameter("empty, or holds control characters (an HTTP header "
                                 "cannot carry them)")
    return value


def check_target(option: str, path: Path) -> None:
    """A file the command writes at its end, checked before the work: not a folder, and
    under a folder (its nearest existing parent is not a file)."""
    if path.is_dir():
        raise UserError(f"{option} {path}: a folder; give a file path")
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise UserError(f"{option} {path}: cannot write there ({parent} is not a folder)")


#: GSM8K's test split: the most questions a GSM8K workload can measure
GSM8K_QUESTIONS = 1319


def workload_with(space: SearchSpace, *, kind: str | None = None, mix: str | None = None,
                  regimes: list[str] | None = None, **updates: Any) -> Any:
    """The space's workload with the command line's changes: ``kind`` (``--workload``),
    ``mix`` (``--mix code=0.6,chat=0.4``, which implies the ``mix`` kind), ``regimes``
    (``--regime``, replacing the space's) and plain fields (``None`` leaves the space's). A
    bad value is one line, exit 2."""
    from pydantic import ValidationError

    from tuner.cli._args import WorkloadArgs
    from tuner.space import Workload

    if kind is not None:
        WorkloadArgs.check("workload", kind)
    if mix is not None and kind not in (None, "mix"):      # once the mix ran, in silence
        raise UserError(f"--mix {mix} and --workload {kind} conflict: --mix tunes for a mix "
                        "of classes, --workload for one; give one of them")
    changes = {k: v for k, v in updates.items() if v is not None}
    if kind is not None:
        changes["kind"] = kind
        if kind != "mix":
            changes["mix"] = None
    if mix is not None:
        changes.update(kind="mix", mix=parse_mix(mix))
    elif changes.get("kind") == "mix" and not space.spec.workload.mix:
        raise UserError("--workload mix needs --mix, e.g. --mix code=0.6,chat=0.4")
    if regimes:
        changes["regimes"] = [parse_regime(r) for r in regimes]
    try:
        wl = Workload.model_validate({**space.spec.workload.model_dump(), **changes})
    except ValidationError as exc:
        err = exc.errors()[0]
        where = "".join(f"[{x}]" if isinstance(x, int) else f".{x}" for x in err["loc"])
        raise UserError(f"workload{where}: {err['msg'].removeprefix('Value error, ')}"
                        ) from None
    if wl.kind == "gsm8k" and wl.questions > GSM8K_QUESTIONS:   # never clamped in silence
        raise UserError(f"--questions {wl.questions}: GSM8K's test split has "
                        f"{GSM8K_QUESTIONS:,} questions")
    return wl


#: what ``--regime NAME:USERS:...`` may set after the concurrency
REGIME_KEYS = ("requests", "p95_tpot_ms", "p95_ttft_s")


def parse_regime(text: str) -> dict[str, Any]:
    """``sixteen:16:p95_tpot_ms=120,requests=64`` -> a regime's fields (checked by the
    workload's schema afterwards)."""
    name, _, rest = text.partition(":")
    users, colon, extra = rest.partition(":")
    usage = (f"--regime {text!r}: expected NAME:USERS[:KEY=VALUE,...] with keys "
             f"{', '.join(REGIME_KEYS)} (e.g. sixteen:16:p95_tpot_ms=120)")
    items = [x.strip() for x in extra.split(",")] if colon else []
    if "" in items:              # ``x:4:`` or ``x:4:a=1,,b=2``: a part left empty
        raise UserError(f"{usage}; a part after USERS is empty")
    try:
        out: dict[str, Any] = {"name": name.strip(), "concurrency": int(users)}
        sla: dict[str, float] = {}
        for item in items:
            key, sep, raw = item.partition("=")
            if not sep or key.strip() not in REGIME_KEYS:
                raise UserError(usage)
            if key.strip() == "requests":
                out["requests"] = int(raw)
            else:
                sla[key.strip()] = float(raw)
    except ValueError:
        raise UserError(usage) from None
    if sla:
        out["sla"] = sla
    return out


def parse_mix(text: str) -> dict[str, float]:
    """``code=0.6,chat=0.4`` -> shares (classes math, code, chat; numbers >= 0)."""
    out: dict[str, float] = {}
    for item in text.split(","):
        name, sep, raw = item.strip().partition("=")
        if not sep:
            name, sep, raw = item.strip().partition(":")
        name = name.strip()
        if not sep or name not in ("math", "code", "chat"):
            raise UserError(f"--mix {text!r}: expected CLASS=SHARE,... with classes math, "
                            "code, chat (e.g. code=0.6,chat=0.4)")
        try:
            share = float(raw)
        except ValueError:
            raise UserError(f"--mix {text!r}: {raw.strip()!r} is not a number") from None
        if not 0 <= share < float("inf") or name in out:
            raise UserError(f"--mix {text!r}: each class once, with a share >= 0")
        out[name] = share
    if sum(out.values()) <= 0:
        raise UserError(f"--mix {text!r}: the shares add up to 0")
    from tuner.space import shares_problem

    problem = shares_problem(out)
    if problem is not None:
        raise UserError(f"--mix {text!r}: {problem}")
    return out
