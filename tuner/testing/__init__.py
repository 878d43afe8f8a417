"""Contract suites and helpers for implementations of the tool's interfaces, importable like
``optuna.testing``: an engine adapter subclasses :class:`EngineContract`, a trial runner
:class:`RunnerContract`, provides the fixtures they name, and pytest runs the shared tests.
Needs pytest (the ``dev`` extra); nothing in the tool imports this package."""

from tuner.testing.engine_contract import EngineContract
from tuner.testing.runner_contract import RunnerContract
from tuner.testing.runner_contract import drain
from tuner.testing.runner_contract import servers_tagged
from tuner.testing.runner_contract import wait_for


__all__ = ["EngineContract", "RunnerContract", "drain", "servers_tagged", "wait_for"]
