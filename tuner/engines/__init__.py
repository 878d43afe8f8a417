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
from tuner.engines._host import Host
from tuner.engines._host import HostMemory
from tuner.engines._host import MemoryNeed
from tuner.engines._host import SimulatedHosts
from tuner.engines._host import read_meminfo
from tuner.engines._sglang import SGLangEngine
from tuner.engines._sglang_block_draft import block_drafts_of
from tuner.engines._sglang_init import InitRequest
from tuner.engines._sglang_init import InitSpace
from tuner.engines._sglang_init import KnobBlock
from tuner.engines._sglang_init import init_space
from tuner.engines._sglang_init import table_capabilities
from tuner.errors import UserError
from tuner.space import SearchSpace


__all__ = [
    "SIM_VARIANTS",
    "Capabilities",
    "Completion",
    "Engine",
    "Host",
    "HostMemory",
    "InitRequest",
    "InitSpace",
    "KnobBlock",
    "KnobEvidence",
    "LaunchPlan",
    "MemoryNeed",
    "RequestFailed",
    "SGLangEngine",
    "ServerProtocol",
    "SimulatedHosts",
    "Support",
    "algorithm_support",
    "block_drafts_of",
    "draft_presence",
    "init_space",
    "inspect_engine",
    "knob_support",
    "make_engine",
    "read_meminfo",
    "table_capabilities",
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


def _sim_hosts(env: dict[str, str]) -> SimulatedHosts:
    """The simulator's machines: one per launch, its meminfo in ``TUNER_SIM_HOST_DIR``
    (default: a folder of this user's in the temporary directory), powered on by
    ``python -m tuner_sim host PATH`` (docs/simulator.md, "Host memory")."""
    import os
    import tempfile

    folder = env.get("TUNER_SIM_HOST_DIR") or os.path.join(
        tempfile.gettempdir(), f"tuner-sim-hosts-{os.getuid()}")
    return SimulatedHosts(folder=folder, boot=(sys.executable, "-m", "tuner_sim", "host"),
                          env_var="TUNER_SIM_HOST_MEMINFO")


def _sim_scale(env: dict[str, str]) -> float:
    """The simulator's time scale as its settings give it (its default: 1)."""
    try:
        scale = float(env.get("TUNER_SIM_TIME_SCALE") or 1.0)
    except ValueError:
        return 1.0
    return scale if scale > 0 else 1.0


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
        env = dict(sim_env or {})
        return SGLangEngine(cmd, name=f"sim:{variant}", extra_env=env, plan_env=_sim_env,
                            hosts=_sim_hosts(env), time_scale=_sim_scale(env))
    raise UserError(f"unknown engine {spec!r}; expected sglang, sim or sim:VARIANT "
                    f"({', '.join(SIM_VARIANTS)})")
