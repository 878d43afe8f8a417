"""The shapes a probe measures, from the space's model metadata."""

from __future__ import annotations

from typing import Any

from tuner.errors import UserError
from tuner.space import SearchSpace


REQUIRED = ("hidden_size", "moe_intermediate_size", "routed_experts", "experts_per_token",
            "vocab_size")


def probe_shapes(space: SearchSpace) -> dict[str, Any]:
    """hidden, intermediate, experts, top_k, vocab and MXFP4 bytes per expert."""
    f = space.spec.model.facts
    missing = [k for k in REQUIRED if k not in f]
    if missing:
        raise UserError(f"{space.file or space.name}: model.facts lacks "
                        f"{', '.join(missing)}: the probe needs the model's shapes")
    hidden, inter = int(f["hidden_size"]), int(f["moe_intermediate_size"])
    return {
        "model": space.spec.model.id, "hidden": hidden, "intermediate": inter,
        "experts": int(f["routed_experts"]), "top_k": int(f["experts_per_token"]),
        "shared_experts": int(f.get("shared_experts", 0)), "vocab": int(f["vocab_size"]),
        # gate + up + down projections, MXFP4: 4-bit values and an E8M0 scale per 32
        "expert_bytes": 3 * hidden * inter * (0.5 + 1 / 32),
    }
