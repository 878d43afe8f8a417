"""SGLang's speculative algorithms, one table: what the adapter sends for each, what
``/server_info`` reports back, which draft it runs and how ``tuner init`` recognises that
draft.

Every other part of the adapter reads this table: the resolution rules (the EAGLE
family's automatic steps, :mod:`tuner.engines._sglang_rules`; a block draft's window,
:mod:`tuner.engines._sglang_block_draft`), the CUDA graphs a launch captures
(:mod:`tuner.engines._sglang_memory`), the kernels an EAGLE draft worker needs
(:mod:`tuner.engines._sglang_kernels`), the knob ``tuner init`` writes
(:mod:`tuner.engines._sglang_init`) and its ``--draft`` reader (``tuner.models``). Adding
an algorithm is a row here (docs/simulator.md, "Adding a speculative algorithm"); the
simulator's own table is ``tuner_sim/speculative.py``, and a test keeps the two alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any
from typing import Literal


@dataclass(frozen=True)
class BlockDraft:
    """An external-draft algorithm whose draft proposes a block of tokens in one forward
    (SGLang 0.5.23: ``_handle_dspark`` / ``_handle_dflash`` in
    ``sglang/srt/arg_groups/speculative_hook.py``)."""

    name: str
    #: the flag that sets the block size
    block_flag: str
    #: SGLang's block size when neither the flag nor the draft checkpoint gives one
    default_block: int
    #: verify window = block size + this (DSPARK: gamma drafted + the anchor; DFLASH: 0)
    window_extra: int
    #: SGLang's words when the draft-token count is given and differs from the window
    mismatch: str

    def window(self, block: int) -> int:
        return block + self.window_extra

    @property
    def knob(self) -> str:
        """The block-size knob ``tuner init`` writes (``dspark_block_size``)."""
        return self.block_flag.removeprefix("--speculative-").replace("-", "_")

    @property
    def field(self) -> str:
        """The flag's ``/server_info`` field."""
        return self.block_flag.removeprefix("--").replace("-", "_")


@dataclass(frozen=True)
class SpecAlgorithm:
    """One ``--speculative-algorithm`` value as the adapter sends it."""

    name: str
    #: ``/server_info``'s ``speculative_algorithm`` once SGLang resolved it
    reports: str
    #: ``eagle``: SGLang's EAGLE draft worker, a draft tree (steps, top-k, draft tokens);
    #: ``block``: one draft forward proposes a block (:attr:`block` holds its rules)
    worker: Literal["eagle", "block"]
    #: ``checkpoint``: the target's own MTP layers (``--speculative-draft-model-path`` is
    #: the model); ``external``: a draft checkpoint of its own (``model.drafts.NAME``)
    draft: Literal["checkpoint", "external"]
    #: CUDA graph sets a launch captures with it (target included): the host-memory guard
    graph_sets: int
    #: the architectures (``fnmatch`` patterns) of an external draft's config.json that
    #: ``tuner init --draft`` reads as this algorithm's draft; none: it does not offer it
    draft_architectures: tuple[str, ...] = ()
    #: how ``tuner init`` names such a draft in a refusal
    label: str = ""
    #: where a draft's config.json declares its block size, first found wins (dotted:
    #: nested); what SGLang reads when no flag sets it
    block_keys: tuple[str, ...] = ()
    block: BlockDraft | None = None
    #: other ``--speculative-algorithm`` values SGLang runs the same way (EAGLE: NEXTN's)
    aliases: tuple[str, ...] = ()

    @property
    def offered(self) -> bool:
        """Whether ``tuner init`` writes it into a space (its draft can be found)."""
        return self.draft == "checkpoint" or bool(self.draft_architectures)

    def drafts_with(self, architecture: str) -> bool:
        return any(fnmatchcase(architecture, p) for p in self.draft_architectures)


#: Every speculative algorithm the adapter knows, in the order ``tuner init`` offers them.
SPEC_ALGORITHMS: dict[str, SpecAlgorithm] = {a.name: a for a in (
    SpecAlgorithm("NEXTN", "EAGLE", "eagle", "checkpoint", 3, aliases=("EAGLE",)),
    SpecAlgorithm("EAGLE3", "EAGLE3", "eagle", "external", 3, ("*Eagle3",),
                  "an EAGLE-3 draft"),
    SpecAlgorithm(
        "DSPARK", "DSPARK", "block", "external", 2, ("*DSparkModel", "DSparkDraftModel"),
        "a DSpark draft", ("dspark_block_size", "block_size", "dspark_config.block_size"),
        BlockDraft("DSPARK", "--speculative-dspark-block-size", 7, 1,
                   "DSpark speculative_num_draft_tokens must equal gamma + 1 (= {window} for "
                   "gamma={block}), but got speculative_num_draft_tokens={given}")),
    # rules only: no draft reader (tuner init does not offer it), nor a simulator model;
    # its CUDA graphs are not read from SGLang (charged as the EAGLE worker's)
    SpecAlgorithm(
        "DFLASH", "DFLASH", "block", "external", 3,
        block=BlockDraft("DFLASH", "--speculative-dflash-block-size", 16, 0,
                         "DFLASH speculative_num_draft_tokens must equal the block size "
                         "({window}), but got speculative_num_draft_tokens={given}")),
)}

#: Values SGLang treats as the EAGLE family (defaults (3, 1, 4), max running reqs 48).
EAGLE_FAMILY = frozenset(n for a in SPEC_ALGORITHMS.values() if a.worker == "eagle"
                         for n in (a.name, *a.aliases))

#: The block-draft algorithms' rules, by name.
BLOCK_DRAFTS: dict[str, BlockDraft] = {
    a.name: a.block for a in SPEC_ALGORITHMS.values() if a.block is not None}


def spec_algorithm(value: object) -> SpecAlgorithm | None:
    """The table's row for a ``--speculative-algorithm`` value (any case, an alias too)."""
    up = str(value).upper()
    return next((a for a in SPEC_ALGORITHMS.values() if up in (a.name, *a.aliases)), None)


def _si(name: str, value: object) -> dict[str, Any]:
    return {"server_info": {name: value}}


def tree_knobs(algos: list[str], chain: bool = False
               ) -> list[tuple[str, dict[str, Any], list[str]]]:
    """The EAGLE worker's draft-tree knobs ``tuner init`` writes for ``algos`` (name, body,
    comment lines): draft steps and, unless the draft is searched as a chain (top-k 1),
    top-k and the verify window."""
    when = {"speculative": algos[0] if len(algos) == 1 else algos}
    steps = ("spec_steps", {
        "type": "int", "lossless": True, "help": "draft steps per speculative round",
        "low": 1, "high": 5, "default": 3, "when": when, "flag": "--speculative-num-steps",
        "evidence": _si("speculative_num_steps", "{value}")},
        ["default 3: SGLang's automatic (steps, top-k, draft) = (3, 1, 4)"
         + ("; top-k 1 is sent with NEXTN, the verify window follows as steps + 1"
            if chain else "")])
    if chain:
        return [steps]
    return [
        steps,
        ("spec_topk", {"type": "categorical", "lossless": True, "help": "EAGLE top-k "
         "branching of the draft tree", "choices": [1, 2, 4], "default": 1, "when": when,
         "flag": "--speculative-eagle-topk", "evidence": _si("speculative_eagle_topk",
                                                               "{value}")}, []),
        ("spec_draft_tokens", {"type": "int", "lossless": True, "help": "verify window "
         "(tokens verified per round); forced to steps + 1 when topk is 1", "low": 2,
         "high": 8, "default": 4, "when": when, "flag": "--speculative-num-draft-tokens",
         "evidence": _si("speculative_num_draft_tokens", "{value}")}, []),
    ]


def block_knob(block: BlockDraft, size: int) -> dict[str, Any]:
    """The body of a block draft's block-size knob (``dspark_block_size``), its default
    the block the draft declares."""
    return {"type": "int", "lossless": True, "help": f"{block.name}'s block size gamma, the "
            f"tokens drafted per round (verify window gamma + {block.window_extra})",
            "low": 2, "high": max(12, size), "default": size,
            "when": {"speculative": block.name}, "flag": block.block_flag,
            "evidence": _si(block.field, "{value}")}
