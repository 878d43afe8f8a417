"""Engines: configuration -> exact launch. Only this package knows server flag names."""

from __future__ import annotations

import sys

from tuner.engines._base import Completion
from tuner.engines._base import Engine
from tuner.engines._base import KnobEvidence
from tuner.engines._base import LaunchPlan
from tuner.engines._base import RequestFailed
from tuner.engines._base import ServerProtocol
from tuner.engines._capabilities import Capabilities
from tuner.engines._capabilities import Support
from tuner.engines._capabilities import algorithm_support
from tuner.engines._capabilities import draft_presence
from tuner.engines._capabilities import inspect_engine
from tuner.engines._capabilities import knob_support
from tuner.engines._sglang import SGLangEngine
from tuner.engines._sglang_block_draft import block_drafts_of
from tuner.errors import UserError
from tuner.space import SearchSpace


__all__ = [
    "SIM_VARIANTS",
    "Capabilities",
    "Completion",
    "Engine",
    "KnobEvidence",
    "LaunchPlan",
    "RequestFailed",
    "SGLangEngine",
    "ServerProtocol",
    "Support",
    "algorithm_support",
    "block_drafts_of",
    "draft_presence",
    "inspect_engine",
    "knob_support",
    "make_engine",
]

#: Engine adapters by the name a space's ``engine.name`` gives. A second engine (vLLM) adds
#: its adapter here (docs/architecture.md).
ENGINES: dict[str, type[Engine]] = {"sglang": SGLangEngine}

#: Simulator variants -> the module the simulator runs as (``python -m MODULE serve``).
SIM_VARIANTS = {
    "fork": "tuner_sim.fork",
    "stock": "tuner_sim.stock",
    "fork-unshared": "tuner_sim.fork_unshared",
}


def _sim_env(space: SearchSpace) -> dict[str, str]:
    return {"TUNER_SIM_MACHINE": space.spec.machine.id}


def make_engine(spec: str = "sglang", *, command: list[str] | None = None,
                sim_env: dict[str, str] | None = None) -> Engine:
    """Build an engine from its command-line name.

    ``sglang`` launches ``command`` (default: the space's ``engine.command``, normally
    ``sglang serve``). ``sim`` or ``sim:VARIANT`` (``fork``, the default; ``stock``;
    ``fork-unshared``) launches the built-in Spark simulator, which takes the same flags;
    ``sim_env`` adds ``TUNER_SIM_*`` settings (time scale, noise, faults).
    """
    kind, _, variant = spec.partition(":")
    if kind == "sglang" and not variant:
        return SGLangEngine(command)
    if kind == "sim":
        variant = variant or "fork"
        if variant not in SIM_VARIANTS:
            raise UserError(f"unknown simulator variant {variant!r}; expected one of "
                            f"{', '.join(SIM_VARIANTS)}")
        cmd = command or [sys.executable, "-m", SIM_VARIANTS[variant], "serve"]
        return SGLangEngine(cmd, name=f"sim:{variant}", extra_env=sim_env, plan_env=_sim_env)
    raise UserError(f"unknown engine {spec!r}; expected sglang, sim or sim:VARIANT "
                    f"({', '.join(SIM_VARIANTS)})")
