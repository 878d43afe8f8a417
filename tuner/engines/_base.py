"""The engine contract: a configuration in, an exact launch out.

An :class:`Engine` is the only place that knows an inference server's flag names and how the
server resolves them. Everything upstream handles knob values; everything downstream handles
a :class:`LaunchPlan`.

Contract of every implementation:

* :meth:`Engine.canonicalize` is idempotent and returns the configuration the server would
  resolve the input to; two inputs with the same canonical form launch the same server.
* :meth:`Engine.plan` is pure: the same space, configuration, host and port always give the
  same argv and env. argv is a list (never a shell string), env holds only what the launch
  adds to the inherited environment.
* :meth:`Engine.validate_space` raises a located :class:`~tuner.errors.SpaceError` for any
  flag or value the engine would reject.
"""

from __future__ import annotations

import abc
from typing import Any

from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field

from tuner.space import Config
from tuner.space import SearchSpace


class KnobEvidence(BaseModel):
    """What must be observed on the running server for one knob value to count as applied."""

    model_config = ConfigDict(frozen=True)

    knob: str
    value: Any
    server_info: dict[str, Any] = Field(default_factory=dict)
    #: Checked only where /server_info shows the field (fixed flags: not every version or
    #: engine reports every setting); a shown value that differs is a mismatch.
    server_info_if_present: dict[str, Any] = Field(default_factory=dict)
    log: list[str] = Field(default_factory=list)
    log_absent: list[str] = Field(default_factory=list)
    none: str | None = None
    note: str | None = None
    requires_env: list[str] = Field(
        default_factory=list, description="env vars this value relies on the engine knowing"
    )
    requires_flags: list[str] = Field(default_factory=list)


class LaunchPlan(BaseModel):
    """Exactly what will be started: argv list, added env, address, and expected evidence."""

    model_config = ConfigDict(frozen=True)

    engine: str
    engine_version: str
    argv: list[str]
    env: dict[str, str]
    host: str
    port: int
    config: dict[str, Any]
    config_hash: str
    evidence: list[KnobEvidence]
    notes: list[str] = Field(default_factory=list)
    #: What the launch turns on, so that nothing outside the engine reads flag names.
    speculative: bool = False
    metrics: bool = False

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"


class Engine(abc.ABC):
    """Turns configurations of a search space into launches of one kind of server."""

    #: Short name shown to people and stored with results (``sglang``, ``sim``).
    name: str

    @abc.abstractmethod
    def validate_space(self, space: SearchSpace) -> None:
        """Raise a located SpaceError for flags or values this engine does not accept."""

    @abc.abstractmethod
    def canonicalize(self, space: SearchSpace, values: dict[str, Any]) -> Config:
        """The configuration the server resolves ``values`` (a completed config) to."""

    @abc.abstractmethod
    def plan(self, space: SearchSpace, config: Config, *, host: str = "127.0.0.1",
             port: int = 30000) -> LaunchPlan:
        """The exact launch of canonical ``config``."""

    def secret_args(self, api_key: str | None) -> list[str]:
        """Arguments that give the server ``api_key``; added at launch, never to a plan."""
        return []

    def repair(self, space: SearchSpace, values: dict[str, Any]) -> tuple[dict[str, Any],
                                                                          str | None]:
        """A sampler's proposal moved off what the server is known to crash on, and why
        (None: unchanged). :meth:`canonicalize` refuses such values; a search repairs them
        so that a sampled region the engine cannot run becomes its nearest runnable point."""
        return values, None

    def resolve(self, space: SearchSpace, assigned: dict[str, Any]) -> Config:
        """Complete ``assigned`` from the baseline and canonicalise it."""
        return self.canonicalize(space, space.complete(assigned))
