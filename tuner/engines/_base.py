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
* :meth:`Engine.protocol` speaks the running server's API (:class:`ServerProtocol`): every
  endpoint and field name of the engine lives there, none in the trial pipeline.
* :meth:`ServerProtocol.stream` reports each request's verify rounds in the engine-neutral
  :class:`Completion` (``verify_rounds``; its ``accept_length``), so the trial pipeline
  reads no engine field name.
* :meth:`Engine.profile_files` writes what serves a measured plan again (SGLang: a
  ``--config`` YAML, an env file and ``launch.sh``).

An engine is built by name through the registry (``tuner.engines._registry``: one
``register`` call). ``tuner.testing.engine_contract`` is the shared test suite every
implementation passes (docs/architecture.md: what a second engine adds).
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Any

from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field

from tuner.engines._host import Host
from tuner.engines._host import MemoryNeed
from tuner.space import Config
from tuner.space import SearchSpace
from tuner.workloads import Prompt


if TYPE_CHECKING:
    import httpx


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
    #: Requests the server runs at once when the launch caps it (None: the engine decides)
    max_running: int | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"


class RequestFailed(Exception):
    """A request failed (connection lost, HTTP error, malformed stream)."""


@dataclass
class Completion:
    """One streamed request as the engine reported it. Times are wall seconds from sending
    the request to the arrival of the first and of the last chunk (the client's clock)."""

    text: str
    completion_tokens: int
    prompt_tokens: int
    first_s: float
    end_s: float
    cached_tokens: int | None = None
    verify_rounds: int | None = None      # speculative verify rounds of this request
    finish_reason: str | None = None

    @property
    def accept_length(self) -> float | None:
        """Tokens accepted per verify round (None: the request was not speculative)."""
        return self.completion_tokens / self.verify_rounds if self.verify_rounds else None


class ServerProtocol(abc.ABC):
    """How the tool talks to a running server of one engine: readiness, the settings it
    resolved, metrics, streamed generation, and what its start-up failures mean.

    Contract: :meth:`stream` sends one prompt, times its chunks on the client and returns
    a :class:`Completion` or raises :class:`RequestFailed`; it never retries. Every field
    name and endpoint of the engine's API lives in the implementation.
    """

    #: GET path answering 200 once the server is ready to serve
    health_path: str

    @abc.abstractmethod
    def server_info(self, client: httpx.Client) -> dict[str, Any]:
        """Every setting the server resolved (the evidence the effect check reads); raises
        ``httpx.HTTPStatusError`` for an error answer (a 401: wrong API key)."""

    @abc.abstractmethod
    def kept_info(self, info: dict[str, Any]) -> dict[str, Any]:
        """The part of :meth:`server_info` a TrialResult keeps."""

    @abc.abstractmethod
    def version(self, info: dict[str, Any]) -> str | None:
        """The engine version the running server reports."""

    def time_scale(self, info: dict[str, Any]) -> float:
        """Wall seconds x this = machine seconds (1 for a real server)."""
        return 1.0

    def twin(self, info: dict[str, Any]) -> str | None:
        """What a simulated server's figures rest on (``calibrated``, or ``DERIVED`` from the
        model's config.json); None for a real server."""
        return None

    def kv_tokens(self, info: dict[str, Any]) -> int | None:
        """Tokens the server's KV pool holds (its capacity), when it says."""
        return None

    def metrics(self, client: httpx.Client) -> dict[str, float]:
        """Counters the server exports (empty when it has none)."""
        return {}

    def batch_load(self, log_text: str) -> tuple[int, int] | None:
        """The most requests running at once and the most waiting in its queue, as the
        server's periodic batch lines in ``log_text`` say; None when they say nothing."""
        return None

    @abc.abstractmethod
    def stream(self, client: httpx.Client, prompt: Prompt) -> Completion:
        """Send ``prompt`` and follow its stream to the end."""

    @abc.abstractmethod
    def classify_exit(self, log_tail: str) -> str:
        """Failure reason (``oom``, ``unsupported_knob``, ``launch_error``) of a server that
        exited during start-up, from its last log lines."""

    @abc.abstractmethod
    def last_error_line(self, log_tail: str) -> str:
        """The line of ``log_tail`` that says what went wrong."""


class Engine(abc.ABC):
    """Turns configurations of a search space into launches of one kind of server."""

    #: Short name shown to people and stored with results (``sglang``, ``sim``).
    name: str
    #: Whether its servers answer from a model (the simulator) rather than a GPU: results
    #: say so, and their figures are machine time (``time_scale``).
    simulated: bool = False
    #: Machine seconds per wall second of this engine's servers, as far as it is known
    #: before a server says (the simulator's time scale; 1 for a real engine). A running
    #: server's own figure (:meth:`ServerProtocol.time_scale`) takes its place; a start-up
    #: that fails before it is read is converted with this one.
    time_scale: float = 1.0

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

    @abc.abstractmethod
    def protocol(self) -> ServerProtocol:
        """How to talk to a server this engine launched."""

    @abc.abstractmethod
    def profile_files(self, plan: LaunchPlan, *, entry: list[str], model_path: str,
                      header: str) -> dict[str, str]:
        """The files that serve ``plan`` again without the tool: file name -> text. One of
        them is ``launch.sh``, which runs ``entry`` (the command the trial was measured
        with); ``header`` is a comment saying where the profile came from."""

    @staticmethod
    def entry_point(argv: list[str]) -> list[str]:
        """The command a launch ran (``sglang serve``, a fork's script, the simulator's
        ``python -m ...``): the argv before its first ``--`` option."""
        first = next((i for i, tok in enumerate(argv) if tok.startswith("--")), len(argv))
        return argv[:first]

    def secret_args(self, api_key: str | None) -> list[str]:
        """Arguments that give the server ``api_key``; added at launch, never to a plan."""
        return []

    def repair(self, space: SearchSpace, values: dict[str, Any]) -> tuple[dict[str, Any],
                                                                          str | None]:
        """A sampler's proposal moved off what the server is known to crash on, and why
        (None: unchanged). :meth:`canonicalize` refuses such values; a search repairs them
        so that a sampled region the engine cannot run becomes its nearest runnable point."""
        return values, None

    def launch_host(self, plan: LaunchPlan) -> Host:
        """The host ``plan``'s server is about to run on, read through its meminfo file (the
        unified-memory guard's ``MemAvailable``): called once, just before the launch, on
        the machine that launches it. The default is that machine's ``/proc/meminfo``."""
        return Host()

    def memory_need(self, space: SearchSpace, plan: LaunchPlan, *, available_gib: float,
                    visible_gib: float | None) -> MemoryNeed | None:
        """The peak host memory ``plan``'s server will hold on a unified-memory host with
        ``available_gib`` free (``visible_gib``: the memory CUDA sees); None when the
        engine cannot say (the guard then refuses nothing and says so)."""
        return None

    def resolve(self, space: SearchSpace, assigned: dict[str, Any]) -> Config:
        """Complete ``assigned`` from the baseline and canonicalise it."""
        return self.canonicalize(space, space.complete(assigned))
