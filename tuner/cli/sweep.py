"""``tuner sweep``: the overnight search. A persistent Optuna study, trials on Ray."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from tuner.cli import _engine_options as sim_options
from tuner.cli._sweep_config import apply_config


def sweep(
    ctx: typer.Context,
    space_file: Path = typer.Argument(..., metavar="SPACE", help="search-space YAML file "
                                      "(or 'space:' in the --config file)"),
    config: Path = typer.Option(None, "--config", is_eager=True, callback=apply_config,
                                help="a YAML file of sweep options (trials: 200, "
                                "ray-address: auto, ...; space: for SPACE); the command line "
                                "overrides it (docs/sweep.md)"),
    engine: str = typer.Option("auto", help="auto, sglang, or sim[:fork|stock|fork-unshared]"),
    engine_command: str = typer.Option(None, help="SGLang entry point (default: the space's)"),
    storage: str = typer.Option(None, help="Optuna storage URL (sqlite:///..., "
                                "postgresql://...) or a journal file path; default "
                                "trials/<study>.db"),
    study: str = typer.Option(None, help="study name (default: the space's name)"),
    artifacts: str = typer.Option(None, help="artifact folder (default: next to the study)"),
    trials: int = typer.Option(None, min=1, help="stop after this many launches in the study "
                               "(the baseline and the finals' re-launches of the finalists, "
                               "the last fifth, included; a resumed sweep counts earlier "
                               "ones)"),
    hours: float = typer.Option(None, min=0.0, help="stop starting trials after this long "
                                "(the last fifth re-launches the finalists)"),
    sampler: str = typer.Option("tpe", help="tpe (multivariate, grouped), tpe-independent, "
                                "nsga2, gp (needs torch), random, grid; each after the "
                                "search plan's screens (docs/sweep.md)"),
    seed: int = typer.Option(None, help="sampler seed"),
    ray_address: str = typer.Option(None, help="default: start a local Ray instance; 'auto' "
                                    "or host:port joins a cluster; 'none': no Ray, trials "
                                    "in local processes"),
    parallel: int = typer.Option(None, min=1, help="trials at once (default: free GPUs, or "
                                 "half the CPUs for the simulator)"),
    gsm8k: str = typer.Option(None, envvar="TUNER_GSM8K", help="folder with GSM8K "
                              "test.jsonl and train.jsonl, or 'online'"),
    workload: str = typer.Option(None, help="gsm8k (math), code, chat, mix, synthetic or "
                                 "jsonl (default: the space's workload.kind)"),
    mix: str = typer.Option(None, help="tune for a mix of content classes, weighting each "
                            "class's TPOT by its share: e.g. code=0.6,chat=0.4 (classes "
                            "math, code, chat)"),
    questions: int = typer.Option(None, min=1, help="requests measured per trial (the GSM8K "
                                  "subset size; a mix's total)"),
    max_tokens: int = typer.Option(None, min=1, help="generation cap per request"),
    time_scale: float = sim_options.TIME_SCALE,
    noise: float = sim_options.NOISE,
    sim_faults: str = sim_options.SIM_FAULTS,
    sim_profiles: Path = sim_options.SIM_PROFILES,
    trial_timeout: float = typer.Option(None, min=1.0, help="wall seconds before a trial is "
                                        "cancelled (default 6 h; scaled down for the "
                                        "simulator)"),
    startup_timeout: float = typer.Option(None, min=1.0, help="wall seconds a server may take "
                                          "to be ready (default 1800; scaled for the "
                                          "simulator)"),
    final_questions: int = typer.Option(None, min=1, max=1319, help="GSM8K questions of every "
                                        "finals launch and of one more baseline launch, "
                                        "gated against each other (a drop the small "
                                        "screening sample cannot see); only what passes can "
                                        "be the pick; default: the screening sample"),
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
    check_engine: bool = typer.Option(True, help="check the engine's flags and env vars "
                                      "first (tuner doctor)"),
    workdir: Path = typer.Option(Path("trials/runs"), help="where server logs go"),
    api_key: str = typer.Option(None, envvar="TUNER_API_KEY", help="start servers with this "
                                "--api-key and send it (or TUNER_API_KEY); never stored"),
) -> None:
    """Search the space: trial 0 is the baseline, then the sampler proposes; every trial is
    launched, proven, measured and gated; the study survives crashes and resumes.

    Exit code 0 when the budget is spent (or Ctrl-C, 130), 1 when the baseline failed, 2 for
    a usage error.
    """
    import sys

    from tuner.cli._common import console
    from tuner.cli._common import load_checked_space
    from tuner.cli._common import workload_with
    from tuner.cli._engine_options import choose_engine
    from tuner.cli._engine_options import engine_capabilities
    from tuner.errors import UserError
    from tuner.study import locate
    from tuner.study import slug
    from tuner.sweep import Driver
    from tuner.sweep import SweepSettings
    from tuner.sweep import check_address
    from tuner.trial import TrialOptions
    from tuner.trial import workload_vocab

    choice = choose_engine(engine, engine_command=engine_command, time_scale=time_scale,
                           noise=noise, sim_seed=seed or 0, sim_faults=sim_faults, gsm8k=gsm8k,
                           sim_profiles=sim_profiles)
    space = load_checked_space(space_file, choice.engine)
    if trials is None and hours is None:
        trials = 30
    name = study or space.name
    location = locate(storage, name, artifacts)
    wl = workload_with(space, kind=workload, mix=mix, questions=questions,
                       max_tokens=max_tokens)
    if search_questions is not None and search_questions > wl.questions:
        raise UserError(f"--search-questions {search_questions} is more than the "
                        f"{wl.questions} questions of each launch (--questions, or the "
                        "space's workload.questions)")
    if (wl.kind == "gsm8k" or "math" in wl.shares()) and gsm8k is None:
        raise UserError("the GSM8K workload needs its data: pass --gsm8k DIR (a folder with "
                        "test.jsonl and train.jsonl) or --gsm8k online")
    caps = engine_capabilities(choice, space) if check_engine else None
    startup = startup_timeout or choice.default_startup_timeout()
    opts = TrialOptions(workdir=workdir / slug(name), workload=wl, gsm8k=gsm8k,
                        startup_timeout_s=startup, capabilities=caps, api_key=api_key)
    opts.vocab_size = workload_vocab(space, opts)   # a user error now, not in every trial
    deadline = trial_timeout or (6 * 3600.0 / choice.time_scale + 120.0)
    settings = SweepSettings(study_name=name, location=location, trials=trials, hours=hours,
                             sampler=sampler, seed=seed, break_lock=break_lock,
                             deadline_s=deadline, early_stop=early_stop,
                             final_questions=final_questions,
                             search_questions=search_questions,
                             options=resolved_options(ctx))

    if ray_address not in (None, "", "none", "auto", "local"):
        check_address(ray_address)       # before the study is touched
    runner = _runner_factory(ray_address, parallel, gpu=not choice.simulated)
    _run(console(), choice, space, name, location, Driver(
        space, choice.engine, opts, settings, runner), sys.stdout.isatty(), storage,
        artifacts)


def _runner_factory(ray_address: str | None, parallel: int | None, *, gpu: bool) -> Any:
    """A runner built lazily: Ray starts only once the driver holds the study's lock."""
    def runner() -> Any:
        if ray_address == "none":
            from tuner.sweep import LocalRunner

            return LocalRunner(slots=parallel or 1)
        from tuner.sweep import RayRunner

        return RayRunner(address=ray_address, gpu=gpu, slots=parallel)

    return runner


def _run(out: Any, choice: Any, space: Any, name: str, location: Any, driver: Any,
         interactive: bool, storage: str | None = None, artifacts: str | None = None) -> None:
    """Header, live progress, the front at the end, then the commands that read the study;
    Ctrl-C exits 130 (resume later)."""
    import shlex

    from tuner.cli._sweep_display import Display
    from tuner.cli._sweep_display import print_front
    from tuner.study import redact_url

    if choice.note:
        out.print(f"[yellow]{choice.note}[/]")
    label = (f"simulated {space.spec.machine.id} (time scale x{choice.time_scale:g})"
             if choice.simulated else space.spec.machine.id)
    url = redact_url(location.storage_url)
    out.print(f"sweep [bold]{name}[/] on {label}, engine {choice.engine.name}; study {url}")
    display = Display(out, interactive=interactive, simulated=choice.simulated)
    driver.on_progress = display.update
    try:
        with display:
            study_obj = driver.run()
    except KeyboardInterrupt:
        out.print("[yellow]interrupted[/]: in-flight trials were stopped and queued again; "
                  "run the same command to resume")
        raise typer.Exit(130) from None
    print_front(out, study_obj, simulated=choice.simulated)
    out.print(f"\nstudy    {url}\nartifacts {location.artifacts}")
    where = [name, *(["--storage", url] if storage else []),
             *(["--artifacts", str(location.artifacts)] if artifacts else [])]
    for i, verb in enumerate(("report", "dashboard", "export")):
        out.print(("next     " if i == 0 else "         ") + shlex.join(["tuner", verb, *where]),
                  highlight=False, markup=False)


def resolved_options(ctx: typer.Context) -> dict[str, Any]:
    """The options this sweep ran with (command line over --config file over defaults), as
    stored with the study: no API key, the storage URL without its password."""
    from tuner.study import redact_url

    out: dict[str, Any] = {}
    for name, value in ctx.params.items():
        if name in ("api_key", "config"):
            continue
        if isinstance(value, Path):
            value = str(value)
        if name == "storage" and value:
            value = redact_url(value)
        out[name] = value
    if ctx.params.get("config") is not None:
        out["config_file"] = str(Path(ctx.params["config"]).resolve())
    return out
