"""Engine selection shared by ``trial`` and ``sweep``: real SGLang, or the simulator."""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import typer


if TYPE_CHECKING:
    from tuner.engines import Capabilities
    from tuner.engines import Engine
    from tuner.space import SearchSpace


# The simulator's options, declared once for every command that can launch it (Typer copies
# a declaration before it uses one, so sharing them is safe).
TIME_SCALE = typer.Option(None, min=0.001, max=100000.0,
                          help="simulator: machine seconds per wall second (default 100, "
                          "lowered when several users are served at once)")
NOISE = typer.Option(0.02, min=0.0, max=1.0, help="simulator: per-step timing jitter (sigma)")
SIM_FAULTS = typer.Option(None, help="simulator: TUNER_SIM_FAULTS JSON")
SIM_PROFILES = typer.Option(None, exists=True, file_okay=False,
                            help="simulator: extra profile folder (a twin calibrated by "
                            "tuner probe)")


#: The simulator's fault kinds (``tuner_sim.server.Faults.KINDS``, which this package never
#: imports; a test keeps the two equal).
SIM_FAULT_KINDS = ("crash_at_start", "oom_at_start", "crash_after", "hang", "ignore_flag",
                   "slow_start", "accuracy_drop", "memory_growth")


#: The simulator's time scale at one user at a time (machine seconds per wall second).
DEFAULT_TIME_SCALE = 100.0
#: Users times time scale the simulator serves faithfully: each stream's wall-time cost of
#: serving and reading it is multiplied by the scale into machine time. Measured on the
#: Spark space at 16 users against x1 (docs/simulator.md, "Limits").
LOAD_SCALE_BUDGET = 80.0


def load_time_scale(users: int) -> float:
    """The highest time scale at which ``users`` concurrent streams read like machine time
    (``DEFAULT_TIME_SCALE`` for one user)."""
    return DEFAULT_TIME_SCALE if users <= 1 else min(DEFAULT_TIME_SCALE,
                                                     LOAD_SCALE_BUDGET / users)


@dataclass
class EngineChoice:
    engine: Engine
    simulated: bool
    time_scale: float
    note: str | None = None
    scale_given: bool = False              # the user set --time-scale
    sim_spec: str | None = None            # the simulator's engine name, to rebuild it
    sim_env: dict[str, str] | None = None

    def for_users(self, users: int) -> EngineChoice:
        """This choice for a workload with up to ``users`` requests at once: the simulator
        runs at :func:`load_time_scale` unless the user set a scale (a higher one is kept,
        with a note saying its figures under load read slow)."""
        from tuner.engines import make_engine

        fit = load_time_scale(users)
        if not self.simulated or self.time_scale <= fit or self.sim_env is None:
            return self
        who = f"{users} users at once"
        if self.scale_given:
            note = (f"--time-scale {self.time_scale:g} with {who}: the simulator's figures "
                    f"under load read slow above x{fit:g} (docs/simulator.md, Limits)")
            return replace(self, note=_joined(self.note, note))
        env = {**self.sim_env, "TUNER_SIM_TIME_SCALE": f"{fit:g}"}
        note = (f"time scale x{fit:g} for {who} (x{self.time_scale:g} reads slow under "
                "load; --time-scale sets it)")
        return replace(self, engine=make_engine(self.sim_spec or "sim", sim_env=env),
                       time_scale=fit, note=_joined(self.note, note), sim_env=env)

    def default_startup_timeout(self) -> float:
        """Wall seconds a server may take to be ready: 30 min of machine time, plus slack."""
        return 1800.0 / self.time_scale + 30.0


def _joined(first: str | None, second: str) -> str:
    return f"{first}; {second}" if first else second


def engine_capabilities(choice: EngineChoice, space: SearchSpace) -> Capabilities:
    """Probe the engine the choice launches (tuner doctor's findings); fail if it is absent."""
    from tuner.engines import inspect_engine
    from tuner.errors import UserError

    caps = inspect_engine(choice.engine.entry_command(space))  # type: ignore[attr-defined]
    if not caps.found:
        raise UserError(f"engine not found: {caps.reason} (try --engine sim)")
    if caps.source_root is None:       # said once, here; never a reason to refuse a knob
        import sys

        print("note: the engine's source could not be located from its entry point (it "
              "imports no engine package this tool knows): whether it reads each env var "
              "is unknown, and no knob is refused for it", file=sys.stderr)
    return caps


def check_faults(text: str) -> str:
    """``--sim-faults``: a JSON list of objects with a ``kind`` (the simulator checks the
    rest); a malformed one is a usage error now, not a baseline that fails to start."""
    import json

    from tuner.errors import UserError

    try:
        faults = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserError(f"--sim-faults: not JSON ({exc.msg} at character {exc.pos})"
                        ) from None
    if not isinstance(faults, list) or not all(
            isinstance(f, dict) and isinstance(f.get("kind"), str) for f in faults):
        raise UserError('--sim-faults: expected a JSON list of objects with a "kind", e.g. '
                        '[{"kind": "oom_at_start"}]')
    for f in faults:
        if f["kind"] not in SIM_FAULT_KINDS:
            raise UserError(f"--sim-faults: unknown kind {f['kind']!r}; expected one of "
                            f"{', '.join(SIM_FAULT_KINDS)}")
    return text


def choose_engine(name: str, *, engine_command: str | None, time_scale: float | None,
                  noise: float,
                  sim_seed: int, sim_faults: str | None, gsm8k: str | None,
                  sim_profiles: Path | None = None) -> EngineChoice:
    """``auto`` picks SGLang when it and a GPU are present, else the simulator."""
    import shutil

    from tuner.cli._common import split_command
    from tuner.engines import ENGINES
    from tuner.engines import make_engine

    note = None
    if name == "auto":
        if shutil.which("sglang") and shutil.which("nvidia-smi"):
            name = "sglang"
        else:
            name = "sim"
            note = "no SGLang + GPU here: using the built-in simulator (--engine sim)"
    entry = ENGINES.get(name.partition(":")[0])
    if entry is not None and entry.simulated:
        scale = DEFAULT_TIME_SCALE if time_scale is None else time_scale
        env = {"TUNER_SIM_TIME_SCALE": f"{scale:g}", "TUNER_SIM_NOISE": f"{noise:g}",
               "TUNER_SIM_SEED": str(sim_seed)}
        if gsm8k:
            folder = Path("trials/.cache/gsm8k") if gsm8k == "online" else Path(gsm8k)
            env["TUNER_SIM_GSM8K"] = str(folder.resolve())
        if sim_faults is not None:
            env["TUNER_SIM_FAULTS"] = check_faults(sim_faults)
        if sim_profiles is not None:
            env["TUNER_SIM_PROFILE_DIR"] = str(Path(sim_profiles).resolve())
        return EngineChoice(make_engine(name, sim_env=env), True, scale, note,
                            scale_given=time_scale is not None, sim_spec=name, sim_env=env)
    return EngineChoice(make_engine(name, command=split_command(engine_command)), False, 1.0,
                        note)
