"""YAML loading that remembers where each key was written and refuses duplicate keys.

PyYAML silently keeps the last of two equal keys; in a search space that hides a duplicate
knob, so here it is an error with the line of the second occurrence.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tuner.errors import SpaceError


KeyPath = tuple[str | int, ...]
#: Deeper than any space file needs; deeper input is hostile or broken.
MAX_DEPTH = 32


def _screen(text: str, file: str) -> None:
    """One streaming pass over the parser's events, before anything is built: anchors and
    aliases are refused (a few KB of nested aliases, a "billion laughs", would expand to
    gigabytes), and so is nesting deeper than :data:`MAX_DEPTH` (the composer recurses)."""
    depth = 0
    for event in yaml.parse(text, Loader=_LOADER):
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            raise SpaceError("anchors and aliases (&name / *name) are not supported in a "
                             "space file; write the values out", file=file,
                             line=event.start_mark.line + 1)
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise SpaceError(f"nested deeper than {MAX_DEPTH} levels", file=file,
                                 line=event.start_mark.line + 1)
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def _walk(node: yaml.Node, path: KeyPath, lines: dict[KeyPath, int], file: str) -> None:
    if len(path) > MAX_DEPTH:
        raise SpaceError(f"nested deeper than {MAX_DEPTH} levels", file=file,
                         path=format_path(path[:MAX_DEPTH]), line=node.start_mark.line + 1)
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            key = str(key_node.value)
            line = key_node.start_mark.line + 1
            if key in seen:
                raise SpaceError(
                    f"duplicate key {key!r} (first written on line {seen[key]})",
                    file=file,
                    path=format_path(path),
                    line=line,
                )
            seen[key] = line
            lines[(*path, key)] = line
            _walk(value_node, (*path, key), lines, file)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _walk(item, (*path, i), lines, file)


#: libyaml's parser where PyYAML was built with it (5x faster on a space file; same nodes
#: and line marks), else PyYAML's own.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(text: str, file: str) -> tuple[Any, dict[KeyPath, int]]:
    """Parse ``text``; return the data and a map from key path to 1-based line number."""
    try:
        _screen(text, file)
        node = yaml.compose(text, Loader=_LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SpaceError(f"not valid YAML: {problem}", file=file, line=line) from None
    if node is None:
        raise SpaceError("the file is empty; expected a mapping", file=file)
    lines: dict[KeyPath, int] = {}
    _walk(node, (), lines, file)
    loader = yaml.SafeLoader("")
    try:
        data = loader.construct_document(node)
    except yaml.YAMLError as exc:  # e.g. an unhashable key
        raise SpaceError(f"not valid YAML: {exc}".splitlines()[0], file=file) from None
    finally:
        loader.dispose()
    return data, lines


#: A space or sweep file is a few KB; anything this large is a mistake.
MAX_BYTES = 1024 * 1024


def read_small_text(path: str | Path, what: str = "space file") -> str:
    """The text of the file at ``path``, refusing what is not a small regular UTF-8 file (a
    FIFO or ``/dev/zero`` would block or never end); ``what`` names the file in messages."""
    p = Path(path)
    try:
        if not p.exists():
            raise SpaceError("no such file", file=str(p))
        if not p.is_file():
            raise SpaceError("not a regular file", file=str(p))
        if p.stat().st_size > MAX_BYTES:
            raise SpaceError(f"larger than {MAX_BYTES // 1024} KiB: not a {what}",
                             file=str(p))
        return p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:   # symlink loops, permissions, encodings
        raise SpaceError(f"cannot read: {exc.__class__.__name__}", file=str(p)) from None


def read_yaml_file(path: str | Path, what: str) -> tuple[Any, dict[KeyPath, int]]:
    """Read (:func:`read_small_text`) and parse (:func:`load_yaml`) the file at ``path``."""
    return load_yaml(read_small_text(path, what), str(path))


def format_path(path: KeyPath) -> str:
    """``("knobs", "x", "choices", 0)`` -> ``knobs.x.choices[0]``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def line_of(lines: dict[KeyPath, int], path: KeyPath) -> int | None:
    """The line of ``path`` or of its nearest written ancestor."""
    while True:
        if path in lines:
            return lines[path]
        if not path:
            return None
        path = path[:-1]
