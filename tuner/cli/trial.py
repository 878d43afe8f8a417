"""``tuner trial``: run one configuration end to end and say what really happened."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from tuner.cli import _args as args
from tuner.cli import _engine_options as sim_options
from tuner.cli._common import finite


if TYPE_CHECKING:
    from tuner.trial import TrialResult


def trial(
    ctx: typer.Context,
    space_file: Path = typer.Argument(..., metavar="SPACE", help="search-space YAML file"),
    set_: list[str] = typer.Option(None, "--set", metavar="KNOB=VALUE",
                                   help="repeatable; other knobs keep their baseline value"),
    engine: str = args.ENGINE,
    engine_command: str = args.ENGINE_COMMAND,
    gsm8k: str = args.GSM8K,
    workload: str = args.WORKLOAD,
    mix: str = typer.Option(None, help="a mixed workload's class shares, e.g. "
                            "code=0.6,chat=0.4 (classes math, code, chat)"),
    prompts: Path = typer.Option(None, help="the jsonl workload's prompts file (one "
                                 "{\"prompt\": ...} object a line)"),
    questions: int = typer.Option(None, min=1, help="requests measured (GSM8K subset size)"),
    max_tokens: int = args.MAX_TOKENS,
    concurrency: int = typer.Option(None, min=1, help="requests in flight (default 1)"),
    regime: list[str] = typer.Option(None, help="a load also measured after the workload "
                                     "(repeatable; replaces the space's): NAME:USERS[:"
                                     "p95_tpot_ms=MS,p95_ttft_s=S,requests=N]"),
    seed: int = typer.Option(None, min=0, max=2**32 - 1, help="workload seed"),
    baseline: Path = typer.Option(None, help="a baseline TrialResult JSON: gate the accuracy "
                                  "drop against its per-question results"),
    startup_timeout: float = typer.Option(None, min=1.0, callback=finite,
                                          help="seconds to wait for readiness "
                                          "(default 1800; scaled down for the simulator)"),
    time_scale: float = sim_options.TIME_SCALE,
    noise: float = sim_options.NOISE,
    sim_faults: str = sim_options.SIM_FAULTS,
    sim_profiles: Path = sim_options.SIM_PROFILES,
    check_engine: bool = args.CHECK_ENGINE,
    workdir: Path = args.WORKDIR,
    api_key: str = args.API_KEY,
    out: Path = typer.Option(None, help="write the TrialResult JSON here"),
    json_: bool = typer.Option(False, "--json", help="print the TrialResult JSON"),
) -> None:
    """Launch one configuration, prove each knob took effect, measure TPOT and accuracy, gate.

    Exit code 0 when the trial ran and passed the gate, 1 when it failed or was gated.
    """
    from tuner.cli._args import TrialArgs
    from tuner.cli._common import load_checked_space
    from tuner.cli._common import parse_sets
    from tuner.cli._common import workload_with
    from tuner.cli._engine_options import choose_engine
    from tuner.cli._engine_options import engine_capabilities
    from tuner.cli._trial_report import print_result
    from tuner.trial import TrialOptions
    from tuner.trial import queue_notes
    from tuner.trial import run_trial

    a = TrialArgs.from_cli_args(ctx.params)
    if a.out is not None:             # written at the end: a bad path is refused first
        from tuner.cli._common import check_target

        check_target("--out", a.out)
    choice = choose_engine(a.engine, engine_command=a.engine_command, time_scale=a.time_scale,
                           noise=a.noise, sim_seed=a.seed or 0, sim_faults=a.sim_faults,
                           gsm8k=a.gsm8k, sim_profiles=a.sim_profiles)
    space = load_checked_space(a.space_file, choice.engine)
    config = choice.engine.resolve(space, parse_sets(space, list(a.set_)))
    wl = workload_with(space, kind=a.workload, mix=a.mix,
                       path=str(a.prompts) if a.prompts else None, questions=a.questions,
                       max_tokens=a.max_tokens, concurrency=a.concurrency, seed=a.seed,
                       regimes=list(a.regime))
    choice = choice.for_users(wl.peak_users)
    if wl.regimes and not a.json_:
        for line in queue_notes(wl.regimes, choice.engine.plan(space, config).max_running):
            typer.echo(f"note: {line}", err=True)
    base = _baseline(a.baseline)
    caps = engine_capabilities(choice, space) if a.check_engine else None
    timeout = a.startup_timeout or choice.default_startup_timeout()
    opts = TrialOptions(
        workdir=a.workdir, workload=wl, gsm8k=a.gsm8k, startup_timeout_s=timeout,
        capabilities=caps, api_key=a.api_key,
        baseline_per_question=base.aggregates.per_question if base and base.aggregates else None)
    if choice.note and not a.json_:
        typer.echo(choice.note, err=True)
    result = run_trial(space, choice.engine, config, opts)
    if a.json_:
        typer.echo(result.model_dump_json(indent=2))
    else:
        print_result(result)
    if a.out is not None:             # after the result is shown: a bad --out loses nothing
        from tuner.cli._common import writing

        with writing("--out", a.out):
            a.out.parent.mkdir(parents=True, exist_ok=True)
            a.out.write_text(result.model_dump_json(indent=2))
    raise typer.Exit(0 if result.feasible else 1)


def _baseline(path: Path | None) -> TrialResult | None:
    """``--baseline``'s TrialResult (None without one); a file that is none is exit 2."""
    from tuner.errors import UserError
    from tuner.trial import TrialResult

    if path is None:
        return None
    try:
        return TrialResult.model_validate_json(path.read_text())
    except (OSError, ValueError) as exc:
        raise UserError(f"--baseline {path}: not a TrialResult ({exc.__class__.__name__})"
                        ) from None
