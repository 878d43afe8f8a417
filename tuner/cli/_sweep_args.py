"""``tuner sweep``'s options as one typed record, built once from what Click parsed (the
command line over the ``--config`` file over the defaults): :meth:`SweepArgs.from_cli_args`,
as vLLM's engine arguments are. Everything after parsing reads these fields, never a dict
of string keys."""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import fields
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class SweepArgs:
    """One field per option of :func:`tuner.cli.sweep.sweep` (its help says what each
    means); ``None``: not given, the default applies where it is used."""

    space_file: Path
    config: Path | None = None
    engine: str = "auto"
    engine_command: str | None = None
    storage: str | None = None
    study: str | None = None
    artifacts: str | None = None
    trials: int | None = None
    hours: float | None = None
    sampler: str = "tpe"
    seed: int | None = None
    ray_address: str | None = None
    parallel: int | None = None
    gsm8k: str | None = None
    workload: str | None = None
    mix: str | None = None
    regime: tuple[str, ...] = ()
    questions: int | None = None
    max_tokens: int | None = None
    time_scale: float | None = None
    noise: float = 0.02
    sim_faults: str | None = None
    sim_profiles: Path | None = None
    trial_timeout: float | None = None
    startup_timeout: float | None = None
    final_questions: int | None = None
    search_questions: int | None = None
    early_stop: float = 0.0
    break_lock: bool = False
    check_engine: bool = True
    workdir: Path = Path("trials/runs")
    api_key: str | None = None

    @classmethod
    def from_cli_args(cls, params: dict[str, Any]) -> SweepArgs:
        """From Click's parameters (paths may arrive as text from a ``--config`` file);
        a parameter this record lacks is a programming error, not a user's."""
        known = {f.name for f in fields(cls)}
        unknown = set(params) - known
        if unknown:
            raise TypeError(f"SweepArgs has no field for {sorted(unknown)}")
        values = {k: v for k, v in params.items() if v is not None}
        for key in ("space_file", "config", "workdir", "sim_profiles"):
            if key in values:
                values[key] = Path(values[key])
        values["regime"] = tuple(values.get("regime") or ())
        return cls(**values)

    @property
    def trial_budget(self) -> int | None:
        """``--trials``, or 30 when neither a trial budget nor ``--hours`` is given."""
        return 30 if self.trials is None and self.hours is None else self.trials
