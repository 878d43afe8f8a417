"""The engine registry: an engine's command-line name -> how to build it.

Adding an engine is one :func:`register` call (its factory, the space ``engine.name`` it
launches and its variants); :func:`make_engine`, ``--engine``'s choices and the space check
(:func:`space_engines`) all read this table, nothing else names engines.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass

from tuner.engines._base import Engine
from tuner.engines._host import SimulatedHosts
from tuner.engines._sglang import SGLangEngine
from tuner.errors import UserError
from tuner.space import SearchSpace


#: (variant or None, the command to launch, ``TUNER_SIM_*``-style settings) -> the engine
EngineFactory = Callable[[str | None, list[str] | None, dict[str, str]], Engine]


@dataclass(frozen=True)
class EngineEntry:
    """One registered engine."""

    #: the command-line name (``--engine NAME`` or ``NAME:VARIANT``)
    name: str
    build: EngineFactory
    #: the space ``engine.name`` whose flags it takes (a simulator speaks SGLang's)
    speaks: str
    #: variant -> what it runs; the first is the default (empty: it takes no variant)
    variants: dict[str, str]
    #: whether the engine's servers answer from a model rather than a GPU
    simulated: bool = False
    #: what its variants are called in an error (``simulator variant``)
    variant_label: str = "variant"


ENGINES: dict[str, EngineEntry] = {}


def register(entry: EngineEntry) -> EngineEntry:
    """Add ``entry`` to :data:`ENGINES` (a second registration of a name is an error)."""
    if entry.name in ENGINES:
        raise ValueError(f"engine {entry.name!r} is registered twice")
    ENGINES[entry.name] = entry
    return entry


def space_engines() -> list[str]:
    """The ``engine.name`` values a space may give (each engine's flag dialect)."""
    return list(dict.fromkeys(e.speaks for e in ENGINES.values()))


def _spellings() -> str:
    names = [n for e in ENGINES.values()
             for n in ([e.name, f"{e.name}:VARIANT"] if e.variants else [e.name])]
    return ", ".join(names[:-1]) + " or " + names[-1] if len(names) > 1 else names[0]


def make_engine(spec: str = "sglang", *, command: list[str] | None = None,
                sim_env: dict[str, str] | None = None) -> Engine:
    """Build an engine from its command-line name.

    ``sglang`` launches ``command`` (default: the space's ``engine.command``, normally
    ``sglang serve``). ``sim`` or ``sim:VARIANT`` (``fork``, the default; ``stock``;
    ``fork-unshared``) launches the built-in Spark simulator, which takes the same flags;
    ``sim_env`` adds ``TUNER_SIM_*`` settings (time scale, noise, faults).
    """
    kind, _, variant = spec.partition(":")
    entry = ENGINES.get(kind)
    if entry is None or (variant and not entry.variants):
        raise UserError(f"unknown engine {spec!r}; expected {_spellings()} "
                        f"({', '.join(v for e in ENGINES.values() for v in e.variants)})")
    if entry.variants:
        variant = variant or next(iter(entry.variants))
        if variant not in entry.variants:
            raise UserError(f"unknown {entry.variant_label} {variant!r}; expected one of "
                            f"{', '.join(entry.variants)}")
    return entry.build(variant or None, command, dict(sim_env or {}))


# -- SGLang and its simulator -------------------------------------------------------------
def _sglang(variant: str | None, command: list[str] | None, env: dict[str, str]) -> Engine:
    return SGLangEngine(command)


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


def _sim(variant: str | None, command: list[str] | None, env: dict[str, str]) -> Engine:
    variant = variant or "fork"
    cmd = command or [sys.executable, "-m", SIM_VARIANTS[variant], "serve"]
    return SGLangEngine(cmd, name=f"sim:{variant}", extra_env=env, plan_env=_sim_env,
                        hosts=_sim_hosts(env), time_scale=_sim_scale(env), simulated=True)


register(EngineEntry("sglang", _sglang, speaks="sglang", variants={}))
register(EngineEntry("sim", _sim, speaks="sglang", variants=SIM_VARIANTS, simulated=True,
                     variant_label="simulator variant"))
