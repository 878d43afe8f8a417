"""``--config FILE.yaml`` as SGLang 0.5.23 merges it (srt/utils/server_args_config_parser.py).

Rules: exactly one ``--config``, followed by a path ending in .yaml/.yml whose root is a
mapping; each key is a flag's long name (``mem-fraction-static``; an underscore spelling
only matches a flag that has one, so ``mem_fraction_static`` is rejected by argparse);
a bool for a store-true flag adds the flag when true, any other bool becomes
``--key true|false``; a list repeats its values after the flag; a mapping becomes JSON; the
config's arguments go *before* the command line's, so the command line wins.
``--config=f.yaml`` as one token is not recognised and silently ignored, as in SGLang.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import yaml


def _keys(action: argparse.Action) -> set[str]:
    return {action.dest} | {o[2:].replace("-", "_") for o in action.option_strings
                            if o.startswith("--")}


def merge(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    idx = [i for i, a in enumerate(argv) if a == "--config"]
    if not idx:
        return argv
    if len(idx) > 1:
        raise ValueError("Multiple config files specified! Only one allowed.")
    i = idx[0]
    if i == len(argv) - 1:
        raise ValueError("No config file specified after --config flag!")
    path = Path(argv[i + 1])
    if path.suffix.lower() not in (".yaml", ".yml"):
        raise ValueError(f"Config file must be YAML format, got: {path.suffix}")
    if not path.exists():
        raise ValueError(f"Config file not found: {path}")
    data = yaml.safe_load(path.read_text()) or {}
    if not isinstance(data, dict):
        raise ValueError("Config file must contain a dictionary at root level")
    store_true = {k for a in parser._actions if isinstance(a, argparse._StoreTrueAction)
                  for k in _keys(a)}
    kinds = (argparse._StoreTrueAction, argparse._StoreAction)
    supported = [a for a in parser._actions if isinstance(a, kinds) or a.nargs is None]
    supported_keys = {k for a in supported for k in _keys(a)}
    unsupported = {k: a for a in parser._actions
                   if a.option_strings and a not in supported
                   and not {"--config", "--help", "-h"} & set(a.option_strings)
                   for k in _keys(a) if k not in supported_keys}
    out: list[str] = []
    for key, value in data.items():
        norm = str(key).replace("-", "_")
        if norm in unsupported:
            raise ValueError(f"Unsupported config option '{norm}' with action "
                             f"'{unsupported[norm].__class__.__name__}'")
        if isinstance(value, bool):
            if norm in store_true:
                if value:
                    out.append(f"--{key}")
            else:
                out += [f"--{key}", str(value).lower()]
        elif isinstance(value, list):
            if value:
                out += [f"--{key}", *(str(v) for v in value)]
        elif isinstance(value, dict):
            out += [f"--{key}", json.dumps(value)]
        else:
            out += [f"--{key}", str(value)]
    return out + argv[:i] + argv[i + 2:]


def merge_or_exit(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    try:
        return merge(parser, argv)
    except (ValueError, yaml.YAMLError) as exc:
        parser.exit(1, f"ValueError: {exc}\n")
