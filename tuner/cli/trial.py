"""``tuner trial``: run one configuration end to end and say what really happened."""

from __future__ import annotations

from pathlib import Path

import typer

from tuner.cli import _engine_options as sim_options
from tuner.cli._common import finite
from tuner.cli._common import header_value


def trial(
    space_file: Path = typer.Argument(..., metavar="SPACE", help="search-space YAML file"),
    set_: list[str] = typer.Option(None, "--set", metavar="KNOB=VALUE",
                                   help="repeatable; other knobs keep their baseline value"),
    engine: str = typer.Option("auto", help="auto, sglang, or sim[:fork|stock|fork-unshared]"),
    engine_command: str = typer.Option(None, help="SGLang entry point (default: the space's)"),
    gsm8k: str = typer.Option(None, envvar="TUNER_GSM8K", help="folder with GSM8K test.jsonl "
                              "and train.jsonl, or 'online' to fetch the public files"),
    workload: str = typer.Option(None, help="gsm8k (math), code, chat, mix, synthetic or "
                                 "jsonl (default: the space's)"),
    mix: str = typer.Option(None, help="a mixed workload's class shares, e.g. "
                            "code=0.6,chat=0.4 (classes math, code, chat)"),
    prompts: Path = typer.Option(None, help="the jsonl workload's prompts file (one "
                                 "{\"prompt\": ...} object a line)"),
    questions: int = typer.Option(None, min=1, help="requests measured (GSM8K subset size)"),
    max_tokens: int = typer.Option(None, min=1, help="generation cap per request"),
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
    check_engine: bool = typer.Option(True, help="check the engine knows every flag and env var "
                               "first (tuner doctor)"),
    workdir: Path = typer.Option(Path("trials/runs"), help="where server logs go"),
    api_key: str = typer.Option(None, envvar="TUNER_API_KEY", callback=header_value,
                                help="start servers with this --api-key and send it (or "
                                "TUNER_API_KEY); never stored"),
    out: Path = typer.Option(None, help="write the TrialResult JSON here"),
    json_: bool = typer.Option(False, "--json", help="print the TrialResult JSON"),
) -> None:
    """Launch one configuration, prove each knob took effect, measure TPOT and accuracy, gate.

    Exit code 0 when the trial ran and passed the gate, 1 when it failed or was gated.
    """
    from tuner.cli._common import load_checked_space
    from tuner.cli._common import parse_sets
    from tuner.cli._common import workload_with
    from tuner.cli._engine_options import choose_engine
    from tuner.cli._engine_options import engine_capabilities
    from tuner.cli._trial_report import print_result
    from tuner.errors import UserError
    from tuner.trial import TrialOptions
    from tuner.trial import TrialResult
    from tuner.trial import queue_notes
    from tuner.trial import run_trial

    if out is not None:               # written at the end: a bad path is refused first
        from tuner.cli._common import check_target

        check_target("--out", out)
    choice = choose_engine(engine, engine_command=engine_command, time_scale=time_scale,
                           noise=noise, sim_seed=seed or 0, sim_faults=sim_faults, gsm8k=gsm8k,
                           sim_profiles=sim_profiles)
    space = load_checked_space(space_file, choice.engine)
    config = choice.engine.resolve(space, parse_sets(space, set_))
    wl = workload_with(space, kind=workload, mix=mix, path=str(prompts) if prompts else None,
                       questions=questions, max_tokens=max_tokens, concurrency=concurrency,
                       seed=seed, regimes=regime)
    choice = choice.for_users(wl.peak_users)
    if wl.regimes and not json_:
        for line in queue_notes(wl.regimes, choice.engine.plan(space, config).max_running):
            typer.echo(f"note: {line}", err=True)
    base = None
    if baseline is not None:
        try:
            base = TrialResult.model_validate_json(baseline.read_text())
        except (OSError, ValueError) as exc:
            raise UserError(f"--baseline {baseline}: not a TrialResult ({exc.__class__.__name__})"
                            ) from None
    caps = engine_capabilities(choice, space) if check_engine else None
    timeout = startup_timeout or choice.default_startup_timeout()
    opts = TrialOptions(
        workdir=workdir, workload=wl, gsm8k=gsm8k, startup_timeout_s=timeout,
        capabilities=caps, api_key=api_key,
        baseline_per_question=base.aggregates.per_question if base and base.aggregates else None)
    if choice.note and not json_:
        typer.echo(choice.note, err=True)
    result = run_trial(space, choice.engine, config, opts)
    if json_:
        typer.echo(result.model_dump_json(indent=2))
    else:
        print_result(result)
    if out is not None:               # after the result is shown: a bad --out loses nothing
        from tuner.cli._common import writing

        with writing("--out", out):
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(result.model_dump_json(indent=2))
    raise typer.Exit(0 if result.feasible else 1)
