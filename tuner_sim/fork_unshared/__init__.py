"""Simulated Ling fork before the LM-head sharing fix:
with an FP8 head the MTP draft reads FP8 weights as BF16 (accept length 1.00).

Run as ``python -m tuner_sim.fork_unshared serve <sglang serve flags>``.
"""

from tuner_sim.fork_unshared import environ as environ
from tuner_sim.fork_unshared import version as version


DESCRIPTION = (
    "Simulated Ling fork before the LM-head sharing fix: with an FP8 head "
    "the MTP draft reads FP8 weights as BF16 (accept length 1.00)."
)
#: Whether the NEXTN draft shares the target's whole LM-head module (set_lm_head_from_target).
LM_HEAD_MODULE_SHARED = False
