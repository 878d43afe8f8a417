"""A configuration: one value per active knob, and its canonical hash."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Config:
    """Knob values of one launch (active knobs only, in the space's order).

    Two configurations with the same canonical form are the same trial; :meth:`hash` is the
    identity the study deduplicates on.
    """

    values: Mapping[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return dict(self.values)

    def hash(self) -> str:
        """12 hex digits of SHA-256 over the sorted JSON of the values."""
        blob = json.dumps(dict(sorted(self.values.items())), sort_keys=True,
                          separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:12]

    def __getitem__(self, name: str) -> Any:
        return self.values[name]

    def get(self, name: str, default: Any = None) -> Any:
        return self.values.get(name, default)

    def __contains__(self, name: object) -> bool:
        return name in self.values

    def describe(self) -> str:
        """``a=1 b=x`` in knob order."""
        return " ".join(f"{k}={value_key(v)}" for k, v in self.values.items())


def value_key(value: Any) -> str:
    """The string a knob value is written as (``values:``/``evidence_by_value:`` keys, plans,
    descriptions): booleans as ``true``/``false``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
