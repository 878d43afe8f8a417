"""SGLang's resolution rules, applied at canonicalisation, and the evidence of fixed flags.

One function per rule (docs/sglang-facts.md, "Resolution rules"); :data:`RULES` applies
them in order:

* :func:`_rule_speculation_off` - without ``--speculative-algorithm`` every other
  ``--speculative-*`` setting is ignored, so those knobs are dropped;
* :func:`_rule_humming_only` - ``SGLANG_HUMMING_*`` env vars only matter with
  ``--moe-runner-backend humming``, so knobs that only set them are dropped otherwise;
* :func:`_rule_fp8_excludes_fp32_lm_head` - a quantized LM head takes precedence over
  ``--enable-fp32-lm-head``, so FP8 clears the FP32 knob;
* :func:`_rule_default_speculative_params` - EAGLE-family speculation without steps takes
  SGLang's automatic (3, 1, 4) and rejects a topk or draft count given without steps;
* :func:`_rule_topk1_forces_draft_tokens` - with ``--speculative-eagle-topk 1`` SGLang forces
  ``--speculative-num-draft-tokens`` to steps + 1;
* :func:`_rule_draft_tree_fits` - a draft count larger than the EAGLE tree of (steps, topk)
  holds is refused (SGLang accepts the flags and crashes at the first decode); a sampler's
  proposal is repaired instead (``SGLangEngine.repair``);
* the block-draft rules (DSPARK, DFLASH) and the ReplaySSM ring, in
  :mod:`tuner.engines._sglang_block_draft`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tuner.engines._base import KnobEvidence
from tuner.engines._sglang_flags import FLAGS
from tuner.engines._sglang_flags import flags_for
from tuner.engines._sglang_speculative import EAGLE_FAMILY
from tuner.errors import ConfigError
from tuner.space import SearchSpace


ALGORITHM = "--speculative-algorithm"
STEPS = "--speculative-num-steps"
TOPK = "--speculative-eagle-topk"
DRAFT_TOKENS = "--speculative-num-draft-tokens"
MOE_BACKEND = "--moe-runner-backend"
FP32_LM_HEAD = "--enable-fp32-lm-head"
FP8_LM_HEAD_ENV = "SGLANG_ENABLE_FP8_LM_HEAD"
HUMMING_ENV_PREFIX = "SGLANG_HUMMING_"


def truthy_env(value: str | None) -> bool:
    return value is not None and value.strip().lower() in ("1", "true", "yes", "on")


class View:
    """The flags and env a (partial) configuration sends, with the knob each came from."""

    def __init__(self, space: SearchSpace, values: dict[str, Any]) -> None:
        self.flags: dict[str, Any] = dict(space.spec.fixed_flags)
        self.env: dict[str, str] = dict(space.spec.fixed_env)
        self.flag_owner: dict[str, str] = {}
        for name, value in values.items():
            c = space.contribution(name, value)
            for flag, v in c.flags.items():
                self.flags[flag] = v
                self.flag_owner[flag] = name
            self.env.update(c.env)

    def flag(self, name: str) -> Any:
        v = self.flags.get(name)
        return None if v is False else v


def knob_flags(space: SearchSpace, name: str) -> set[str]:
    """Every flag knob ``name`` can send, over all its values."""
    k = space.knob(name)
    if k.flag is not None:
        return {k.flag}
    return {f for c in (k.values or {}).values() for f in c.flags}


def _knob_envs(space: SearchSpace, name: str) -> set[str]:
    k = space.knob(name)
    if k.env is not None:
        return {k.env}
    return {e for c in (k.values or {}).values() for e in c.env}


def _rule_speculation_off(space: SearchSpace, values: dict[str, Any]) -> None:
    if View(space, values).flag(ALGORITHM) is not None:
        return
    for name in list(values):
        flags = knob_flags(space, name)
        if (flags and ALGORITHM not in flags and not _knob_envs(space, name)
                and all(f.startswith("--speculative-") for f in flags)):
            del values[name]


def _rule_humming_only(space: SearchSpace, values: dict[str, Any]) -> None:
    if View(space, values).flag(MOE_BACKEND) == "humming":
        return
    for name in list(values):
        envs = _knob_envs(space, name)
        if (envs and not knob_flags(space, name)
                and all(e.startswith(HUMMING_ENV_PREFIX) for e in envs)):
            del values[name]


def _rule_fp8_excludes_fp32_lm_head(space: SearchSpace, values: dict[str, Any]) -> None:
    if not truthy_env(View(space, values).env.get(FP8_LM_HEAD_ENV)):
        return
    for name, value in list(values.items()):
        k = space.knob(name)
        if k.type == "bool" and k.flag == FP32_LM_HEAD and value:
            values[name] = False


def _rule_default_speculative_params(space: SearchSpace, values: dict[str, Any]) -> None:
    view = View(space, values)
    algo = view.flag(ALGORITHM)
    if algo is None or str(algo).upper() not in EAGLE_FAMILY or view.flag(STEPS) is not None:
        return
    given = [f for f in (TOPK, DRAFT_TOKENS) if view.flag(f) is not None]
    if given:
        raise ConfigError(
            f"{' and '.join(given)} without {STEPS}: SGLang 0.5.23 fails this with an "
            f"AssertionError; give the draft steps too"
        )


def _rule_topk1_forces_draft_tokens(space: SearchSpace, values: dict[str, Any]) -> None:
    view = View(space, values)
    algo = view.flag(ALGORITHM)
    if algo is None or str(algo).upper() not in EAGLE_FAMILY:
        return
    steps, topk = view.flag(STEPS), view.flag(TOPK)
    if steps is None or topk is None or int(topk) != 1:
        return
    owner = view.flag_owner.get(DRAFT_TOKENS)
    if owner is not None and space.knob(owner).flag == DRAFT_TOKENS:
        values[owner] = int(steps) + 1


def draft_tree_capacity(steps: int, topk: int) -> int:
    """Draft tokens an EAGLE tree of ``steps`` draft steps and top-k ``topk`` can offer.

    SGLang 0.5.17 and 0.5.23 alike: the draft loop scores ``topk`` candidates at step 0 and
    ``topk * topk`` at each later step (``sglang/srt/speculative/spec_utils.py``,
    ``_select_top_k_tokens_first`` / ``_select_top_k_tokens_later``), and
    ``organize_draft_results`` (``sglang/srt/speculative/eagle_utils.py``) takes
    ``torch.topk(scores, num_draft_tokens - 1)`` over them. One more token, the root, is
    the verified one: ``--speculative-num-draft-tokens`` may be at most ``1 + capacity``.
    """
    return topk + (steps - 1) * topk * topk


def tree_overflow(space: SearchSpace, values: dict[str, Any]) -> tuple[str, int, str] | None:
    """(owning knob, largest draft count, reason) when the draft tree cannot be built."""
    view = View(space, values)
    algo, steps, topk, draft = (view.flag(f) for f in (ALGORITHM, STEPS, TOPK, DRAFT_TOKENS))
    if algo is None or str(algo).upper() not in EAGLE_FAMILY:
        return None
    if steps is None or topk is None or draft is None or int(topk) == 1:
        return None
    most = 1 + draft_tree_capacity(int(steps), int(topk))
    if int(draft) <= most:
        return None
    owner = view.flag_owner.get(DRAFT_TOKENS, DRAFT_TOKENS)
    return owner, most, (
        f"{DRAFT_TOKENS} {draft} does not fit the draft tree of {int(steps)} step(s) at "
        f"top-k {int(topk)} (at most {most}): SGLang starts, then its organize_draft_results "
        "fails with 'selected index k out of range'")


def _rule_draft_tree_fits(space: SearchSpace, values: dict[str, Any]) -> None:
    overflow = tree_overflow(space, values)
    if overflow is not None:
        raise ConfigError(overflow[2])


#: Fixed flags whose /server_info field is not the flag's dest: SGLang folds the CUDA-graph
#: settings into the nested ``cuda_graph_config`` (0.5.17 and 0.5.23, seen on both).
_FOLDED_FIELD = {
    f"--cuda-graph-{what}-{phase}": f"cuda_graph_config.{phase}.{field}"
    for phase in ("decode", "prefill")
    for what, field in (("backend", "backend"), ("max-bs", "max_bs"), ("bs", "bs"))
}
#: Fixed flags /server_info does not echo as given (resolved, secret or formatted anew).
_NOT_ECHOED = {ALGORITHM, "--speculative-draft-model-path", "--json-model-override-args",
               "--api-key", "--admin-api-key", "--config", "--model-path", "--host", "--port"}


def fixed_evidence(space: SearchSpace) -> list[KnobEvidence]:
    """Evidence for every fixed flag, as ``(fixed) FLAG``: a server that silently drops one
    (a fork without it, a wrapper that filters flags) shows the default instead."""
    out = []
    for flag, value in space.spec.fixed_flags.items():
        if flag in _NOT_ECHOED or value is None or value is False:
            continue
        known = flags_for(space.spec.engine.version).get(flag) or FLAGS.get(flag)
        field = _FOLDED_FIELD.get(flag) or (known.dest if known is not None and known.dest
                                            else flag[2:].replace("-", "_"))
        if known is not None and known.nargs and not isinstance(value, list):
            value = [value]
        if isinstance(value, str):
            value = space.substitute(value)
        out.append(KnobEvidence(knob=f"(fixed) {flag}", value=value,
                                server_info_if_present={field: value}))
    return out


#: In application order; each mutates the completed configuration in place (the adapter
#: applies the block-draft rules after these).
RULES: tuple[Callable[[SearchSpace, dict[str, Any]], None], ...] = (
    _rule_speculation_off,
    _rule_humming_only,
    _rule_fp8_excludes_fp32_lm_head,
    _rule_default_speculative_params,
    _rule_topk1_forces_draft_tokens,
    _rule_draft_tree_fits,
)
