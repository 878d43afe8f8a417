"""SGLang's capacity: the most requests a launch runs at once, and the decode CUDA graphs
that must follow it (docs/sglang-facts.md, "Capacity"; docs/search-spaces.md, "Capacity
knobs").

A knob that sets ``--max-running-requests`` serves several users at once only if the
decode graphs cover the batches it runs: SGLang 0.5.23 takes ``--cuda-graph-max-bs-decode``
and ``--cuda-graph-bs-decode`` as given (a batch past the largest captured size runs
without a graph), and caps the graphs' max batch at ``--max-running-requests``
(``arg_groups/cuda_graph_hook.py::_parse_cuda_graph_config``). So the adapter derives both
from the knob's value ``N``: max batch ``N`` and the sizes 1, 2, 4, ... below ``N`` and
``N`` itself (a batch runs in the smallest captured graph that holds it, its rows past the
batch padded: at most twice the rows, with one graph per doubling). A space that fixes
those flags beside such a knob is refused (the fixed value would hold every launch to it).
"""

from __future__ import annotations

from typing import Any

from tuner.engines._base import KnobEvidence
from tuner.engines._sglang_rules import View
from tuner.space import SearchSpace


MAX_RUNNING = "--max-running-requests"
GRAPH_BACKEND = "--cuda-graph-backend-decode"
GRAPH_MAX_BS = "--cuda-graph-max-bs-decode"
GRAPH_BS = "--cuda-graph-bs-decode"
#: the decode-graph flags the adapter derives from a max-running knob
DERIVED = (GRAPH_MAX_BS, GRAPH_BS)


def graph_batch_sizes(most: int) -> list[int]:
    """The decode batch sizes captured for a launch that runs at most ``most`` requests:
    each power of two below it, and ``most``."""
    sizes, b = [], 1
    while b < most:
        sizes.append(b)
        b *= 2
    return [*sizes, most]


def capacity_knob(space: SearchSpace) -> str | None:
    """The knob that sets ``--max-running-requests`` (None: the space fixes it or leaves
    it to SGLang)."""
    for name in space.order:
        k = space.knob(name)
        if k.flag == MAX_RUNNING or any(MAX_RUNNING in c.flags
                                        for c in (k.values or {}).values()):
            return name
    return None


def check_capacity_space(space: SearchSpace) -> None:
    """Refuse a space that fixes the decode graphs beside a max-running knob (located)."""
    owner = capacity_knob(space)
    if owner is None:
        return
    for flag in DERIVED:
        if flag in space.spec.fixed_flags:
            raise space.error(("fixed_flags", flag), (
                f"{flag} is derived from knob {owner!r} ({MAX_RUNNING}): the decode graphs "
                "must cover the batches it runs (docs/search-spaces.md, \"Capacity knobs\"); "
                "remove it from fixed_flags"))


def _most(space: SearchSpace, values: dict[str, Any]) -> int | None:
    view = View(space, values)
    if view.flag_owner.get(MAX_RUNNING) is None or view.flag(GRAPH_BACKEND) == "disabled":
        return None
    most = view.flag(MAX_RUNNING)
    return int(most) if most is not None else None


def capacity_flags(space: SearchSpace, values: dict[str, Any]) -> dict[str, Any]:
    """The decode-graph flags a launch whose ``--max-running-requests`` comes from a knob
    needs: max batch and captured sizes following the knob's value (none otherwise)."""
    most = _most(space, values)
    if most is None:
        return {}
    return {GRAPH_MAX_BS: most, GRAPH_BS: graph_batch_sizes(most)}


def capacity_evidence(space: SearchSpace, values: dict[str, Any]) -> list[KnobEvidence]:
    """What proves the derived graphs: /server_info's ``cuda_graph_config.decode``."""
    most = _most(space, values)
    if most is None:
        return []
    return [KnobEvidence(knob=f"(derived) {GRAPH_MAX_BS}, {GRAPH_BS}", value=most,
                         server_info={"cuda_graph_config.decode.max_bs": most,
                                      "cuda_graph_config.decode.bs": graph_batch_sizes(most)})]


def capacity_knob_block(choices: tuple[int, ...]) -> tuple[dict[str, Any], list[str]]:
    """The body and comment of a generated space's ``max_running`` knob: the maximum of
    running requests, held at its first choice while one user is served (docs/
    search-spaces.md, "Capacity knobs")."""
    return ({"type": "categorical", "help": "--max-running-requests (requests decoded "
             "together; the rest wait in the queue)", "role": "capacity",
             "choices": list(choices), "flag": "--max-running-requests",
             "evidence": {"server_info": {"max_running_requests": "{value}"}}},
            [f"the cookbook's batch-1 cell runs {choices[0]} (the baseline): held there "
             "while one user is served; a load regime of several users searches it",
             "the engine derives the decode graphs from it: --cuda-graph-max-bs-decode N "
             "and --cuda-graph-bs-decode 1 2 4 ... N"])
