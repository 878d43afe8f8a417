"""Local refinement: the neighbours of the best feasible configuration.

Density-model samplers (TPE) find the good region quickly but poke at it slowly when the
best settings are a narrow combination (humming + FP8 LM head + a short draft chain). The
search plan (:mod:`tuner.sweep._strategy`) therefore proposes configurations that differ
from the incumbent in one knob (the adjacent value of an ordered knob, any other choice of
a categorical one) or in a **coupled pair**: two numeric knobs under the same condition
(draft steps and verify window, both active only with speculation) moved one step
together, up or down, since one alone often lands on a configuration the engine repairs
back or refuses. Knobs that become active take their defaults; capacity knobs never move.
"""

from __future__ import annotations

from typing import Any

from tuner.space import SearchSpace


def _step(space: SearchSpace, name: str, cur: Any, direction: int) -> Any | None:
    dom = space.domain(name) or []
    if not dom:
        return None
    idx = min(range(len(dom)), key=lambda i: abs(dom[i] - cur))
    j = idx + direction
    return dom[j] if 0 <= j < len(dom) else None


def _complete(space: SearchSpace, changed: dict[str, Any]) -> dict[str, Any] | None:
    kept = {n: changed[n] for n in changed if n in space.knobs}
    try:
        return space.complete({n: kept[n] for n in kept if space.is_active(n, kept)},
                              base=kept)
    except Exception:   # a neighbour the space cannot complete is no neighbour
        return None


def coupled(space: SearchSpace, incumbent: dict[str, Any]) -> list[dict[str, Any]]:
    """Pairs of active numeric knobs with the same condition, moved one step together."""
    held = set(space.capacity_knobs)
    nums = [n for n in space.order if n in incumbent and n not in held
            and space.knob(n).type in ("int", "float") and space.knob(n).when
            and space.domain(n) is not None]
    out = []
    for i, a in enumerate(nums):
        for b in nums[i + 1:]:
            if space.knob(a).when != space.knob(b).when:
                continue
            for d in (-1, 1):
                va, vb = _step(space, a, incumbent[a], d), _step(space, b, incumbent[b], d)
                if va is not None and vb is not None:
                    c = _complete(space, {**incumbent, a: va, b: vb})
                    if c is not None:
                        out.append(c)
    return out


def neighbours(space: SearchSpace, incumbent: dict[str, Any]) -> list[dict[str, Any]]:
    """One-knob neighbours of ``incumbent``, then its coupled-pair neighbours."""
    out: list[dict[str, Any]] = []
    held = set(space.capacity_knobs)
    for name in space.order:
        if name not in incumbent or name in held:
            continue
        k = space.knob(name)
        dom = space.domain(name)
        if dom is None:
            continue
        cur = incumbent[name]
        if k.type in ("int", "float"):
            cands = [v for d in (-1, 1) if (v := _step(space, name, cur, d)) is not None]
        else:
            cands = [v for v in dom if v != cur]
        for v in cands:
            c = _complete(space, {**incumbent, name: v})
            if c is not None:
                out.append(c)
    return out + coupled(space, incumbent)
