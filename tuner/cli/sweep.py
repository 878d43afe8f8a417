"""``tuner sweep``: the overnight search. A persistent Optuna study, trials on Ray."""

from __future__ import annotations

from pathlib import Path

import typer

from tuner.cli import _args as args
from tuner.cli import _engine_options as sim_options
from tuner.cli._common import finite
from tuner.cli._sweep_config import apply_config


def positive_hours(value: float | None) -> float | None:
    """``--hours``: a finite number above 0 (0 would run nothing, inf never stop)."""
    import math

    if value is not None and not (math.isfinite(value) and value > 0):
        raise typer.BadParameter(f"{value:g} is not a finite number of hours above 0")
    return value


def sweep(
    ctx: typer.Context,
    space_file: Path = typer.Argument(..., metavar="SPACE", help="search-space YAML file "
                                      "(or 'space:' in the --config file)"),
    config: Path = typer.Option(None, "--config", is_eager=True, callback=apply_config,
                                help="a YAML file of sweep options (trials: 200, "
                                "ray-address: auto, ...; space: for SPACE); the command line "
                                "overrides it (docs/sweep.md)"),
    engine: str = args.ENGINE,
    engine_command: str = args.ENGINE_COMMAND,
    storage: str = typer.Option(None, help="Optuna storage URL (sqlite:///..., "
                                "postgresql://...) or a journal file path; default "
                                "trials/<study>.db"),
    study: str = typer.Option(None, help="study name (default: the space's name)"),
    artifacts: str = typer.Option(None, help="artifact folder (default: next to the study)"),
    trials: int = typer.Option(None, min=1, help="stop after this many launches in the study "
                               "(the baseline and the finals' re-launches of the finalists, "
                               "the last fifth, included; a resumed sweep counts earlier "
                               "ones)"),
    hours: float = typer.Option(None, callback=positive_hours,
                                help="stop starting trials after this long "
                                "(the last fifth re-launches the finalists)"),
    sampler: str = typer.Option("tpe", help="tpe (multivariate, grouped), tpe-independent, "
                                "nsga2, gp (needs torch), random, grid; each after the "
                                "search plan's screens (docs/sweep.md)"),
    seed: int = typer.Option(None, min=0, max=2**32 - 1, help="sampler seed"),
    ray_address: str = typer.Option(None, help="default: start a local Ray instance; 'auto' "
                                    "or host:port joins a cluster; 'none': no Ray, trials "
                                    "in local processes"),
    parallel: int = typer.Option(None, min=1, help="trials at once (default: free GPUs, or "
                                 "half the CPUs for the simulator)"),
    gsm8k: str = args.GSM8K,
    workload: str = args.WORKLOAD,
    mix: str = typer.Option(None, help="tune for a mix of content classes, weighting each "
                            "class's TPOT by its share: e.g. code=0.6,chat=0.4 (classes "
                            "math, code, chat)"),
    regime: list[str] = typer.Option(None, help="a load each launch also measures, after "
                                     "its workload (repeatable; replaces the space's "
                                     "workload.regimes): NAME:USERS[:p95_tpot_ms=MS,"
                                     "p95_ttft_s=S,requests=N], e.g. sixteen:16:"
                                     "p95_tpot_ms=120"),
    questions: int = typer.Option(None, min=1, help="requests measured per trial (the GSM8K "
                                  "subset size; a mix's total)"),
    max_tokens: int = args.MAX_TOKENS,
    time_scale: float = sim_options.TIME_SCALE,
    noise: float = sim_options.NOISE,
    sim_faults: str = sim_options.SIM_FAULTS,
    sim_profiles: Path = sim_options.SIM_PROFILES,
    trial_timeout: float = typer.Option(None, min=1.0, callback=finite, help="wall seconds "
                                        "before a trial is cancelled (default 6 h; scaled "
                                        "down for the simulator)"),
    startup_timeout: float = typer.Option(None, min=1.0, callback=finite, help="wall seconds "
                                          "a server may take to be ready (default 1800; "
                                          "scaled for the simulator)"),
    final_questions: int = typer.Option(None, min=0, max=1319, help="GSM8K questions of "
                                        "every finals launch and of one more baseline "
                                        "launch, gated against each other (a drop the "
                                        "small screening sample cannot see); only what "
                                        "passes can be the pick; default: sized from the "
                                        "space's gate and --questions (stated at the "
                                        "start); 0: none"),
    search_questions: int = typer.Option(None, min=1, help="measure each search trial on "
                                         "only the first N of the --questions (a cheaper "
                                         "first fidelity); the baseline and the finals "
                                         "measure all of them (default: all)"),
    early_stop: float = typer.Option(0.0, min=0.0, max=0.9, help="judge each search trial "
                                     "after this share of its workload and stop it there "
                                     "when it is clearly slower than the best so far or its "
                                     "speculation collapsed (0: off; e.g. 0.25)"),
    break_lock: bool = typer.Option(False, help="take over a study whose driver died on "
                                    "another host"),
    check_engine: bool = args.CHECK_ENGINE,
    workdir: Path = args.WORKDIR,
    api_key: str = args.API_KEY,
) -> None:
    """Search the space: trial 0 is the baseline, then the sampler proposes; every trial is
    launched, proven, measured and gated; the study survives crashes and resumes.

    Exit code 0 when the budget is spent (or Ctrl-C, 130), 1 when the baseline failed, 2 for
    a usage error.
    """
    from tuner.cli._sweep_run import run_sweep

    run_sweep(ctx)
