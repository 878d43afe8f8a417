"""Dump the installed SGLang's server flags from its own argument parser, as JSON.

    python benchmarks/real_sglang/dump_flags.py > tuner/engines/sglang_flags/0.5.23.json

Builds the parser the way ``sglang serve`` does (``ServerArgs.add_cli_args``) and writes
one record per option: every spelling, whether it takes no value, whether it takes a list,
its choices (as SGLang compares them: ``type=str.upper`` and friends are recorded as
``case``), its value type (``int`` or ``float`` where argparse converts with one), and
whether it is a deprecated alias. Needs only SGLang's parser importable
(no GPU); used for every supported version (``docs/sglang-facts.md``).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import sys


def _case(action: argparse.Action) -> str | None:
    kind = getattr(action.type, "__name__", None) or ""
    if kind in ("upper", "lower"):
        return kind
    return None


def _type(action: argparse.Action) -> str | None:
    """``int`` or ``float`` when argparse converts the value with that type (what the
    tuner checks a space's values against); None for strings and SGLang's own parsers
    (``human_readable_int`` takes ``128k``)."""
    return {int: "int", float: "float"}.get(action.type)  # type: ignore[call-overload]


def dump() -> dict:
    from sglang.srt.server_args import ServerArgs

    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    flags = []
    for action in parser._actions:
        if not action.option_strings or isinstance(action, argparse._HelpAction):
            continue
        flags.append({
            "names": sorted(action.option_strings),
            "dest": action.dest,
            "store_true": action.nargs == 0,
            "nargs": action.nargs not in (None, 0, "?"),
            "choices": (None if action.choices is None
                        else sorted(str(c) for c in action.choices)),
            "case": _case(action),
            "type": _type(action),
            "deprecated": "Deprecated" in type(action).__name__,
        })
    flags.sort(key=lambda f: f["names"][0])
    return {"engine": "sglang", "version": importlib.metadata.version("sglang"),
            "source": "ServerArgs.add_cli_args (sglang/srt/server_args.py)", "flags": flags}


def write(table: dict, out) -> None:  # type: ignore[no-untyped-def]
    """One flag per line: a new version's table diffs line by line against the last."""
    head = {k: v for k, v in table.items() if k != "flags"}
    out.write(json.dumps(head)[:-1] + ', "flags": [\n')
    out.write(",\n".join(json.dumps(f) for f in table["flags"]))
    out.write("\n]}\n")


if __name__ == "__main__":
    write(dump(), sys.stdout)
