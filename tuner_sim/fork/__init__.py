"""Simulated Ling fork of SGLang (FP8 LM head;
the draft shares the target's LM-head module).

Run as ``python -m tuner_sim.fork serve <sglang serve flags>``.
"""

from tuner_sim.fork import environ as environ
from tuner_sim.fork import version as version


DESCRIPTION = (
    "Simulated Ling fork of SGLang (FP8 LM head; the draft shares the "
    "target's LM-head module)."
)
#: Whether the NEXTN draft shares the target's whole LM-head module (set_lm_head_from_target).
LM_HEAD_MODULE_SHARED = True
