"""The trial-runner contract: where trials execute while the driver owns the study.

A runner runs :class:`TrialJob` s and reports :class:`Outcome` s; it never touches the study.

* :meth:`TrialRunner.submit` starts a job at once if a slot is free (callers keep at most
  :attr:`TrialRunner.slots` jobs in flight).
* :meth:`TrialRunner.poll` waits up to ``timeout`` seconds and returns every job that ended:
  a ``result`` (the trial's own verdict, failures included), ``worker_lost`` (the process
  running it died: a node loss, an OOM kill), or ``error`` (the runner failed to run it).
* :meth:`TrialRunner.cancel` ends a job now, its server included; the job is not reported by
  a later :meth:`poll`.
* :meth:`TrialRunner.close` cancels what is left and releases the runner's resources.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Any
from typing import Literal

from tuner.engines import Engine
from tuner.space import Config
from tuner.space import SearchSpace
from tuner.trial import TrialOptions
from tuner.trial import TrialResult


@dataclass
class TrialJob:
    key: int                  # the Optuna trial number
    space: SearchSpace
    engine: Engine
    config: Config
    options: TrialOptions
    deadline_s: float         # wall seconds after which the driver cancels it


@dataclass
class Outcome:
    key: int
    kind: Literal["result", "worker_lost", "error", "cancelled"]
    result: TrialResult | None = None
    detail: str | None = None


def execute(job: TrialJob) -> dict[str, Any]:
    """What a worker runs: the whole trial, returned as JSON-able data."""
    from tuner.trial import run_trial

    return run_trial(job.space, job.engine, job.config, job.options).model_dump(mode="json")


class TrialRunner(abc.ABC):
    slots: int

    @abc.abstractmethod
    def submit(self, job: TrialJob) -> None: ...

    @abc.abstractmethod
    def poll(self, timeout: float) -> list[Outcome]: ...

    @abc.abstractmethod
    def cancel(self, key: int) -> None: ...

    @abc.abstractmethod
    def close(self) -> None: ...

    @property
    @abc.abstractmethod
    def inflight(self) -> list[int]: ...


def failed_result(job: TrialJob, reason: str, detail: str) -> TrialResult:
    """The TrialResult of ``job`` when its run brought none back (a lost worker, a
    cancellation, an error of the runner): status ``failed`` with ``reason``."""
    from datetime import UTC
    from datetime import datetime

    from tuner import __version__

    engine, space = job.engine, job.space
    return TrialResult(
        tuner_version=__version__, status="failed", reason=reason,  # type: ignore[arg-type]
        message=detail, space=space.name, machine=space.spec.machine.id,
        config=job.config.as_dict(), config_hash=job.config.hash(),
        plan=engine.plan(space, job.config), engine=engine.name,
        simulated=engine.simulated, workload=job.options.workload.model_dump(),
        started_at=datetime.now(UTC).isoformat(timespec="seconds"), host="?")
