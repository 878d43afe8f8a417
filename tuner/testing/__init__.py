"""Contract suites and helpers for implementations of the tool's interfaces, importable like
``optuna.testing``: an engine adapter subclasses :class:`EngineContract`, a trial runner
:class:`RunnerContract`, a searcher :class:`SearcherContract`; each provides the fixtures
its suite names, and pytest runs the shared tests. Needs pytest (the ``dev`` extra);
nothing in the tool imports this package."""

from tuner.testing.engine_contract import EngineContract
from tuner.testing.runner_contract import RunnerContract
from tuner.testing.runner_contract import drain
from tuner.testing.runner_contract import servers_tagged
from tuner.testing.runner_contract import wait_for
from tuner.testing.searcher_contract import ReadOnlyStudy
from tuner.testing.searcher_contract import SearcherContract
from tuner.testing.searcher_contract import Watched


__all__ = ["EngineContract", "ReadOnlyStudy", "RunnerContract", "SearcherContract", "Watched",
           "drain", "servers_tagged", "wait_for"]
