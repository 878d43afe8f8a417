"""The sweep: the driver that runs a searcher's suggestions on a runner (local processes or
Ray) until the budget is spent, through its scheduler. Reading and writing the study is
:mod:`tuner.study`'s; a searcher only reads it."""

from tuner.sweep._base import Outcome
from tuner.sweep._base import TrialJob
from tuner.sweep._base import TrialRunner
from tuner.sweep._driver import Driver
from tuner.sweep._driver import FatalSweepError
from tuner.sweep._final_sample import beside_size as beside_final_size
from tuner.sweep._final_sample import default_size as default_final_size
from tuner.sweep._local import LocalRunner
from tuner.sweep._policy import SearchPolicy
from tuner.sweep._progress import Progress
from tuner.sweep._ray import RayRunner
from tuner.sweep._ray import check_address
from tuner.sweep._searcher import Ask
from tuner.sweep._searcher import Planned
from tuner.sweep._searcher import Remeasure
from tuner.sweep._searcher import Searcher
from tuner.sweep._searcher import Suggestion
from tuner.sweep._searcher import Turn
from tuner.sweep._searcher import Wait
from tuner.sweep._settings import SweepSettings
from tuner.sweep._signals import terminated


__all__ = [
           "Ask",
           "Driver",
           "FatalSweepError",
           "LocalRunner",
           "Outcome",
           "Planned",
           "Progress",
           "RayRunner",
           "Remeasure",
           "SearchPolicy",
           "Searcher",
           "Suggestion",
           "SweepSettings",
           "TrialJob",
           "TrialRunner",
           "Turn",
           "Wait",
           "beside_final_size",
           "check_address",
           "default_final_size",
           "terminated",
]
