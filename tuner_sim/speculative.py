"""The speculative algorithms the simulator serves: one registry entry each.

An entry says how the algorithm's round is costed and how its acceptance is read (its
:class:`Shape`: a draft tree of ``steps`` forwards, or one forward drafting a block), which
draft it runs (its kind: the checkpoint's own MTP layer, or an external dense checkpoint),
and under which key its profile data lives: the draft in ``Model.drafts``, the fixed costs
in ``Machine.drafts``, the acceptance table in ``Model.acceptance.algorithms``
(:mod:`tuner_sim.profiles`). Adding an algorithm is an entry in :data:`ALGORITHMS` plus
that profile data (docs/simulator.md, "Adding a speculative algorithm"); the performance,
memory and tensor-parallel models and the server read the entry, never its name.

What SGLang does with an algorithm's flags before it runs (``_handle_dspark``'s gamma, the
EAGLE family's automatic steps) stays in :mod:`tuner_sim.args`, as 0.5.23 resolves it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Any

from tuner_sim.profiles import DenseDraft
from tuner_sim.profiles import Draft
from tuner_sim.profiles import Model
from tuner_sim.profiles import MtpDraft


if TYPE_CHECKING:
    from tuner_sim.perf import PerfModel
    from tuner_sim.perf import Settings


class Shape:
    """How one round of an algorithm is costed and how far its drafts can be accepted."""

    #: CUDA graph sets the draft adds to the target's (the memory model's graph memory)
    graph_sets: int = 0

    def drafted(self, s: Settings) -> int:
        """Draft tokens proposed per round (what one verify can accept at most)."""
        raise NotImplementedError

    def round_ms(self, pm: PerfModel, context: float, overlap: float, batch: int) -> float:
        """Machine time of one round: the draft's forwards, the verify, the fixed cost."""
        raise NotImplementedError

    def reach(self, pm: PerfModel) -> tuple[int, float, int]:
        """(depths drafted, the tree's effective width, depths the draft can be accepted
        at): the per-position acceptance reads these."""
        raise NotImplementedError

    def graph_phases(self, algo: Algorithm, s: Settings, args: dict[str, Any]
                     ) -> list[tuple[str, int]]:
        """The draft's CUDA graph captures the start-up log shows: (phase, tokens per
        request)."""
        raise NotImplementedError

    def num_steps(self, s: Settings) -> int:
        """``sglang:spec_num_steps``: draft forwards per round."""
        raise NotImplementedError


class Tree(Shape):
    """EAGLE's draft tree: ``steps`` draft forwards (the first of one token, the rest of
    top-k), then one verify of the draft tokens; the tree's width widens each depth's
    chance (``acceptance.topk_width_exponent``)."""

    graph_sets = 3

    def drafted(self, s: Settings) -> int:
        return s.steps

    def round_ms(self, pm: PerfModel, context: float, overlap: float, batch: int) -> float:
        s = pm.s
        drafts = pm.draft_ms(1, context, overlap, batch)
        drafts += (s.steps - 1) * pm.draft_ms(s.topk, context, overlap, batch)
        return (drafts + pm.forward_ms(s.draft_tokens, context, overlap, batch)
                + pm.costs.round_ms)

    def reach(self, pm: PerfModel) -> tuple[int, float, int]:
        s = pm.s
        # The verify window holds draft_tokens nodes (root included): no path through it
        # is deeper than draft_tokens - 1, and what is left over widens the tree.
        depth = max(0, min(s.steps, s.draft_tokens - 1))
        width = min(float(s.topk), max(1.0, (s.draft_tokens - 1) / max(depth, 1)))
        return depth, width ** pm.model.acceptance.topk_width_exponent, depth

    def graph_phases(self, algo: Algorithm, s: Settings, args: dict[str, Any]
                     ) -> list[tuple[str, int]]:
        return [("draft decode", args["speculative_eagle_topk"]),
                ("draft extend", args["speculative_num_draft_tokens"])]

    def num_steps(self, s: Settings) -> int:
        return s.steps


class Block(Shape):
    """A block draft: one forward proposes ``gamma`` tokens, then one verify of the
    window; a linear chain (no tree), and depths past the draft's trained block size are
    never accepted (docs/simulator.md)."""

    graph_sets = 1

    def drafted(self, s: Settings) -> int:
        return s.gamma

    def round_ms(self, pm: PerfModel, context: float, overlap: float, batch: int) -> float:
        return (pm.draft_ms(pm.s.gamma, context, overlap, batch)
                + pm.forward_ms(pm.s.gamma + pm.s.algo.window_extra, context, overlap, batch)
                + pm.costs.round_ms)

    def reach(self, pm: PerfModel) -> tuple[int, float, int]:
        d = pm.draft
        trained = d.block_size if isinstance(d, DenseDraft) and d.block_size else pm.s.gamma
        return pm.s.gamma, 1.0, trained

    def graph_phases(self, algo: Algorithm, s: Settings, args: dict[str, Any]
                     ) -> list[tuple[str, int]]:
        return [(algo.graph_label, s.gamma)]

    def num_steps(self, s: Settings) -> int:
        return 1


TREE, BLOCK = Tree(), Block()


@dataclass(frozen=True)
class Algorithm:
    """One speculative algorithm as the simulator serves it."""

    #: the key of its profile data: ``Model.drafts``, ``Machine.drafts``,
    #: ``Model.acceptance.algorithms``; also what the tool launches it as
    key: str
    #: ``--speculative-algorithm`` after SGLang's resolution (``/server_info``)
    resolved: str
    #: every ``--speculative-algorithm`` value that serves it (upper case)
    launched: tuple[str, ...]
    shape: Shape
    #: the draft's kind: its profile's class (``mtp``: the checkpoint's own layer, read
    #: from the target's path; ``dense``: an external checkpoint at the draft path)
    draft_kind: type[MtpDraft] | type[DenseDraft]
    #: the draft projects through the target's LM-head module (a fork without the
    #: module fix reads its FP8 weights as BF16: accept length 1.00)
    shares_head_module: bool
    #: why a launch is refused when the model has no such draft ({arch}, {path})
    missing: str
    #: a block draft's gamma in its checkpoint's config.json, first found wins
    block_keys: tuple[str, ...] = ()
    #: SGLang's gamma when neither the flag nor the draft's config gives one
    default_block: int | None = None
    #: a block draft's verify window: gamma + this (DSPARK: the anchor token)
    window_extra: int = 0
    #: the draft's CUDA graph phase in the start-up log (a block draft's)
    graph_label: str = ""
    #: the line SGLang logs when the draft runner starts, if it logs one
    startup_log: Callable[[dict[str, Any], Settings, Model], str] | None = None

    @property
    def external(self) -> bool:
        """Whether the draft is a checkpoint of its own (``--speculative-draft-model-path``
        names it), not the target's layers."""
        return self.draft_kind is DenseDraft

    def draft_of(self, model: Model) -> Draft | None:
        return model.drafts.get(self.key)


def _dspark_log(a: dict[str, Any], s: Settings, model: Model) -> str:
    """0.5.23's ``dspark_worker_v2.py`` start-up line."""
    d = model.drafts.get("DSPARK")
    return (f"Initialized DSpark draft runner. attention_backend={a['attention_backend']},"
            f" model={d.architecture if isinstance(d, DenseDraft) else 'DSparkDraftModel'}, "
            f"gamma={s.gamma}, verify_num_draft_tokens={s.gamma + 1}, "
            f"query_token_num={s.gamma + 1}, sample_from_anchor=False, "
            f"mask_token_id={model.vocab_size - 1}, markov_head=Linear")


#: Every algorithm the simulator serves, by its profiles' key. SGLang 0.5.23 knows more
#: (``args.SPEC_ALGORITHMS``); those are refused at start-up as not modelled.
ALGORITHMS: dict[str, Algorithm] = {
    "NEXTN": Algorithm(
        "NEXTN", "EAGLE", ("NEXTN", "EAGLE"), TREE, MtpDraft, shares_head_module=True,
        missing="{arch} at {path} has no NEXTN (MTP) layer (config.json: no "
                "num_nextn_predict_layers); NEXTN drafts with it (an external EAGLE-3 "
                "draft launches as EAGLE3)"),
    "EAGLE3": Algorithm(
        "EAGLE3", "EAGLE3", ("EAGLE3",), TREE, DenseDraft, shares_head_module=False,
        missing="no EAGLE3 draft profile matches {path}"),
    "DSPARK": Algorithm(
        "DSPARK", "DSPARK", ("DSPARK",), BLOCK, DenseDraft, shares_head_module=False,
        missing="no DSPARK draft profile matches {path}",
        block_keys=("dspark_block_size", "block_size"), default_block=7, window_extra=1,
        graph_label="DSpark draft", startup_log=_dspark_log),
}


_LAUNCHED = {name: a for a in ALGORITHMS.values() for name in a.launched}
_RESOLVED = {a.resolved: a for a in ALGORITHMS.values()}


def launched(name: str | None) -> Algorithm | None:
    """The algorithm ``--speculative-algorithm name`` serves; None: none, or one the
    simulator does not model."""
    return _LAUNCHED.get((name or "").upper())


def resolved(name: str) -> Algorithm | None:
    """The algorithm whose resolved name (``/server_info``'s) is ``name``."""
    return _RESOLVED.get(name)


def block_of(model: Model, name: str | None) -> int | None:
    """The block size the draft of ``--speculative-algorithm name`` declares in the
    model's profile (None: not a block draft, or no draft)."""
    algo = launched(name)
    d = algo.draft_of(model) if algo is not None else None
    return d.block_size if isinstance(d, DenseDraft) else None
