"""Evidence and the effect check: did every requested setting take effect?

Each knob of the canonical configuration ends ``confirmed`` (every expected observation
seen), ``mismatched`` (an observation contradicts it: humming asked, flashinfer_mxfp4
reported), ``unobservable`` (nothing the server exposes shows it; the reason is kept) or
``unsupported`` (the engine does not know a flag or env var the value needs, found by the
capability probe before launch).
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING
from typing import Any
from typing import Literal

from pydantic import BaseModel
from pydantic import Field

from tuner.engines import KnobEvidence


if TYPE_CHECKING:
    from tuner.engines import Capabilities


Verdict = Literal["confirmed", "mismatched", "unobservable", "unsupported"]


class KnobCheck(BaseModel):
    knob: str
    value: Any
    verdict: Verdict
    observations: list[str] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list)
    note: str | None = None


MISSING = object()
_STAMP = re.compile(r"^\[[^]]*\] ")


def lookup(info: dict[str, Any], dotted: str) -> Any:
    node: Any = info
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return MISSING
        node = node[part]
    return node


def same_value(expected: Any, actual: Any) -> bool:
    if expected is None or actual is None:
        return expected is actual
    if isinstance(expected, bool) or isinstance(actual, bool):
        return expected is actual if isinstance(actual, bool) else str(actual).lower() == str(
            expected).lower()
    if isinstance(expected, int | float) and isinstance(actual, int | float):
        return math.isclose(float(expected), float(actual), rel_tol=1e-6, abs_tol=1e-9)
    return str(expected) == str(actual)


def check_knob(ev: KnobEvidence, server_info: dict[str, Any], log_text: str) -> KnobCheck:
    """Compare one knob's expected evidence with what the running server shows."""
    seen: list[str] = []
    problems: list[str] = []
    for field, expected in ev.server_info.items():
        actual = lookup(server_info, field)
        if actual is MISSING:
            problems.append(f"server_info has no field {field!r}")
        elif same_value(expected, actual):
            seen.append(f"server_info {field}={actual!r}")
        else:
            problems.append(f"server_info {field}={actual!r}, expected {expected!r}")
    for field, expected in ev.server_info_if_present.items():
        actual = lookup(server_info, field)
        if actual is MISSING:
            continue
        if same_value(expected, actual):
            seen.append(f"server_info {field}={actual!r}")
        else:
            problems.append(f"server_info {field}={actual!r}, expected {expected!r}")
    for pattern in ev.log:
        m = re.search(pattern, log_text, re.M)
        if m:
            line = log_text[log_text.rfind("\n", 0, m.start()) + 1:].split("\n", 1)[0]
            shown = _STAMP.sub("", line)[:160]
            seen.append(f"log: {shown}")
        else:
            problems.append(f"log line /{pattern}/ not found")
    for pattern in ev.log_absent:
        if re.search(pattern, log_text, re.M):
            problems.append(f"log line /{pattern}/ present, expected absent")
        else:
            seen.append(f"no log line /{pattern}/")
    if problems:
        verdict: Verdict = "mismatched"
    elif seen:
        verdict = "confirmed"
    else:
        verdict = "unobservable"
    return KnobCheck(knob=ev.knob, value=ev.value, verdict=verdict, observations=seen,
                     problems=problems, note=ev.none or ev.note)


def effect_check(evidence: list[KnobEvidence], server_info: dict[str, Any], log_text: str
                 ) -> list[KnobCheck]:
    return [check_knob(ev, server_info, log_text) for ev in evidence]


def unsupported(evidence: list[KnobEvidence], caps: Capabilities) -> list[KnobCheck]:
    """Knob values the probed engine cannot apply (unknown env var or flag)."""
    out = []
    for ev in evidence:
        problems = []
        for var in ev.requires_env:
            if caps.knows_env(var) is False:
                problems.append(f"{var} is never read by this engine (silently ignored)")
        for flag in ev.requires_flags:
            if caps.knows_flag(flag) is False:
                problems.append(f"{flag} is not a flag of this engine")
        if problems:
            out.append(KnobCheck(knob=ev.knob, value=ev.value, verdict="unsupported",
                                 problems=problems))
    return out
