"""SGLang's rules for block-draft speculation (DSPARK, DFLASH) and the ReplaySSM ring.

Read from SGLang 0.5.23's own source (docs/dspark.md gives file and line of each):

* :func:`_rule_block_draft` - under DSPARK (or DFLASH, whose draft proposes a block of
  tokens per round) the draft steps and top-k are forced to 1 (knobs sending them are
  dropped: SGLang warns and overrides), the draft-token count is the verify window (gamma +
  1 for DSPARK) and refused when a knob sets another, and the draft model path is required;
* :func:`_rule_replayssm_spec` - ``--enable-linear-replayssm-spec`` needs a linear draft
  chain (top-k 1), never comes with ``--enable-linear-replayssm``, and a non-static
  ``SGLANG_RAGGED_VERIFY_MODE`` needs DSPARK/DFLASH and a ring-writing verify kernel;
* :func:`_rule_ring_fits` - the ReplaySSM ring of a KDA model: ``--linear-replayssm-cache-len``
  a power of two and at least twice the verify window. SGLang checks it only when it builds
  the memory pool, after the weights load. A length the space does not set is derived
  (:func:`derived_flags`); one it sets is checked here and a sampler's proposal repaired.

A next block-draft algorithm is one row, with its :class:`BlockDraft`, in the adapter's
table of algorithms (:mod:`tuner.engines._sglang_speculative`) and one YAML block in a
space (docs/search-spaces.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tuner.engines._base import KnobEvidence
from tuner.engines._sglang_rules import ALGORITHM
from tuner.engines._sglang_rules import DRAFT_TOKENS
from tuner.engines._sglang_rules import STEPS
from tuner.engines._sglang_rules import TOPK
from tuner.engines._sglang_rules import View
from tuner.engines._sglang_rules import knob_flags
from tuner.engines._sglang_speculative import BLOCK_DRAFTS
from tuner.engines._sglang_speculative import BlockDraft
from tuner.errors import ConfigError
from tuner.space import SearchSpace


DRAFT_PATH = "--speculative-draft-model-path"
REPLAYSSM_SPEC = "--enable-linear-replayssm-spec"
REPLAYSSM_DECODE = "--enable-linear-replayssm"
RING = "--linear-replayssm-cache-len"
VERIFY_BACKEND = "--linear-attn-verify-backend"
VERIFY_MODE_ENV = "SGLANG_RAGGED_VERIFY_MODE"
#: SGLang 0.5.23's default ``--linear-replayssm-cache-len`` (fields/exec_.py)
RING_DEFAULT = 16


def block_draft(view: View) -> BlockDraft | None:
    """The block-draft algorithm ``view`` launches, if any."""
    algo = view.flag(ALGORITHM)
    return BLOCK_DRAFTS.get(str(algo).upper()) if algo is not None else None


def block_size(space: SearchSpace, view: View, algo: BlockDraft) -> int:
    """The block size SGLang resolves: the flag, else the draft checkpoint's (the space's
    ``model.drafts`` entry whose path the launch sends), else SGLang's default."""
    given = view.flag(algo.block_flag)
    if given is not None:
        return int(given)
    path = view.flag(DRAFT_PATH)
    for draft in space.spec.model.drafts.values():
        if (path is not None and space.substitute(str(path)) == draft.path
                and draft.block_size is not None):
            return draft.block_size
    return algo.default_block


def _is_kda(space: SearchSpace) -> bool:
    """Whether the ring rule applies: KDA linear attention (SGLang checks it for KDA pools
    only). A model whose family the space does not state is held to it too."""
    return str(space.spec.model.facts.get("linear_attention", "kda")).lower() != "gdn"


def _power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def ring_length(window: int) -> int:
    """The smallest ring SGLang's KDA pool accepts for a verify window: a power of two, at
    least twice the window, and no smaller than SGLang's default."""
    need = max(RING_DEFAULT, 2 * window)
    return 1 << (need - 1).bit_length()


def ring_violation(space: SearchSpace, values: dict[str, Any]) -> tuple[int, int, str] | None:
    """(given length, smallest valid length, SGLang's rule in words) when the ring a
    configuration sets cannot hold its verify window; None when it fits or is derived."""
    view = View(space, values)
    if not view.flag(REPLAYSSM_SPEC) or view.flag(RING) is None or not _is_kda(space):
        return None
    given = int(view.flag(RING))
    algo = block_draft(view)
    if algo is not None:
        window = algo.window(block_size(space, view, algo))
    elif view.flag(DRAFT_TOKENS) is not None:
        window = int(view.flag(DRAFT_TOKENS))
    else:
        return None
    power = _power_of_two(given)
    if power and given >= 2 * window:
        return None
    sglang_error = (f"spec-verify ring length must be a power of two, got {given}" if not power
                    else f"spec-verify ring too small: {given} < 2 * {window} "
                         "(early-flush margin)")
    return given, ring_length(window), (
        f"{RING} {given} breaks SGLang's ReplaySSM ring rule: on a KDA model the ring must "
        f"be a power of two and at least 2 x the verify window ({window}, so >= "
        f"{2 * window}); SGLang accepts the flags, loads the weights, then fails building "
        f"the memory pool with '{sglang_error}'")


def repair_ring(space: SearchSpace, values: dict[str, Any]) -> tuple[str, Any, str] | None:
    """(knob, value, why) that moves a sampler's proposal off a ring too small for its
    window: the ring-length knob to its smallest valid value, else the block-size knob to
    its largest value whose window the ring holds; None when the ring fits or neither knob
    can."""
    violation = ring_violation(space, values)
    if violation is None:
        return None
    given, least, why = violation
    view = View(space, values)
    owner = view.flag_owner.get(RING)
    if owner in values and space.knob(owner).flag == RING:
        fits = [v for v in space.domain(owner) or []
                if int(v) >= least and _power_of_two(int(v))]
        return (owner, fits[0], why) if fits else None
    algo = block_draft(view)
    owner = view.flag_owner.get(algo.block_flag) if algo is not None else None
    if algo is None or owner not in values or space.knob(owner).flag != algo.block_flag:
        return None
    fits = [v for v in space.domain(owner) or []
            if _power_of_two(given) and 2 * algo.window(int(v)) <= given]
    return (owner, fits[-1], why) if fits else None


def block_drafts_of(space: SearchSpace) -> list[BlockDraft]:
    """The block-draft algorithms a space can launch (what ``tuner doctor`` asks the engine
    about)."""
    sent = [space.spec.fixed_flags.get(ALGORITHM), *(
        v for k in space.knobs.values() for c in (k.values or {}).values()
        for f, v in c.flags.items() if f == ALGORITHM)]
    names = {str(v).upper() for v in sent if v is not None}
    return [BLOCK_DRAFTS[n] for n in sorted(names) if n in BLOCK_DRAFTS]


def _rule_block_draft(space: SearchSpace, values: dict[str, Any]) -> None:
    view = View(space, values)
    algo = block_draft(view)
    if algo is None:
        return
    if view.flag(DRAFT_PATH) is None:
        raise ConfigError(
            f"{algo.name} needs {DRAFT_PATH}: SGLang 0.5.23 fails with 'DSpark dense "
            "speculative decoding requires setting --speculative-draft-model-path' (declare "
            "the draft under model.drafts and send {model.drafts.NAME})")
    block = block_size(space, view, algo)
    if block <= 0:
        raise ConfigError(f"{algo.block_flag} {block}: SGLang requires a positive block size")
    for name in list(values):
        flags = knob_flags(space, name)
        if flags and flags <= {STEPS, TOPK}:
            del values[name]            # forced to 1 (SGLang warns and overrides)
    given = view.flag(DRAFT_TOKENS)
    if given is not None and int(given) != algo.window(block):
        raise ConfigError(algo.mismatch.format(window=algo.window(block), block=block,
                                               given=given))


def _rule_replayssm_spec(space: SearchSpace, values: dict[str, Any]) -> None:
    view = View(space, values)
    if not view.flag(REPLAYSSM_SPEC):
        return
    topk = view.flag(TOPK)
    if topk is not None and int(topk) != 1:
        raise ConfigError(f"{REPLAYSSM_SPEC} requires a linear draft chain ({TOPK} 1): "
                          f"SGLang 0.5.23 refuses top-k {topk} before any algorithm forces it")
    if view.flag(REPLAYSSM_DECODE):
        raise ConfigError(f"{REPLAYSSM_SPEC} and {REPLAYSSM_DECODE} are mutually exclusive "
                          "in SGLang 0.5.23 (they share the ring storage)")
    mode = view.env.get(VERIFY_MODE_ENV)
    if mode is None or mode == "static":
        return
    if mode not in ("cap-accept", "compact"):
        raise ConfigError(f"invalid {VERIFY_MODE_ENV}={mode!r}; SGLang 0.5.23 expects one of "
                          "'static', 'cap-accept', 'compact'")
    algo = block_draft(view)
    verify = view.flag(VERIFY_BACKEND)
    if algo is None or verify not in ("triton", "nv_cutedsl"):
        raise ConfigError(
            f"{REPLAYSSM_SPEC} with {VERIFY_MODE_ENV}={mode} requires DSPARK or DFLASH and "
            f"an explicit {VERIFY_BACKEND} triton or nv_cutedsl (got algorithm "
            f"{view.flag(ALGORITHM)!r}, verify backend {verify!r}): SGLang 0.5.23 refuses "
            "it at start-up")


def _rule_ring_fits(space: SearchSpace, values: dict[str, Any]) -> None:
    violation = ring_violation(space, values)
    if violation is not None:
        raise ConfigError(violation[2])


def derived_flags(space: SearchSpace, values: dict[str, Any]) -> dict[str, Any]:
    """Flags the engine adds to a launch because SGLang needs them and the space leaves
    them to the tuner: the ReplaySSM ring length of a block-draft launch (the smallest
    that holds its verify window; SGLang's default 16 cannot hold DSPARK's gamma 8)."""
    view = View(space, values)
    algo = block_draft(view)
    if algo is None or not view.flag(REPLAYSSM_SPEC) or view.flag(RING) is not None:
        return {}
    return {RING: ring_length(algo.window(block_size(space, view, algo)))}


def block_draft_evidence(space: SearchSpace, values: dict[str, Any]) -> list[KnobEvidence]:
    """What a block-draft launch must show beyond its knobs' own evidence: the values SGLang
    forces or derives (steps and top-k 1, the verify window, the ring) and the draft
    runner's log line (``dspark_worker_v2.py``: ``Initialized DSpark draft runner. ...
    gamma=G, verify_num_draft_tokens=W``)."""
    view = View(space, values)
    algo = block_draft(view)
    if algo is None:
        return []
    block = block_size(space, view, algo)
    window = algo.window(block)
    info: dict[str, Any] = {"speculative_algorithm": algo.name, "speculative_num_steps": 1,
                            "speculative_eagle_topk": 1,
                            "speculative_num_draft_tokens": window}
    if view.flag(REPLAYSSM_SPEC):
        info["enable_linear_replayssm_spec"] = True
        info["linear_replayssm_cache_len"] = int(
            view.flag(RING) or derived_flags(space, values)[RING])
    log = ([rf"Initialized DSpark draft runner\..*gamma={block}, "
            rf"verify_num_draft_tokens={window}\b"] if algo.name == "DSPARK" else [])
    return [KnobEvidence(knob=f"(resolved) {algo.name}", value=f"block {block}",
                         server_info=info, log=log)]


#: Applied after the EAGLE rules, in this order.
BLOCK_DRAFT_RULES: tuple[Callable[[SearchSpace, dict[str, Any]], None], ...] = (
    _rule_block_draft,
    _rule_replayssm_spec,
    _rule_ring_fits,
)
