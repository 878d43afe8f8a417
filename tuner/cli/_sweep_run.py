"""``tuner sweep``'s work after parsing: inputs checked before anything starts, the
engine, space, workload and settings resolved, the driver run with its display, and the
study's answer printed at the end. The command function (:mod:`tuner.cli.sweep`) only
parses and hands over."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

import typer

from tuner.cli._sweep_args import SweepArgs


if TYPE_CHECKING:
    from rich.console import Console

    from tuner.cli._engine_options import EngineChoice
    from tuner.space import SearchSpace
    from tuner.space import Workload
    from tuner.study import StudyLocation
    from tuner.sweep import Driver


def origin(ctx: typer.Context, name: str) -> str:
    """`` (from the --config file F)`` when option ``name`` came from that file, else ``""``:
    an error about a value names where the value was written."""
    from click.core import ParameterSource

    if ctx.get_parameter_source(name) == ParameterSource.DEFAULT_MAP and ctx.params.get(
            "config") is not None:
        return f" (from the --config file {ctx.params['config']})"
    return ""


def check_gsm8k(ctx: typer.Context, gsm8k: str | None) -> None:
    """The GSM8K data a scored workload needs, read now: a missing or malformed folder is a
    usage error before the study, Ray or a server is touched."""
    from tuner.errors import UserError
    from tuner.workloads import gsm8k as data

    if gsm8k is None:
        raise UserError("the GSM8K workload needs its data: pass --gsm8k DIR (a folder with "
                        "test.jsonl and train.jsonl) or --gsm8k online")
    if gsm8k == "online":
        return
    try:
        for split in ("test", "train"):
            data.load_split(gsm8k, split)
    except UserError as exc:
        raise UserError(f"{exc}{origin(ctx, 'gsm8k')}") from None


def check_workdir(folder: Path) -> None:
    """The server logs' folder can be written (else every launch would fail the same way,
    the baseline first); checked without leaving it behind (the launches create it), so a
    later refusal leaves nothing."""
    from tuner.cli._common import writing
    from tuner.study.storages import try_folder

    with writing("--workdir", folder):
        try_folder(folder)


def study_name(given: str | None, default: str) -> str:
    """``--study``, else the space's name: not empty, no control characters (a name is
    printed in every command that reads the study, and a terminal would run them)."""
    from tuner.errors import UserError

    if given is not None and (not given.strip() or not given.isprintable()):
        raise UserError(f"--study {given!r}: expected a name of printable characters")
    return given if given is not None else default


def check_ray_address(address: str | None) -> None:
    """A cluster's address, answered by a Ray head; empty is refused (it once started a
    local instance as if the option were not given)."""
    from tuner.errors import UserError
    from tuner.sweep import check_address

    if address is not None and not address.strip():
        raise UserError("--ray-address is empty: leave it out for a local Ray instance, or "
                        "give auto, none or HOST:PORT")
    if address not in (None, "none", "auto", "local"):
        check_address(address)       # before the study is touched


def _workload(ctx: typer.Context, o: SweepArgs, space: SearchSpace
              ) -> tuple[Any, int | None, str | None]:
    """The workload of each launch, checked (its data read now), and the final accuracy
    sample's size with the sentence that states it (None: the user's, or none)."""
    from tuner.cli._common import workload_with
    from tuner.errors import UserError

    wl = workload_with(space, kind=o.workload, mix=o.mix, questions=o.questions,
                       max_tokens=o.max_tokens, regimes=list(o.regime))
    if o.search_questions is not None and o.search_questions > wl.questions:
        raise UserError(f"--search-questions {o.search_questions} is more than the "
                        f"{wl.questions} questions of each launch (--questions, or the "
                        "space's workload.questions)")
    final = o.final_questions
    if wl.kind == "gsm8k" or "math" in wl.shares():
        check_gsm8k(ctx, o.gsm8k)
    elif final != 0:            # the GSM8K final sample beside it needs GSM8K's data
        if o.gsm8k is None:
            raise UserError(f"the {wl.describe_content()} workload is gated on a GSM8K "
                            "final accuracy sample by default: pass --gsm8k DIR (or "
                            "--gsm8k online), or --final-questions 0 to run without one "
                            "(accuracy not checked)")
        check_gsm8k(ctx, o.gsm8k)
    if wl.kind == "jsonl":               # the user's prompts read now: a bad line is one
        from tuner.workloads import Context  # located error, not a failure per trial
        from tuner.workloads import make_workload

        make_workload(wl, Context()).prepare()
    if final is None:
        from tuner.sweep import beside_final_size
        from tuner.sweep import default_final_size

        if wl.kind == "gsm8k":
            return (wl, *default_final_size(space.spec.gate, wl.questions))
        return (wl, *beside_final_size(space.spec.gate, wl.describe_content()))
    if final == 0 and wl.kind != "gsm8k":
        return wl, 0, not_checked_note(wl)
    return wl, final, None


def not_checked_note(wl: Workload) -> str:
    """The header's line for a sweep of a workload that is not GSM8K without a final
    accuracy sample."""
    from tuner.workloads import KINDS

    own = ("; only its own scored requests are gated (HumanEval's tests)"
           if KINDS[wl.kind].scores(wl) else "")
    return (f"[yellow]accuracy not checked[/]: --final-questions 0, so no GSM8K sample is "
            f"answered beside the {wl.describe_content()} workload{own}; a numerics change "
            "that costs accuracy can be exported")


def final_questions_note(wl: Workload, final_questions: int | None) -> str | None:
    """What to say at the start when ``--final-questions N`` is given for a workload that is
    not GSM8K: the N GSM8K questions are answered beside it (the default's own sentence is
    :func:`tuner.sweep.beside_final_size`'s). None when it is GSM8K's own, or 0."""
    if not final_questions or wl.kind == "gsm8k":
        return None
    return (f"final accuracy sample: the baseline and each finalist also answer "
            f"{final_questions} GSM8K questions after the {wl.describe_content()} workload, "
            "once each (in no speed figure)")


def run_sweep(ctx: typer.Context) -> None:
    """Run the sweep ``ctx``'s options describe (command line over --config over defaults)."""
    import sys
    from dataclasses import replace

    from tuner.cli._common import console
    from tuner.cli._common import load_checked_space
    from tuner.cli._engine_options import choose_engine
    from tuner.cli._engine_options import engine_capabilities
    from tuner.study import locate
    from tuner.study.storages import slug
    from tuner.sweep import Driver
    from tuner.sweep import SweepSettings
    from tuner.trial import TrialOptions
    from tuner.trial import capacity_refusal
    from tuner.trial import workload_vocab

    o = SweepArgs.from_cli_args(ctx.params)
    choice = choose_engine(o.engine, engine_command=o.engine_command,
                           time_scale=o.time_scale, noise=o.noise,
                           sim_seed=o.seed or 0, sim_faults=o.sim_faults,
                           gsm8k=o.gsm8k, sim_profiles=o.sim_profiles)
    space = load_checked_space(o.space_file, choice.engine)
    trials = o.trial_budget
    name = study_name(o.study, space.name)
    wl, final_q, final_note = _workload(ctx, o, space)
    choice = choice.for_users(wl.peak_users)
    refusal = capacity_refusal(space, choice.engine, wl.regimes,
                               "--regime" + origin(ctx, "regime") if o.regime
                               else "the space's workload.regimes")
    if refusal is not None:            # before the study, Ray or a server is touched
        raise refusal
    ctx.params["time_scale"] = choice.time_scale if choice.simulated else o.time_scale
    caps = engine_capabilities(choice, space) if o.check_engine else None
    startup = o.startup_timeout or choice.default_startup_timeout()
    check_workdir(o.workdir / slug(name))
    opts = TrialOptions(workdir=o.workdir / slug(name), workload=wl, gsm8k=o.gsm8k,
                        startup_timeout_s=startup, capabilities=caps, api_key=o.api_key)
    # the vocabulary bound found now: a missing one is a user error before any trial
    opts = replace(opts, vocab_size=workload_vocab(space, opts))
    location = locate(o.storage, name, o.artifacts)   # after every input is checked
    deadline = o.trial_timeout or (6 * 3600.0 / choice.time_scale + 120.0)
    settings = SweepSettings(study_name=name, location=location, trials=trials,
                             hours=o.hours, sampler=o.sampler, seed=o.seed,
                             break_lock=o.break_lock, deadline_s=deadline,
                             early_stop=o.early_stop, final_questions=final_q or None,
                             search_questions=o.search_questions,
                             options=resolved_options(ctx))
    ray_address = o.ray_address
    check_ray_address(ray_address)
    runner = _runner_factory(ray_address, o.parallel, gpu=not choice.simulated)
    _start_notes(console(), space, choice, wl, [final_note, final_questions_note(
        wl, o.final_questions)])
    _run(console(), choice, space, name, location, Driver(
        space, choice.engine, opts, settings, runner), sys.stdout.isatty(), o.storage,
        o.artifacts)


def _start_notes(out: Console, space: SearchSpace, choice: EngineChoice, wl: Workload,
                 final: list[str | None]) -> None:
    """What the sweep says before its header: the final sample (``final``: the default's
    statement or "accuracy not checked", and the statement of a given ``--final-questions``
    beside a workload), and a capacity searched for several
    users (a regime no configuration can serve together was refused before)."""
    if final[0]:
        out.print(final[0], highlight=False)
    if final[1]:
        out.print(final[1], highlight=False)
    if space.for_workload(wl) is not space:
        out.print(f"capacity searched ({', '.join(space.capacity_knobs)}): "
                  f"{wl.peak_users} users at once, so how many requests fit decides "
                  "throughput and queueing", highlight=False)


def _runner_factory(ray_address: str | None, parallel: int | None, *, gpu: bool) -> Any:
    """A runner built lazily: Ray starts only once the driver holds the study's lock."""
    def runner() -> Any:
        if ray_address == "none":
            from tuner.sweep import LocalRunner

            return LocalRunner(slots=parallel or 1)
        from tuner.sweep import RayRunner

        return RayRunner(address=ray_address, gpu=gpu, slots=parallel)

    return runner


def _run(out: Console, choice: EngineChoice, space: SearchSpace, name: str,
         location: StudyLocation, driver: Driver,
         interactive: bool, storage: str | None = None, artifacts: str | None = None) -> None:
    """Header, live progress, the front at the end, then the commands that read the study;
    Ctrl-C exits 130 (resume later)."""
    import shlex

    from tuner.cli._sweep_display import Display
    from tuner.cli._sweep_display import print_front
    from tuner.study.storages import redact_url

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
            view = driver.run()
    except KeyboardInterrupt as exc:
        import signal

        from tuner.sweep import terminated

        for sig in (signal.SIGINT, signal.SIGTERM):   # stopping: another Ctrl-C changes
            signal.signal(sig, signal.SIG_IGN)        # nothing (it once killed the exit)
        term = terminated(exc)
        out.print(f"[yellow]{'stopped (SIGTERM)' if term else 'interrupted'}[/]: in-flight "
                  "trials were stopped and queued again; run the same command to resume")
        raise typer.Exit(143 if term else 130) from None
    if driver.nothing_to_do:
        from tuner.errors import counted

        held = counted(driver.sweep.counted(), "launch", "launches")
        out.print(f"study {name!r} already holds {held} "
                  f"(--trials {driver.s.trials}): nothing to run, nothing changed; raise "
                  "--trials to go on. Its answer:")
    print_front(out, view, simulated=choice.simulated)
    out.print(f"\nstudy    {url}\nartifacts {location.artifacts}")
    where = [name, *(["--storage", url] if storage else []),
             *(["--artifacts", str(location.artifacts)] if artifacts else [])]
    for i, verb in enumerate(("report", "dashboard", "export")):
        out.print(("next     " if i == 0 else "         ") + shlex.join(["tuner", verb, *where]),
                  highlight=False, markup=False)


def resolved_options(ctx: typer.Context) -> dict[str, Any]:
    """The options this sweep ran with (command line over --config file over defaults), as
    stored with the study: no API key, the storage URL without its password."""
    from tuner.study.storages import redact_url

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
