"""Simulated stock SGLang 0.5.23 (no FP8 LM head: the variable is silently ignored).

Run as ``python -m tuner_sim.stock serve <sglang serve flags>``.
"""

from tuner_sim.stock import environ as environ
from tuner_sim.stock import version as version


DESCRIPTION = "Simulated stock SGLang 0.5.23 (no FP8 LM head: the variable is silently ignored)."
#: Whether the NEXTN draft shares the target's whole LM-head module (set_lm_head_from_target).
LM_HEAD_MODULE_SHARED = True
