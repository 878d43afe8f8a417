"""Load a search-space file and check every rule, with located errors.

Every error is a :class:`~tuner.errors.SpaceError` naming the file, the line, the key path and
what was expected. Nothing here raises anything else for bad input.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from tuner.errors import ConfigError
from tuner.errors import SpaceError
from tuner.space._config import value_key
from tuner.space._schema import Knob
from tuner.space._schema import SpaceFile
from tuner.space._schema import shares_problem
from tuner.space._space import SearchSpace
from tuner.space._yaml import KeyPath
from tuner.space._yaml import format_path
from tuner.space._yaml import line_of
from tuner.space._yaml import load_yaml
from tuner.space._yaml import read_small_text


_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_FLAG = re.compile(r"^--[a-z0-9][a-z0-9-]*$")
_ENV = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_KNOWN_PLACEHOLDERS = {"model.path"}
_DRAFT_PLACEHOLDER = re.compile(r"^model\.drafts\.([A-Za-z0-9_-]+)$")
#: pydantic's validator tags in an error's location (``function-after[...]``,
#: ``list[...]``), not keys of the file
_TAG = re.compile(r"[a-z][a-z-]*\[.*\]", re.S)


def _scalar(v: Any) -> bool:
    return v is None or isinstance(v, str | int | float | bool)


def _finite(v: Any) -> bool:
    """False for a float inf or nan (YAML's ``.inf``, ``.nan``), True for anything else."""
    return not isinstance(v, float) or math.isfinite(v)


def _stringify_value_keys(data: Any) -> None:
    """YAML reads ``1:`` and ``true:`` as int/bool keys; value maps are keyed by strings."""
    if not isinstance(data, dict) or not isinstance(data.get("knobs"), dict):
        return
    for knob in data["knobs"].values():
        if not isinstance(knob, dict):
            continue
        for key in ("values", "evidence_by_value"):
            m = knob.get(key)
            if isinstance(m, dict):
                knob[key] = {value_key(k): v for k, v in m.items()}


def _pydantic_error(exc: ValidationError) -> tuple[KeyPath, str]:
    err = exc.errors()[0]
    loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and _TAG.fullmatch(p)))
    kind = err["type"]
    if kind == "extra_forbidden":
        return loc, "unknown key"
    if kind == "missing":
        return loc, "required key is missing"
    shown = repr(err.get("input"))
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return loc, f"{err['msg'][0].lower()}{err['msg'][1:]}, got {shown}"


class _Checker:
    def __init__(self, spec: SpaceFile) -> None:
        self.spec = spec

    def fail(self, path: KeyPath, msg: str) -> None:
        raise _Located(path, msg)

    def run(self) -> tuple[str, ...]:
        s = self.spec
        if not s.knobs:
            self.fail(("knobs",), "expected at least one knob")
        for name, knob in s.knobs.items():
            self.knob(name, knob)
        order = self.order()
        self.limits()
        for flag, value in s.fixed_flags.items():
            self.flag_value(("fixed_flags", flag), flag, value)
        for var in s.fixed_env:
            if not _ENV.match(var):
                self.fail(("fixed_env", var), "expected an environment variable name")
        problem = shares_problem(s.workload.mix) if s.workload.mix else None
        if problem is not None:
            self.fail(("workload", "mix"), problem)
        return order

    # -- knobs -----------------------------------------------------------------------------
    def knob(self, name: str, k: Knob) -> None:
        p: KeyPath = ("knobs", name)
        if not _NAME.match(name):
            self.fail(p, "knob names are lower_snake_case identifiers")
        self.knob_domain(p, k)
        self.knob_mapping(p, name, k)
        self.knob_evidence(p, name, k)
        self.knob_lossy(p, name, k)
        if k.default is not None and not self.in_domain(name, k.default):
            self.fail((*p, "default"), f"{k.default!r} is outside the knob's domain")

    def knob_lossy(self, p: KeyPath, name: str, k: Knob) -> None:
        """Lossy values belong to a numerics knob's domain."""
        if k.lossy_values is None:
            return
        if k.lossless or k.role == "capacity":
            self.fail((*p, "lossy_values"), "a lossless or capacity knob has no lossy values")
        for i, v in enumerate(k.lossy_values):
            if not self.in_domain(name, v):
                self.fail((*p, "lossy_values", i), f"{v!r} is not a value of knob {name!r}")

    def knob_domain(self, p: KeyPath, k: Knob) -> None:
        """Choices or bounds, as the knob's type needs."""
        if k.type in ("categorical", "bool"):
            for key in ("low", "high", "step"):
                if getattr(k, key) is not None:
                    self.fail((*p, key), f"not allowed for a {k.type} knob")
        if k.type == "categorical":
            if k.choices is None:
                self.fail((*p, "choices"), "a categorical knob needs 'choices'")
            assert k.choices is not None
            if not k.choices:
                self.fail((*p, "choices"), "empty domain: expected at least one choice")
            for i, c in enumerate(k.choices):
                if not _scalar(c) or c is None:
                    self.fail((*p, "choices", i), "expected a string, number or boolean")
                if not _finite(c):
                    self.fail((*p, "choices", i), f"expected a finite number, got {c!r}")
            keys = [value_key(c) for c in k.choices]
            for i, key in enumerate(keys):
                if key in keys[:i]:
                    self.fail((*p, "choices", i), f"duplicate choice {key!r}")
        elif k.type == "bool":
            if k.choices is not None:
                self.fail((*p, "choices"), "not allowed for a bool knob")
        else:
            if k.choices is not None:
                self.fail((*p, "choices"), f"not allowed for an {k.type} knob (use low/high)")
            for key in ("low", "high"):
                if getattr(k, key) is None:
                    self.fail((*p, key), f"an {k.type} knob needs '{key}'")
                if k.type == "int" and not float(getattr(k, key)).is_integer():
                    self.fail((*p, key), "expected an integer")
            assert k.low is not None and k.high is not None
            if k.step is not None:
                if k.step <= 0:
                    self.fail((*p, "step"), "expected a positive step")
                if k.type == "int" and not float(k.step).is_integer():
                    self.fail((*p, "step"), "expected an integer step")
            if k.low > k.high:
                self.fail((*p, "high"), f"empty domain: high {k.high:g} < low {k.low:g}")
            step = k.step if k.step is not None else (1.0 if k.type == "int" else None)
            if step is not None and (k.high - k.low) / step + 1 > MAX_VALUES:
                self.fail((*p, "high"), f"more than {MAX_VALUES:,} values: narrow the range "
                                        "or take a larger step")

    def knob_mapping(self, p: KeyPath, name: str, k: Knob) -> None:
        """Exactly one way to reach the engine: a flag, an env var, or per-value sends."""
        mapped = [m for m in ("flag", "env", "values") if getattr(k, m) is not None]
        if len(mapped) != 1:
            self.fail(p, "expected exactly one of 'flag', 'env' or 'values' (how the knob "
                         "reaches the engine)")
        if k.flag is not None and not _FLAG.match(k.flag):
            self.fail((*p, "flag"), "expected a long option like --moe-runner-backend")
        if k.env is not None and not _ENV.match(k.env):
            self.fail((*p, "env"), "expected an environment variable name")
        if k.values is not None:
            if k.type not in ("categorical", "bool"):
                self.fail((*p, "values"), "'values' needs a categorical or bool knob")
            self.cover((*p, "values"), name, k, k.values)
            for key, contrib in k.values.items():
                for flag, value in contrib.flags.items():
                    self.flag_value((*p, "values", key, "flags", flag), flag, value)
                for var in contrib.env:
                    if not _ENV.match(var):
                        self.fail((*p, "values", key, "env", var),
                                  "expected an environment variable name")

    def knob_evidence(self, p: KeyPath, name: str, k: Knob) -> None:
        """Exactly one of evidence / evidence_by_value, never empty, valid regexes."""
        if (k.evidence is None) == (k.evidence_by_value is None):
            self.fail(p, "expected exactly one of 'evidence' or 'evidence_by_value' (what "
                         "proves the knob took effect; use 'evidence: {none: why}' if nothing)")
        ev: list[tuple[tuple[str, ...], Any]] = (
            [(("evidence",), k.evidence)] if k.evidence is not None else [])
        if k.evidence_by_value is not None:
            if k.type not in ("categorical", "bool"):
                self.fail((*p, "evidence_by_value"), "needs a categorical or bool knob")
            self.cover((*p, "evidence_by_value"), name, k, k.evidence_by_value)
            ev = [(("evidence_by_value", key), e) for key, e in k.evidence_by_value.items()]
        for sub, e in ev:
            assert e is not None
            if not (e.server_info or e.log or e.log_absent or e.none):
                self.fail((*p, *sub), "empty evidence: give server_info, log, log_absent, "
                                      "or 'none: why nothing shows it'")
            for i, pattern in enumerate(e.log + e.log_absent):
                try:
                    re.compile(pattern)
                except re.error as exc:
                    self.fail((*p, *sub, "log", i), f"not a valid regular expression: {exc}")
    def cover(self, path: KeyPath, name: str, k: Knob, mapping: dict[str, Any]) -> None:
        dom = [value_key(v) for v in (k.choices or [])] if k.type == "categorical" else [
            "false", "true"]
        for key in mapping:
            if key not in dom:
                self.fail((*path, key), f"{key!r} is not a value of knob {name!r}")
        for key in dom:
            if key not in mapping:
                self.fail(path, f"missing an entry for value {key!r}")

    def in_domain(self, name: str, value: Any) -> bool:
        return SearchSpace(self.spec).in_domain(name, value)

    def flag_value(self, path: KeyPath, flag: str, value: Any) -> None:
        if not _FLAG.match(flag):
            self.fail(path, "expected a long option like --attention-backend")
        items = value if isinstance(value, list) else [value]
        for v in items:
            if not _scalar(v) or v is None:
                self.fail(path, "expected a string, number, boolean or list of them")
            if not _finite(v):
                self.fail(path, f"expected a finite number, got {v!r} (it would reach the "
                                "server as is)")
            if isinstance(v, str):
                for ph in _PLACEHOLDER.findall(v):
                    draft = _DRAFT_PLACEHOLDER.match(ph)
                    if draft is not None and draft.group(1) in self.spec.model.drafts:
                        continue
                    if ph not in _KNOWN_PLACEHOLDERS:
                        known = ", ".join(["{model.path}", *(
                            f"{{model.drafts.{d}}}" for d in self.spec.model.drafts)])
                        self.fail(path, f"unknown placeholder {{{ph}}}; known: {known}"
                                  + ("" if draft is None else
                                     f" (declare the draft under model.drafts."
                                     f"{draft.group(1)})"))

    # -- conditions --------------------------------------------------------------------------
    def order(self) -> tuple[str, ...]:
        knobs = self.spec.knobs
        for name, k in knobs.items():
            for parent, expected in k.when.items():
                p = ("knobs", name, "when", parent)
                if parent == name:
                    self.fail(p, "a knob cannot depend on itself")
                if parent not in knobs:
                    self.fail(p, f"condition on unknown knob {parent!r}")
                for e in expected if isinstance(expected, list) else [expected]:
                    if not self.in_domain(parent, e):
                        self.fail(p, f"{e!r} is not a value of knob {parent!r}")
        order = self.parents_first()
        for name, k in knobs.items():
            for parent in k.when:
                if knobs[parent].role == "capacity":
                    self.fail(("knobs", name, "when", parent),
                              f"{parent!r} is a capacity knob (held, never searched): no knob "
                              "may depend on it")
            if k.role == "capacity" and k.when:
                self.fail(("knobs", name, "role"), "a capacity knob applies to every launch: "
                                                   "it cannot have a 'when' condition")
        return tuple(order)

    def parents_first(self) -> list[str]:
        """The knobs with every knob after the knobs its ``when`` names (depth first, in file
        order); a cycle is a located error. Iterative: a chain of thousands of conditions
        written child-first is as deep as it is long (a recursion stopped at 1,000)."""
        knobs = self.spec.knobs
        order: list[str] = []
        state: dict[str, int] = {}          # 1: on the current path, 2: placed
        for root in knobs:
            if state.get(root):
                continue
            path, stack = [root], [iter(knobs[root].when)]
            state[root] = 1
            while stack:
                for parent in stack[-1]:
                    if state.get(parent) == 1:
                        self.fail(("knobs", parent, "when"), "conditions form a cycle: "
                                  + _chain([*path[path.index(parent):], parent]))
                    if not state.get(parent):
                        state[parent] = 1
                        path.append(parent)
                        stack.append(iter(knobs[parent].when))
                        break
                else:
                    stack.pop()
                    state[path[-1]] = 2
                    order.append(path.pop())
        return order

    # -- limits ------------------------------------------------------------------------------
    def limits(self) -> None:
        s = self.spec
        for flag, lim in s.limits.items():
            if not _FLAG.match(flag):
                self.fail(("limits", flag), "limits are keyed by flag, like --mem-fraction-static")
            why = f" ({lim.reason})" if lim.reason else ""

            def check(path: KeyPath, value: Any, flag: str = flag, lim: Any = lim,
                      why: str = why) -> None:
                if isinstance(value, bool) or not isinstance(value, int | float):
                    return
                if lim.max is not None and value > lim.max + 1e-12:
                    self.fail(path, f"{value:g} is above this machine's cap {lim.max:g} for "
                                    f"{flag}{why}")
                if lim.min is not None and value < lim.min - 1e-12:
                    self.fail(path, f"{value:g} is below this machine's floor {lim.min:g} for "
                                    f"{flag}{why}")

            if flag in s.fixed_flags:
                check(("fixed_flags", flag), s.fixed_flags[flag])
            for name, k in s.knobs.items():
                if k.flag == flag:
                    if k.type in ("int", "float"):
                        check(("knobs", name, "high"), k.high)
                        check(("knobs", name, "low"), k.low)
                    for i, c in enumerate(k.choices or []):
                        check(("knobs", name, "choices", i), c)
                for key, contrib in (k.values or {}).items():
                    if flag in contrib.flags:
                        check(("knobs", name, "values", key, "flags", flag), contrib.flags[flag])


def _chain(names: list[str]) -> str:
    """``a -> b -> a``; a long cycle shows its first and last four knobs and its length."""
    if len(names) > 9:
        names = [*names[:4], f"... ({len(names) - 1} knobs) ...", *names[-4:]]
    return " -> ".join(names)


class _Located(Exception):
    def __init__(self, path: KeyPath, msg: str) -> None:
        self.path = path
        self.msg = msg


def _check_baseline(space: SearchSpace) -> None:
    spec = space.spec
    for name, value in spec.baseline.items():
        if name not in spec.knobs:
            raise _Located(("baseline", name), f"unknown knob {name!r}")
        if not space.in_domain(name, value):
            raise _Located(("baseline", name),
                           f"{value!r} is outside the knob's domain "
                           f"({space.describe_domain(name)})")
    try:
        resolved = space.complete({})
    except ConfigError as exc:
        raise _Located(("baseline",), str(exc)) from None
    for name in spec.baseline:
        if name not in resolved:
            needs = ", ".join(f"{p}={v}" for p, v in spec.knobs[name].when.items())
            raise _Located(("baseline", name),
                           f"knob is inactive under the baseline (it needs {needs}); remove it")


def parse_space(text: str, file: str = "<space>", source: Path | None = None) -> SearchSpace:
    """Parse and validate a search space from YAML text."""
    data, lines = load_yaml(text, file)

    def located(path: KeyPath, msg: str) -> SpaceError:
        return SpaceError(msg, file=file, path=format_path(path), line=line_of(lines, path))

    if not isinstance(data, dict):
        raise located((), f"expected a mapping at the top level, got {type(data).__name__}")
    _stringify_value_keys(data)
    try:
        spec = SpaceFile.model_validate(data)
    except ValidationError as exc:
        path, msg = _pydantic_error(exc)
        raise located(path, msg) from None
    try:
        order = _Checker(spec).run()
        space = SearchSpace(spec=spec, source=source, order=order, lines=lines, file=file)
        _check_baseline(space)
    except _Located as exc:
        raise located(exc.path, exc.msg) from None
    return space


#: Values one stepped knob may take (a sweep enumerates and samples them).
MAX_VALUES = 100_000


def load_space(path: str | Path) -> SearchSpace:
    """Load and validate the search-space file at ``path``."""
    return parse_space(read_small_text(path), file=str(path), source=Path(path))
