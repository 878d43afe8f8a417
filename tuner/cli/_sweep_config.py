"""``tuner sweep --config night.yaml``: every sweep option in one file; the command line
overrides it.

The file is a mapping from option names (``trials``, ``ray-address`` or ``ray_address``...,
and ``space`` for the SPACE argument) to values. Each value must have the option's own type,
as YAML wrote it (:func:`type_problem`: ``trials: true`` is not 1, ``storage: 5`` not a file
named ``5``, ``break-lock: "yes"`` not true), then is checked as the option itself checks it
(and ``workload``, ``mix`` and ``regime`` by :meth:`~tuner.cli._args.WorkloadArgs.check`, the
sweep's own parse); a bad key or value is a
located error (file, line, key, what was expected), exit 2.
Relative paths are relative to the file's folder, so a night file works from anywhere. The
API key is refused (a night file is shared and committed; use ``TUNER_API_KEY``).
Implementation: the values become Click's ``default_map`` (an eager option's callback).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from tuner.cli._args import WorkloadArgs


#: Options whose values are file or folder paths (resolved against the file's folder).
PATH_KEYS = ("space_file", "storage", "artifacts", "workdir", "gsm8k", "sim_profiles")
#: Never taken from a file.
REFUSED = {"api_key": "an API key does not belong in a file that is shared; set "
                      "TUNER_API_KEY in the environment", "config": "a config file cannot "
                      "name another one"}
ALIASES = {"space": "space_file"}


def _resolve(key: str, value: Any, folder: Path) -> Any:
    if key not in PATH_KEYS or not isinstance(value, str) or not value:
        return value
    if value == "online" or "://" in value or Path(value).expanduser().is_absolute():
        return value
    return str(folder / value)


#: The YAML type each option's Python type needs, by the name an error gives it.
_YAML_TYPES: dict[type, tuple[str, tuple[type, ...]]] = {
    bool: ("true or false", (bool,)),
    int: ("an integer", (int,)),
    float: ("a number", (int, float)),
    str: ("a string", (str,)),
    Path: ("a path (a string)", (str,)),
}


def _kind(value: Any) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}.get(
        type(value), f"a {type(value).__name__}")


def type_problem(annotation: Any, value: Any) -> str | None:
    """Why ``value`` (as YAML read it) is not of the option's type ``annotation`` (``int``,
    ``list[str]``...), or None: no conversion is made for the reader (a boolean is no number,
    a number no text, the text "yes" no boolean)."""
    import typing

    args = typing.get_args(annotation)
    base = args[0] if typing.get_origin(annotation) is list and args else annotation
    if base not in _YAML_TYPES:
        return None
    name, types = _YAML_TYPES[base]
    if value is None:
        return f"expected {name}, got nothing (leave the key out for the default)"
    if isinstance(value, bool) and bool not in types:
        return f"expected {name}, got {str(value).lower()} ({_kind(value)})"
    if isinstance(value, types):
        return None
    hint = " (quote it to mean the text)" if types == (str,) else ""
    return f"expected {name}, got {value!r} ({_kind(value)}){hint}"


def read_config(ctx: typer.Context, params: list[Any], path: Path) -> dict[str, Any]:
    """The options in the file at ``path``, converted and checked like the command line's."""
    from tuner.errors import SpaceError
    from tuner.errors import UserError
    from tuner.space import read_yaml_file

    data, lines = read_yaml_file(path, "sweep config file")
    if not isinstance(data, dict):
        raise SpaceError(f"expected a mapping of sweep options, got {type(data).__name__}",
                         file=str(path))
    by_name = {p.name: p for p in params if p.name}
    known = sorted(["space", *(n.replace("_", "-") for n in by_name
                               if n not in REFUSED and n not in ALIASES.values())])
    out: dict[str, Any] = {}
    for raw, value in data.items():
        key = str(raw).replace("-", "_")
        key = ALIASES.get(key, key)

        def where(msg: str, raw: Any = raw, item: int | None = None) -> SpaceError:
            line = lines.get((raw, item)) if item is not None else None
            return SpaceError(msg, file=str(path), path=str(raw) + (
                f"[{item}]" if item is not None else ""), line=line or lines.get((raw,)))

        if key in REFUSED:
            raise where(REFUSED[key])
        if key not in by_name:
            raise where(f"unknown sweep option; expected one of {', '.join(known)}")
        param = by_name[key]
        listed = isinstance(value, list)
        if getattr(param, "multiple", False):           # a repeatable option: one or a list
            value = value if isinstance(value, list) else [value]
            if any(isinstance(v, (list, dict)) for v in value):
                raise where("expected a value or a list of values")
        elif isinstance(value, (list, dict)):
            raise where(f"expected one value, got a {type(value).__name__}")
        annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
        for i, v in enumerate(value if isinstance(value, list) else [value]):
            item = i if listed else None
            problem = type_problem(annotation, v)
            if problem is not None:
                raise where(problem, item=item)
            try:
                WorkloadArgs.check(key, v)
            except UserError as exc:
                raise where(str(exc), item=item) from None
        try:
            out[key] = param.process_value(ctx, _resolve(key, value, path.parent))
        except typer.BadParameter as exc:
            raise where(exc.format_message()) from None
    return out


def apply_config(ctx: typer.Context, param: typer.CallbackParam, value: Path | None
                 ) -> Path | None:
    """Eager callback of ``--config``: the file's options become the defaults."""
    if value is not None:
        ctx.default_map = {**(ctx.default_map or {}),
                           **read_config(ctx, ctx.command.params, Path(value))}
    return value
