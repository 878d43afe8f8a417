"""Workloads trials are measured on: the :class:`Workload` contract, its implementations
(GSM8K few-shot, HumanEval code, prose chat, a mix of them, synthetic token ids, a user's
JSONL prompts), the vocabulary bound of synthetic prompts and the sandbox HumanEval's tests
run in (:func:`run_sandboxed`)."""

from __future__ import annotations

from tuner.errors import UserError
from tuner.space import Workload as WorkloadSettings
from tuner.workloads import gsm8k
from tuner.workloads import humaneval
from tuner.workloads._base import Context
from tuner.workloads._base import Prepared
from tuner.workloads._base import Prompt
from tuner.workloads._base import Sampling
from tuner.workloads._base import Workload
from tuner.workloads._gsm8k import Gsm8k
from tuner.workloads._jsonl import JsonlPrompts
from tuner.workloads._mix import Mix
from tuner.workloads._prose_code import Chat
from tuner.workloads._prose_code import Code
from tuner.workloads._sandbox import Isolation
from tuner.workloads._sandbox import SandboxLimits
from tuner.workloads._sandbox import SandboxRun
from tuner.workloads._sandbox import isolation
from tuner.workloads._sandbox import run_sandboxed
from tuner.workloads._synthetic import Synthetic
from tuner.workloads.vocab import synthetic_id_range
from tuner.workloads.vocab import vocab_size


#: ``workload.kind`` -> implementation. A new workload is one module and one line here.
KINDS: dict[str, type[Workload]] = {w.kind: w for w in (Gsm8k, Code, Chat, Mix, Synthetic,
                                                         JsonlPrompts)}


def make_workload(settings: WorkloadSettings, context: Context | None = None) -> Workload:
    """The workload ``settings.kind`` names, with its outside ``context``."""
    try:
        cls = KINDS[settings.kind]
    except KeyError:
        raise UserError(f"workload kind {settings.kind!r}: expected one of "
                        f"{', '.join(KINDS)}") from None
    return cls(settings, context or Context())


__all__ = ["KINDS", "Context", "Isolation", "Prepared", "Prompt", "Sampling", "SandboxLimits",
           "SandboxRun", "Workload", "gsm8k", "humaneval", "isolation", "make_workload",
           "run_sandboxed", "synthetic_id_range", "vocab_size"]
