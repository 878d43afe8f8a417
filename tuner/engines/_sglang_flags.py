"""SGLang server flags by version, as each version's own argument parser defines them.

The tables in ``tuner/engines/sglang_flags/<version>.json`` are generated, not written:
``benchmarks/real_sglang/dump_flags.py`` builds the parser ``sglang serve`` builds
(``ServerArgs.add_cli_args`` in ``sglang/srt/server_args.py``) and records every option with
its spellings, choices and arity. 0.5.23's came from the wheel on a CPU machine, 0.5.17's
from the H200 (docs/real-sglang-h200.md, docs/sglang-facts.md). They are used where no
engine is installed (space validation, export); with an engine installed, ``tuner doctor``
and ``--check-engine`` read its own ``--help``. A flag missing from the table of the space's
``engine.version`` is refused when a space is validated, unless the space lists it under
``engine.extra_flags`` (a fork's flag). Each record carries its value type (``int`` or
``float`` where SGLang's argparse converts with one): a space's value of another type (a
top-k ``four``, ``-1e308`` or ``.nan``) is refused when the space is validated, not when
SGLang starts or a rule computes with it. 0.5.17's table has no types (its wheel is not
here): a flag takes the type the default version's table gives the same spelling.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any


_TABLES = Path(__file__).with_name("sglang_flags")
#: The version whose table applies when a space names one without a table.
DEFAULT_VERSION = "0.5.23"


@dataclass(frozen=True)
class Flag:
    name: str
    #: the ServerArgs field the flag sets: the key ``/server_info`` reports it under
    #: (``--fp8-gemm-backend`` sets ``fp8_gemm_runner_backend``)
    dest: str = ""
    store_true: bool = False
    choices: tuple[str, ...] | None = None
    nargs: bool = False
    case_insensitive: bool = False
    #: ``int`` or ``float`` when SGLang's argparse converts the value with that type
    type: str | None = None


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else 0 for p in version.split("."))


def table_versions() -> tuple[str, ...]:
    """Versions with a generated table, oldest first."""
    return tuple(sorted((p.stem for p in _TABLES.glob("*.json")), key=_key))


def table_version(version: str | None) -> str:
    """The table that stands for ``version``: its own, else the newest older one, else
    :data:`DEFAULT_VERSION`."""
    known = table_versions()
    if version in known:
        return version
    older = [v for v in known if version and _key(v) <= _key(version)]
    return older[-1] if older else DEFAULT_VERSION


def table_note(version: str | None) -> str | None:
    """What to say when ``version`` has no flag table of its own (None when it has): the
    space is checked and planned against another version's flags."""
    if version in table_versions():
        return None
    used = table_version(version)
    known = ", ".join(table_versions())
    return (f"SGLang {version} has no flag table here (tables: {known}): its flags are "
            f"checked against {used}'s; a flag it added or removed is not known")


@functools.cache
def flags_for(version: str | None = None) -> dict[str, Flag]:
    """Every spelling of every flag of SGLang ``version`` (see :func:`table_version`)."""
    used = table_version(version)
    data = json.loads((_TABLES / f"{used}.json").read_text())
    typed = {} if used == DEFAULT_VERSION else flags_for(DEFAULT_VERSION)
    out: dict[str, Flag] = {}
    for rec in data["flags"]:
        choices = tuple(rec["choices"]) if rec["choices"] is not None else None
        for name in rec["names"]:
            kind = rec["type"] if "type" in rec else getattr(typed.get(name), "type", None)
            out[name] = Flag(name, dest=rec["dest"], store_true=rec["store_true"],
                             choices=choices, nargs=rec["nargs"],
                             case_insensitive=rec["case"] is not None, type=kind)
    return out


#: The integers an ``int`` flag may hold: 64-bit, what SGLang's tensors and kernels take
#: (Python's argparse would take any size; a top-k of 10**30 fails inside the server).
INT_RANGE = (-(2**63), 2**63 - 1)


def _as_int(value: Any) -> int | None:
    """``value`` as argparse's ``type=int`` reads it (an int, or a string of one); None for
    anything else (a float, even a whole one: argparse refuses ``4.0``)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:                 # also a string of more than 4,300 digits
            return None
    return None


@dataclass(frozen=True)
class Bound:
    """The values a flag's meaning allows, where SGLang's argparse checks only the type (a
    memory fraction is a share of the GPU's memory, a draft tree has at least one branch
    and one step): written by hand, not generated with the tables."""

    low: float
    high: float | None = None
    #: ``low`` itself is outside (a memory fraction of 0 holds nothing)
    low_open: bool = False
    meaning: str = ""

    def problem(self, flag: str, x: float) -> str | None:
        above = x > self.low if self.low_open else x >= self.low
        if above and (self.high is None or x <= self.high):
            return None
        shown = f"{x:g}" if isinstance(x, float) else str(x)
        return f"{flag} {shown} is out of range: {self.meaning}"


#: Bounds of flags a search space commonly sets (:class:`Bound`).
BOUNDS: dict[str, Bound] = {
    "--mem-fraction-static": Bound(0.0, 1.0, low_open=True, meaning="a share of the "
                                   "GPU's memory, in (0, 1]"),
    "--speculative-eagle-topk": Bound(1, meaning="the draft tree's branches per step, at "
                                      "least 1"),
    "--speculative-num-steps": Bound(1, meaning="draft steps per round, at least 1"),
    "--speculative-num-draft-tokens": Bound(1, meaning="tokens verified per round, at "
                                            "least 1"),
}


def value_problem(flag: Flag, value: Any) -> str | None:
    """Why SGLang's parser would refuse ``value`` (a list: each item) for ``flag``, or a
    value it takes would break the server: a choice it lacks, a non-integer or an integer
    beyond :data:`INT_RANGE` for an ``int`` flag, a non-number or a non-finite number
    (inf, nan) for a ``float`` one, a number outside the flag's meaning (:data:`BOUNDS`).
    None when the value is fine."""
    for v in value if isinstance(value, list) else [value]:
        if flag.choices is not None:
            s = str(v).upper() if flag.case_insensitive else str(v)
            if s not in flag.choices:
                return (f"invalid choice {v!r} for {flag.name}; expected one of "
                        f"{', '.join(flag.choices)}")
        if flag.type == "int":
            n = _as_int(v)
            if n is None:
                return f"{flag.name} takes an integer (SGLang parses it with int), not {v!r}"
            if not INT_RANGE[0] <= n <= INT_RANGE[1]:
                return (f"{flag.name} {n} is out of range: SGLang's integer flags hold "
                        "64-bit integers (at most 2**63 - 1)")
        elif flag.type == "float":
            try:
                x = float(v)
            except (TypeError, ValueError, OverflowError):
                x = math.nan
            if isinstance(v, bool) or not math.isfinite(x):
                return (f"{flag.name} takes a finite number (SGLang parses it with float), "
                        f"not {v!r}")
        bound = BOUNDS.get(flag.name)
        if bound is not None and flag.type in ("int", "float"):
            number = _as_int(v) if flag.type == "int" else float(v)
            problem = bound.problem(flag.name, number) if number is not None else None
            if problem is not None:
                return problem
    return None


#: The default version's flags (what export and evidence read arity and choices from).
FLAGS: dict[str, Flag] = flags_for(DEFAULT_VERSION)

#: Flags that no longer exist in 0.5.23 and what replaced them (argparse calls them ambiguous).
REMOVED_FLAGS = {
    "--cuda-graph-max-bs": "--cuda-graph-max-bs-decode / --cuda-graph-max-bs-prefill",
    "--cuda-graph-bs": "--cuda-graph-bs-decode / --cuda-graph-bs-prefill",
}


#: Flags whose ``--config`` key SGLang 0.5.17 refuses ("Unsupported config option
#: 'cuda_graph_backend_prefill' with action 'DeprecatedStoreConstAction'", seen on the H200,
#: docs/real-sglang-h200.md): 0.5.17's ConfigArgumentMerger
#: (sglang/srt/server_args_config_parser.py, ``__init__``) refuses every key that is the
#: ``dest`` of a non-store action, and these real flags share their dest with a deprecated
#: alias (sglang/srt/server_args.py, the ``Deprecated*Action`` aliases). 0.5.23's merger
#: keeps a key a plain flag also reads usable. Generated from the 0.5.17 wheel by
#: ``benchmarks/real_sglang/config_refused.py``. An exported profile keeps these flags on
#: the command line, where every version takes them.
CONFIG_REFUSED = frozenset({
    "--cuda-graph-backend-prefill", "--cuda-graph-bs-decode", "--cuda-graph-bs-prefill",
    "--cuda-graph-max-bs-decode", "--cuda-graph-max-bs-prefill", "--cuda-graph-tc-compiler",
    "--disable-cuda-graph", "--dsa-decode-backend", "--dsa-prefill-backend",
    "--dsa-prefill-cp-mode", "--enable-dsa-prefill-context-parallel",
    "--enable-linear-replayssm-spec", "--enable-prefill-context-parallel",
    "--incremental-streaming-output", "--mamba-radix-cache-strategy", "--prefill-cp-mode",
    "--speculative-draft-window-size",
})
