"""The loaded, validated search space: domains, conditions, and what each value launches."""

from __future__ import annotations

import math
from collections.abc import Iterator
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from pathlib import Path
from typing import Any

from tuner.errors import ConfigError
from tuner.errors import SpaceError
from tuner.space._config import value_key
from tuner.space._schema import Contribution
from tuner.space._schema import Evidence
from tuner.space._schema import Knob
from tuner.space._schema import SpaceFile


#: the end of a domain's values (a value may be None)
_END = object()


def _decimals(step: float) -> int:
    text = f"{step:.10f}".rstrip("0")
    return len(text.split(".")[1]) if "." in text else 0


def condition_matches(expected: Any, actual: Any) -> bool:
    """``when:`` semantics: a scalar means equality, a list means membership."""
    if isinstance(expected, list):
        return any(_same(e, actual) for e in expected)
    return _same(expected, actual)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b or (isinstance(a, bool) and isinstance(b, bool) and a == b)
    return a == b


@dataclass(frozen=True)
class SearchSpace:
    """A validated search space. Build it with :func:`tuner.space.load_space`."""

    spec: SpaceFile
    source: Path | None = None
    order: tuple[str, ...] = field(default=())
    lines: Mapping[tuple[str | int, ...], int] = field(default_factory=dict, repr=False)
    file: str | None = None

    def error(self, path: tuple[str | int, ...], message: str) -> SpaceError:
        """A :class:`SpaceError` located at ``path`` in this space's file."""
        from tuner.space._yaml import format_path
        from tuner.space._yaml import line_of

        return SpaceError(message, file=self.file,
                          path=format_path(path), line=line_of(dict(self.lines), path))

    # ---- metadata -------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def knobs(self) -> Mapping[str, Knob]:
        return self.spec.knobs

    def knob(self, name: str) -> Knob:
        try:
            return self.spec.knobs[name]
        except KeyError:
            known = ", ".join(self.spec.knobs)
            raise ConfigError(f"unknown knob {name!r}; this space has: {known}") from None

    @property
    def capacity_knobs(self) -> tuple[str, ...]:
        """Knobs with ``role: capacity``: held at the baseline's value by the speed search."""
        return tuple(n for n in self.order if self.spec.knobs[n].role == "capacity")

    def for_workload(self, workload: Any) -> SearchSpace:
        """This space as a sweep serving ``workload`` searches it. Up to one user at a time
        a capacity knob changes no speed and is held; when the workload or one of its load
        regimes serves several users at once, how many requests fit decides throughput and
        queueing, so capacity knobs are searched like speed knobs (lossless: they never
        change an answer). Returns ``self`` when nothing changes."""
        if workload.peak_users <= 1 or not self.capacity_knobs:
            return self
        knobs = {n: k.model_copy(update={"role": "speed", "lossless": True})
                 if k.role == "capacity" else k for n, k in self.spec.knobs.items()}
        return replace(self, spec=self.spec.model_copy(update={"knobs": knobs}))

    @property
    def numerics_knobs(self) -> tuple[str, ...]:
        """Speed knobs that may change what the model answers (not ``lossless``)."""
        return tuple(n for n in self.order if self.spec.knobs[n].role == "speed"
                     and not self.spec.knobs[n].lossless)

    def lossy_knobs(self, config: Mapping[str, Any]) -> tuple[str, ...]:
        """The numerics knobs of ``config`` set to a value that may cost accuracy: one its
        knob lists in ``lossy_values``, or, for a knob that lists none, any value other than
        the baseline's (a knob the baseline has off: its default)."""
        base = self.complete({})
        out = []
        for n in self.numerics_knobs:
            if n not in config:
                continue
            k = self.spec.knobs[n]
            if k.lossy_values is None:
                lossy = not _same(config[n], base.get(n, k.default))
            else:
                lossy = any(_same(v, config[n]) for v in k.lossy_values)
            if lossy:
                out.append(n)
        return tuple(out)

    def speed_key(self, config: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
        """``config`` without its capacity knobs: two configurations with the same key differ
        only in whether they fit, not in speed."""
        held = set(self.capacity_knobs)
        return tuple((n, value_key(v)) for n, v in config.items() if n not in held)

    # ---- domains --------------------------------------------------------------------------
    def domain(self, name: str) -> list[Any] | None:
        """Every value of a discrete knob, in order; ``None`` for a continuous float."""
        k = self.knob(name)
        if k.type == "bool":
            return [False, True]
        if k.type == "categorical":
            return list(k.choices or [])
        assert k.low is not None and k.high is not None
        if k.type == "int":
            step = int(k.step or 1)
            return list(range(int(k.low), int(k.high) + 1, step))
        if k.step is None:
            return None
        n = math.floor((k.high - k.low) / k.step + 1e-9)
        nd = _decimals(k.step)
        return [round(k.low + i * k.step, nd) for i in range(n + 1)]

    def coerce(self, name: str, raw: Any) -> Any:
        """Turn ``raw`` (a string from the command line, or a sampled value) into a domain
        value of knob ``name``; raise :class:`ConfigError` when it is outside the domain."""
        k = self.knob(name)
        value: Any = raw
        try:
            if k.type == "bool":
                if isinstance(raw, str):
                    low = raw.strip().lower()
                    if low not in ("true", "false", "1", "0", "yes", "no", "on", "off"):
                        raise ValueError
                    value = low in ("true", "1", "yes", "on")
                else:
                    value = bool(raw)
            elif k.type == "int":
                if isinstance(raw, str):
                    value = int(raw.strip())
                elif isinstance(raw, float) and not raw.is_integer():
                    raise ValueError
                else:
                    value = int(raw)
            elif k.type == "float":
                value = float(raw)
                if k.step is not None:
                    value = round(value, _decimals(k.step))
            elif isinstance(raw, str):
                matches = [c for c in (k.choices or []) if value_key(c) == raw.strip()]
                if not matches:
                    raise ValueError
                value = matches[0]
        except (TypeError, ValueError):
            raise ConfigError(
                f"knob {name!r}: {raw!r} is not a valid {k.type} value; "
                f"expected {self.describe_domain(name)}"
            ) from None
        if not self.in_domain(name, value):
            raise ConfigError(
                f"knob {name!r}: {value!r} is outside its domain {self.describe_domain(name)}"
            )
        return value

    def in_domain(self, name: str, value: Any) -> bool:
        k = self.knob(name)
        if k.type in ("categorical", "bool"):
            return any(_same(c, value) for c in (self.domain(name) or []))
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        if k.type == "int" and isinstance(value, float) and not value.is_integer():
            return False                # (an int of 400 digits has no float to convert to)
        assert k.low is not None and k.high is not None
        if not (k.low - 1e-9 <= value <= k.high + 1e-9):
            return False
        if k.step is not None:
            ratio = (value - k.low) / k.step
            return abs(ratio - round(ratio)) < 1e-6
        return True

    def describe_domain(self, name: str) -> str:
        k = self.knob(name)
        if k.type in ("categorical", "bool"):
            return "one of " + ", ".join(value_key(c) for c in self.domain(name) or [])
        step = f" step {k.step:g}" if k.step is not None else ""
        lo = int(k.low) if k.type == "int" and k.low is not None else k.low
        hi = int(k.high) if k.type == "int" and k.high is not None else k.high
        return f"{k.type} in [{lo}, {hi}]{step}"

    # ---- conditions -----------------------------------------------------------------------
    def is_active(self, name: str, values: Mapping[str, Any]) -> bool:
        """Whether knob ``name`` applies, given the values of the knobs it depends on.

        A knob whose parent is inactive is inactive too (``values`` then lacks the parent).
        """
        for parent, expected in self.knob(name).when.items():
            if parent not in values or not condition_matches(expected, values[parent]):
                return False
        return True

    def complete(self, assigned: Mapping[str, Any], *, base: Mapping[str, Any] | None = None
                 ) -> dict[str, Any]:
        """Resolve a full configuration: each active knob takes its value from ``assigned``,
        else ``base`` (default: the baseline), else its ``default``; inactive knobs are
        dropped. Values are checked against their domains."""
        for name in assigned:
            self.knob(name)
        base = self.spec.baseline if base is None else base
        out: dict[str, Any] = {}
        for name in self.order:
            if not self.is_active(name, out):
                continue
            k = self.knob(name)
            if name in assigned:
                raw = assigned[name]
            elif name in base:
                raw = base[name]
            elif k.default is not None:
                raw = k.default
            else:
                raise ConfigError(
                    f"knob {name!r} is active but has no value: set it "
                    f"(--set {name}=...) or give it a default in the space"
                )
            out[name] = self.coerce(name, raw)
        return out

    # ---- what a value launches --------------------------------------------------------------
    def substitute(self, text: str) -> str:
        """``text`` with its placeholders filled: ``{model.path}`` and
        ``{model.drafts.NAME}`` (a draft's path)."""
        model = self.spec.model
        text = text.replace("{model.path}", model.path)
        for name, draft in model.drafts.items():
            text = text.replace(f"{{model.drafts.{name}}}", draft.path)
        return text

    def contribution(self, name: str, value: Any) -> Contribution:
        """The flags and env vars knob ``name`` at ``value`` adds to a launch."""
        k = self.knob(name)
        if k.values is not None:
            return k.values[value_key(value)]
        if k.flag is not None:
            return Contribution(flags={k.flag: value})
        assert k.env is not None
        return Contribution(env={k.env: value_key(value)})

    def evidence(self, name: str, value: Any) -> Evidence:
        """What proves that knob ``name`` at ``value`` took effect."""
        k = self.knob(name)
        if k.evidence_by_value is not None:
            return k.evidence_by_value[value_key(value)]
        assert k.evidence is not None
        return k.evidence

    # ---- size -----------------------------------------------------------------------------
    def iter_configs(self, limit: int = 1_000_000) -> Iterator[dict[str, Any]]:
        """Every configuration of the space (conditions applied), up to ``limit``, in the
        order of the knobs' domains (the first knob varies slowest).

        Iterative, so a space of thousands of knobs is no deeper than one. Raises
        :class:`ValueError` for a space with a continuous knob.
        """
        names, acc = self.order, dict[str, Any]()
        frames: list[tuple[int, Iterator[Any]]] = []   # each assigned knob, its values left
        i = count = 0
        while count < limit:
            if i < len(names):
                if not self.is_active(names[i], acc):
                    i += 1
                    continue
                dom = self.domain(names[i])
                if dom is None:
                    raise ValueError(f"knob {names[i]!r} is continuous")
                frames.append((i, iter(dom)))
            else:
                count += 1
                yield dict(acc)
            while frames:                      # the next value of the innermost knob left
                j, values = frames[-1]
                value = next(values, _END)
                if value is not _END:
                    acc[names[j]] = value
                    i = j + 1
                    break
                frames.pop()
                acc.pop(names[j], None)
            else:
                return

    def raw_size(self) -> float:
        """The product of the knob domain sizes, ignoring conditions (inf if continuous)."""
        sizes = [float(len(d)) if (d := self.domain(n)) is not None else math.inf
                 for n in self.order]
        return math.prod(sizes)          # a float: past 1e308 (a thousand-knob chain) inf
