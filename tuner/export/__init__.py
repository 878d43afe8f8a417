"""Launch profiles exported from a study, and checks of running servers against them."""

from tuner.export._profile import load_result
from tuner.export._profile import pick_trial
from tuner.export._profile import result_of
from tuner.export._profile import write_profile
from tuner.export._verify import Check
from tuner.export._verify import verify


__all__ = ["Check", "load_result", "pick_trial", "result_of", "verify", "write_profile"]
