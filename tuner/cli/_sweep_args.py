"""``tuner sweep``'s options as one typed record, built once from what Click parsed (the
command line over the ``--config`` file over the defaults): :meth:`SweepArgs.from_cli_args`,
as vLLM's engine arguments are. Everything after parsing reads these fields, never a dict
of string keys. The options ``tuner trial`` shares are declared once, in
:mod:`tuner.cli._args`' groups."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tuner.cli._args import EngineArgs
from tuner.cli._args import WorkloadArgs


@dataclass(frozen=True, kw_only=True)
class SweepArgs(EngineArgs, WorkloadArgs):
    """One field per option of :func:`tuner.cli.sweep.sweep` (its help says what each
    means) beyond the shared groups; ``None``: not given, the default applies where it is
    used."""

    space_file: Path
    config: Path | None = None
    storage: str | None = None
    study: str | None = None
    artifacts: str | None = None
    trials: int | None = None
    hours: float | None = None
    sampler: str = "tpe"
    seed: int | None = None
    ray_address: str | None = None
    parallel: int | None = None
    trial_timeout: float | None = None
    final_questions: int | None = None
    search_questions: int | None = None
    early_stop: float = 0.0
    break_lock: bool = False

    @property
    def trial_budget(self) -> int | None:
        """``--trials``, or 30 when neither a trial budget nor ``--hours`` is given."""
        return 30 if self.trials is None and self.hours is None else self.trials
