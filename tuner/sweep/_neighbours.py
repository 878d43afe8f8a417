"""Local refinement: one-knob neighbours of the best feasible configuration.

Density-model samplers (TPE) find the good region quickly but poke at it slowly when the
best settings are a narrow combination (humming + FP8 LM head + a short draft chain). The
driver therefore proposes, for part of the budget, configurations that differ from the
incumbent in one knob: the adjacent value of an ordered knob, any other choice of a
categorical one. Knobs that become active take their defaults; repeats are skipped.
"""

from __future__ import annotations

import random
from typing import Any

from tuner.engines import Engine
from tuner.space import SearchSpace


def neighbours(space: SearchSpace, incumbent: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for name in space.order:
        if name not in incumbent:
            continue
        k = space.knob(name)
        dom = space.domain(name)
        if dom is None:
            continue
        cur = incumbent[name]
        if k.type in ("int", "float"):
            idx = min(range(len(dom)), key=lambda i: abs(dom[i] - cur))
            cands = [dom[i] for i in (idx - 1, idx + 1) if 0 <= i < len(dom)]
        else:
            cands = [v for v in dom if v != cur]
        for v in cands:
            changed = {**incumbent, name: v}
            kept = {n: changed[n] for n in changed if n in space.knobs}
            try:
                out.append(space.complete({n: kept[n] for n in kept
                                           if space.is_active(n, kept)}, base=kept))
            except Exception:   # a neighbour the space cannot complete is no neighbour
                continue
    return out


def pick(space: SearchSpace, engine: Engine, incumbent: dict[str, Any], measured: set[str],
         rng: random.Random) -> dict[str, Any] | None:
    """An unmeasured one-knob neighbour of ``incumbent`` (canonical forms compared)."""
    cands = neighbours(space, incumbent)
    rng.shuffle(cands)
    for c in cands:
        try:
            h = engine.canonicalize(space, c).hash()
        except Exception:
            continue
        if h not in measured:
            return c
    return None
