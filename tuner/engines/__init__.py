"""Engines: configuration -> exact launch. Only this package knows server flag names."""

from __future__ import annotations

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
from tuner.engines._registry import ENGINES
from tuner.engines._registry import SIM_VARIANTS
from tuner.engines._registry import EngineEntry
from tuner.engines._registry import EngineFactory
from tuner.engines._registry import make_engine
from tuner.engines._registry import register
from tuner.engines._registry import space_engines
from tuner.engines._sglang import SGLangEngine
from tuner.engines._sglang_block_draft import block_drafts_of
from tuner.engines._sglang_init import InitRequest
from tuner.engines._sglang_init import InitSpace
from tuner.engines._sglang_init import KnobBlock
from tuner.engines._sglang_init import init_space
from tuner.engines._sglang_init import table_capabilities
from tuner.engines._sglang_speculative import SPEC_ALGORITHMS
from tuner.engines._sglang_speculative import SpecAlgorithm


__all__ = [
    "ENGINES",
    "SIM_VARIANTS",
    "SPEC_ALGORITHMS",
    "Capabilities",
    "Completion",
    "Engine",
    "EngineEntry",
    "EngineFactory",
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
    "SpecAlgorithm",
    "Support",
    "algorithm_support",
    "block_drafts_of",
    "draft_presence",
    "init_space",
    "inspect_engine",
    "knob_support",
    "make_engine",
    "read_meminfo",
    "register",
    "space_engines",
    "table_capabilities",
]
