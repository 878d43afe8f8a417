"""Machine profiles ``tuner init --machine NAME`` knows: the tool's own facts about each.

The simulator keeps its own (``tuner_sim/profiles/machines/``); the tool never imports it,
so the facts a space needs are written here once, each with its source. A space names its
machine by ``machine.id``, as the shipped ones do (``dgx-spark``, ``h200``); ``h100`` is
the same chip with 80 GB.
"""

from __future__ import annotations

from dataclasses import dataclass

from tuner.errors import UserError


@dataclass(frozen=True)
class Machine:
    id: str
    gpu: str
    compute_capability: tuple[int, int]
    memory_gib: float           # per GPU, visible to CUDA
    bandwidth_gbs: float
    unified_memory: bool
    #: the highest --mem-fraction-static a launch may use here, and why
    fraction_cap: float
    cap_reason: str
    #: the fraction a launch defaults to here (None: SGLang's own automatic value)
    fraction_default: float | None
    default_reason: str
    #: GPUs one machine holds (tensor parallel within it)
    max_gpus: int
    source: str

    @property
    def cc(self) -> str:
        return f"{self.compute_capability[0]}.{self.compute_capability[1]}"


MACHINES: dict[str, Machine] = {
    "dgx-spark": Machine(
        id="dgx-spark", gpu="NVIDIA GB10", compute_capability=(12, 1), memory_gib=119.0,
        bandwidth_gbs=273.0, unified_memory=True, fraction_cap=0.70,
        cap_reason="0.75 was reported to OOM and lock up a GB10 driver; 0.68 is recommended",
        fraction_default=0.68,
        default_reason="the Ling fork's recommendation for a GB10 (the cookbook's 0.75 was "
                       "reported to lock up the driver)",
        max_gpus=1,
        source="docs/field-facts.md (The machine); 128 GB LPDDR5X unified, 119 GiB visible "
               "to CUDA, 273 GB/s"),
    "h100": Machine(
        id="h100", gpu="NVIDIA H100", compute_capability=(9, 0), memory_gib=79.2,
        bandwidth_gbs=3350.0, unified_memory=False, fraction_cap=0.88,
        cap_reason="leave about 10 GB for activations and the CUDA context on an 80 GB "
                   "card, as SGLang's own automatic value does",
        fraction_default=None,
        default_reason="SGLang's automatic value for a card over 60 GB (10 GB reserved, "
                       "arg_groups/memory_hook.py), held under this machine's cap",
        max_gpus=8,
        source="docs/real-sglang-h200.md (H100 80GB HBM3: 81,559 MiB, 79.2 GiB visible to "
               "CUDA, 3.35 TB/s)"),
    "h200": Machine(
        id="h200", gpu="NVIDIA H200", compute_capability=(9, 0), memory_gib=139.8,
        bandwidth_gbs=4800.0, unified_memory=False, fraction_cap=0.92,
        cap_reason="leave room for activations and the CUDA context on a 141 GB card",
        fraction_default=None,
        default_reason="SGLang's automatic value for a card over 60 GB (10 GB reserved, "
                       "arg_groups/memory_hook.py), held under this machine's cap",
        max_gpus=8,
        source="docs/real-sglang-h200.md; 141 GB HBM3e (139.8 GiB visible), 4.8 TB/s"),
}


def machine(name: str) -> Machine:
    """The profile named ``name``; an unknown name is refused naming the known ones."""
    if name not in MACHINES:
        raise UserError(f"--machine {name!r}: unknown machine; expected one of "
                        f"{', '.join(MACHINES)}")
    return MACHINES[name]


def sglang_auto_fraction(m: Machine, gpus: int = 1) -> float:
    """SGLang 0.5.23's automatic --mem-fraction-static for this card
    (``arg_groups/memory_hook.py``): ``reserved = 512 + max(chunked, 2048) x 1.5 +
    tp x pp / 8 x 1024`` MB (graph reserve aside), at least 10 GB above 60 GB of memory;
    ``round((capacity - reserved) / capacity, 3)``."""
    capacity_mb = m.memory_gib * 1024
    reserved = 512 + 8192 * 1.5 + gpus / 8 * 1024
    if capacity_mb > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    return round((capacity_mb - reserved) / capacity_mb, 3)
