"""What one SGLang launch will hold of a unified-memory host at its peak (the guard's
prediction; docs/trials.md, "The unified-memory guard").

SGLang's accounting (docs/sglang-facts.md, "Memory"): ``--mem-fraction-static f`` reserves
``f x`` the GPU's free memory before the load (``free0``) for the weights, the draft's
weights, the KV pool, the KDA state and the ReplaySSM ring (all carved from that one
budget: a draft or a ring shrinks the KV pool, it does not add to it); the weights load in
full before the budget is checked, so it is at least the weights. Outside it: the CUDA
graphs, the activation workspace of a prefill chunk and SGLang's own processes. On unified
memory ``free0`` is at most the host's ``MemAvailable`` (ASSUMED: CUDA on a GB10 reports the
host's free memory as the GPU's) and at most the memory the space says CUDA sees.

Every figure is from the launch's argv and the space (machine memory, model and draft
weights); the constants below are stated assumptions, not measurements.
"""

from __future__ import annotations

from typing import Any

from tuner.engines._host import MemoryNeed
from tuner.engines._sglang_block_draft import DRAFT_PATH
from tuner.engines._sglang_block_draft import REPLAYSSM_SPEC
from tuner.engines._sglang_block_draft import RING
from tuner.engines._sglang_rules import ALGORITHM
from tuner.engines._sglang_speculative import spec_algorithm
from tuner.space import SearchSpace


#: GiB one captured CUDA graph (one batch size, one graph set) holds outside the pool.
#: ASSUMED: the ~0.12 GB a batch-1 decode graph of a MoE model's capture log reports.
GRAPH_GIB = 0.12
#: GiB SGLang's processes (tokenizer manager, scheduler, detokenizer: Python, torch, the
#: CUDA context) hold outside the pool. ASSUMED.
PROCESSES_GIB = 3.0
#: Activation workspace per token of the largest prefill chunk, in bytes per unit of the
#: hidden size: a few dozen hidden-size BF16 buffers. ASSUMED (about 1 GiB for a chunk of
#: 8,192 tokens at hidden size 2,560).
WORKSPACE_BYTES_PER_TOKEN_HIDDEN = 48
DEFAULT_HIDDEN = 4096
#: The batch sizes SGLang captures up to the decode max batch size when none are listed.
CAPTURE_BS = (1, 2, 4, *range(8, 257, 8), *range(272, 513, 16))
GIB = 1024**3


def flag_values(argv: list[str]) -> dict[str, list[str]]:
    """Each ``--flag`` of ``argv`` with the values that follow it (empty: store-true)."""
    out: dict[str, list[str]] = {}
    flag: str | None = None
    for tok in argv:
        if tok.startswith("--"):
            flag = tok
            out[flag] = []
        elif flag is not None:
            out[flag].append(tok)
    return out


def _one(flags: dict[str, list[str]], name: str) -> str | None:
    values = flags.get(name)
    return values[0] if values else None


def _number(flags: dict[str, list[str]], name: str) -> float | None:
    try:
        v = _one(flags, name)
        return float(v) if v is not None else None
    except ValueError:
        return None


def _bracket(visible_gib: float, values: tuple[float, float, float, float, float]) -> float:
    """SGLang's default by GPU memory (GB): under 20, 20-35, 35-60, 60-160, from 160."""
    gb = visible_gib * GIB / 1e9
    for bound, value in zip((20, 35, 60, 160), values, strict=False):
        if gb < bound:
            return value
    return values[-1]


def _graphs(flags: dict[str, list[str]], visible_gib: float) -> int:
    """CUDA graphs the launch captures: batch sizes x graph sets (target; a NEXTN/EAGLE
    draft adds its decode and extend graphs, DSPARK its draft graph: the algorithm's
    ``graph_sets``, :mod:`tuner.engines._sglang_speculative`)."""
    if "--disable-cuda-graph" in flags or _one(flags, "--cuda-graph-backend-decode") in (
            "disabled", "none"):
        return 0
    listed = flags.get("--cuda-graph-bs-decode")
    if listed:
        sizes = len(listed)
    else:
        most = _number(flags, "--cuda-graph-max-bs-decode") or _bracket(
            visible_gib, (8, 48, 32, 256, 512))
        running = _number(flags, "--max-running-requests")
        most = min(most, running) if running else most
        sizes = sum(1 for b in CAPTURE_BS if b <= most) or 1
    algo = (_one(flags, ALGORITHM) or "").upper()
    known = spec_algorithm(algo)
    sets = known.graph_sets if known else 1 if algo in ("", "NONE", "NGRAM") else 3
    return sizes * sets


def _draft_weights(space: SearchSpace, flags: dict[str, list[str]]) -> float | None:
    path = _one(flags, DRAFT_PATH)
    for d in space.spec.model.drafts.values():
        if path is not None and space.substitute(d.path) == path:
            return d.weights_gib
    return None


def memory_need(space: SearchSpace, argv: list[str], available_gib: float,
                visible_gib: float | None) -> MemoryNeed:
    """The peak host memory of the launch ``argv`` on a unified-memory host with
    ``available_gib`` free; ``visible_gib``: what CUDA sees (the space's machine memory,
    else the host's total)."""
    flags = flag_values(argv)
    visible = visible_gib if visible_gib is not None else available_gib
    f = _number(flags, "--mem-fraction-static")
    auto = f is None
    if f is None:       # SGLang's own choice: about (capacity - 10 GB) / capacity above 60 GB
        f = max(0.5, (visible - 10.0) / visible) if visible > 0 else 0.9
    free0 = min(visible, available_gib)
    budget = f * free0
    model = space.spec.model
    weights, draft = model.weights_gib, _draft_weights(space, flags)
    terms: dict[str, float] = {}
    notes = [f"--mem-fraction-static {'auto, about ' if auto else ''}{f:g} of "
             f"{free0:.1f} GiB free before the load = {budget:.1f} GiB"]
    if weights is not None and weights + (draft or 0.0) > budget:
        terms["weights"] = weights
        if draft:
            terms["draft"] = draft
        notes.append("the weights exceed the fraction's budget (they load in full first)")
    elif weights is not None:
        terms["weights"] = weights
        if draft:
            terms["draft"] = draft
        terms["kv_pool"] = budget - weights - (draft or 0.0)
    else:
        terms["budget"] = budget
    if REPLAYSSM_SPEC in flags:
        notes.append(f"the ReplaySSM ring ({_one(flags, RING) or 'default'} positions) is "
                     "part of the KV pool and state")
    graphs = _graphs(flags, visible)
    terms["cuda_graphs"] = graphs * GRAPH_GIB
    chunk = _number(flags, "--chunked-prefill-size") or _bracket(
        visible, (2048, 4096, 4096, 8192, 16384))
    hidden = _fact(model.facts, "hidden_size") or DEFAULT_HIDDEN
    terms["workspace"] = max(chunk, 1) * hidden * WORKSPACE_BYTES_PER_TOKEN_HIDDEN / GIB
    terms["processes"] = PROCESSES_GIB
    notes.append(f"{graphs} CUDA graph(s), a prefill chunk of {chunk:g} tokens")
    return MemoryNeed(terms=terms, notes=notes)


def _fact(facts: dict[str, Any], key: str) -> float | None:
    v = facts.get(key)
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) and v > 0 else None
