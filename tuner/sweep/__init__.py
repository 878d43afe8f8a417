"""The sweep: the driver that schedules trials on a runner (local processes or Ray) until
the budget is spent. Reading and writing the study is :mod:`tuner.study`'s."""

from tuner.sweep._base import Outcome
from tuner.sweep._base import TrialJob
from tuner.sweep._base import TrialRunner
from tuner.sweep._driver import Driver
from tuner.sweep._driver import FatalSweepError
from tuner.sweep._final_sample import beside_size as beside_final_size
from tuner.sweep._final_sample import default_size as default_final_size
from tuner.sweep._local import LocalRunner
from tuner.sweep._progress import Progress
from tuner.sweep._ray import RayRunner
from tuner.sweep._ray import check_address
from tuner.sweep._settings import SweepSettings
from tuner.sweep._signals import terminated


__all__ = [
           "Driver",
           "FatalSweepError",
           "LocalRunner",
           "Outcome",
           "Progress",
           "RayRunner",
           "SweepSettings",
           "TrialJob",
           "TrialRunner",
           "beside_final_size",
           "check_address",
           "default_final_size",
           "terminated",
]
