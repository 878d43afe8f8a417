"""``tuner export``: a launch profile SGLang itself reads, from a trial of a study."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from tuner.cli._common import finite


if TYPE_CHECKING:
    from tuner.space import SearchSpace
    from tuner.study import Answer
    from tuner.study import Configuration
    from tuner.study import RegimeAnswer
    from tuner.study import StudyContext
    from tuner.study import TrialSummary
    from tuner.trial import TrialResult


def export(
    study: str = typer.Argument(..., help="study name (the sweep printed it)"),
    pick: str = typer.Option("fastest", help="fastest, most-accurate, knee (of the feasible "
                             "Pareto front) or trial:N"),
    out: Path = typer.Option(None, help="profile folder (default trials/<study>-profile)"),
    storage: str = typer.Option(None, help="Optuna storage URL or journal file (default "
                                "trials/<study>.db)"),
    artifacts: str = typer.Option(None, help="artifact folder (default: next to the study)"),
    tpot_tolerance: float = typer.Option(0.15, min=0.0, max=10.0, callback=finite,
                                         help="how much slower than measured a verify "
                                         "probe may be (0.15: 15%)"),
    regime: str = typer.Option(None, help="export the pick of this load regime (the "
                               "workload's regimes; `tuner report` lists them) instead"),
) -> None:
    """Write sglang.yaml, sglang.env, launch.sh and profile.yaml for one trial."""
    from tuner.cli._common import console
    from tuner.cli._common import writing
    from tuner.engines import make_engine
    from tuner.export import result_of
    from tuner.export import write_profile
    from tuner.space import Gate
    from tuner.space import parse_space
    from tuner.study import open_study
    from tuner.study.storages import redact_url
    from tuner.study.storages import slug

    st = open_study(study, storage, artifacts)
    loc = st.location
    rows = st.summaries()                 # read once: a study may hold 10,000s of trials
    answer = st.answer(rows)
    chosen, regime_info = _chosen(answer, rows, pick, regime)
    trial = st.trial(chosen.number)
    # the same speed configuration at the largest capacity (KV pool) the finals saw serve
    larger = st.largest_capacity(trial.number, rows)
    result, note = result_of(st, larger if larger is not None else trial)
    base_trial = st.baseline()
    baseline, base_note = result_of(st, base_trial) if base_trial else (None, None)
    for n in dict.fromkeys((note, base_note)):     # trial and baseline may be one trial
        if n:
            console().print(f"[yellow]note[/]: {n}", highlight=False)
    context = st.context()
    space = parse_space(context.space_yaml, file=f"the stored space of {study}") if (
        context.space_yaml) else None               # typed, as the sweep validated it
    engine = make_engine(result.engine)         # the adapter the trial was planned by
    command = engine.entry_point(result.plan.argv)   # what was measured, not the default
    gate = space.spec.gate if space is not None else Gate()
    floor = gate.accept_length_floor
    folder = out or Path("trials") / f"{slug(study)}-profile"
    model_path, vocab = _model(context, space)
    with writing("--out", folder):
        files = write_profile(folder, engine, command, model_path, result,
                              trial_number=trial.number, study_name=study,
                              storage_url=redact_url(loc.storage_url), baseline=baseline,
                              gate_floor=floor, tpot_tolerance=tpot_tolerance,
                              vocab_size=vocab, shown=chosen,
                              shown_baseline=answer.baseline, regime=regime_info)
    _say_pick(result, chosen, f"regime {regime}" if regime else pick)
    _say_regime(regime_info)
    _say_ties_and_capacity(answer, chosen, larger)
    c = console()
    for f in files:
        c.print(f"wrote {f}")
    c.print(f"serve it:  {folder}/launch.sh > server.log 2>&1 &\n"
            f"check it:  tuner verify {folder}/profile.yaml --url http://127.0.0.1:30000 "
            "--log server.log")


def _chosen(answer: Answer, rows: list[TrialSummary], pick: str, regime: str | None
            ) -> tuple[Configuration, RegimeAnswer | None]:
    """The configuration to export and, for ``--regime``, the regime whose pick it is."""
    from tuner.errors import UserError
    from tuner.study import regime_answers
    from tuner.study.regimes import regime_named

    if regime is None:
        return answer.choose(pick), None
    if pick != "fastest":
        raise UserError("--regime chooses the configuration itself: give it or --pick, "
                        "not both")
    g = regime_named(regime_answers(answer, rows), regime)
    if g.pick is None:
        raise UserError(f"--regime {regime!r}: no configuration is eligible there (every "
                        f"gate passed, the regime measured, {g.describe_sla()}); "
                        "`tuner report` shows why")
    near = g.pick.near_bound(g.sla)
    if near:
        from tuner.cli._common import console

        console().print(f"[yellow]note[/]: within the SLA by less than 5% on one launch "
                        f"({'; '.join(near)}): measure it again before trusting it",
                        highlight=False)
    return g.pick.configuration, g


def _say_regime(g: RegimeAnswer | None) -> None:
    """The exported regime pick's figures there (what `tuner report` shows for it)."""
    from tuner.cli._common import console
    from tuner.errors import counted

    if g is None or g.pick is None:
        return
    f = g.pick.figures
    console().print(
        f"at {counted(g.concurrency, 'user')} ({g.name}): goodput "
        f"{_fmt(f.goodput_rps, '.3f')} req/s, {_fmt(f.throughput_tok_s, '.0f')} tok/s, p95 "
        f"TPOT {_fmt(f.tpot_p95_ms, '.1f')} ms, p95 TTFT {_fmt(f.ttft_p95_s, '.2f')} s; mean "
        f"of {counted(g.pick.launches, 'launch', 'launches')}", highlight=False)


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _model(context: StudyContext, space: SearchSpace | None) -> tuple[str, int | None]:
    """The model the study measured and its vocabulary size (the bound of verify's
    synthetic probe; unknown is fine until verify needs it)."""
    from tuner.errors import UserError
    from tuner.workloads.vocab import vocab_size

    model_path = context.model or (space.spec.model.path if space is not None else "")
    declared = space.spec.model.vocab_size if space is not None else None
    try:
        return model_path, vocab_size(model_path, declared)
    except UserError:
        return model_path, None


def _say_pick(result: TrialResult, chosen: Configuration, pick: str) -> None:
    """What was exported, with the figures `tuner report` shows for it (the same TPOT,
    interval, launches, accept length, accuracy and configuration)."""
    from tuner.cli._common import console
    from tuner.trial import clock_label

    c = console()
    cfg = " ".join(f"{k}={v}" for k, v in chosen.served_config.items())
    status = (f"the pick of {pick}; for the workload itself: {chosen.status}"
              if pick.startswith("regime ") else f"{pick}; {chosen.status}")
    c.print(f"trial #{chosen.number} ({status}): {cfg}", highlight=False)
    if result.aggregates is None or chosen.tpot_ms is None:
        return
    label = f" ({clock_label(True, result.twin)})" if result.simulated else ""
    ci = chosen.tpot_ci95
    n = chosen.launches
    what = f"the mean of {n} launches" if n > 1 else "1 launch, unconfirmed"
    acc = chosen.accuracy_figure
    c.print(f"TPOT {chosen.tpot_ms:.2f} ms" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")
            + f"{label}: {what}; accept length {chosen.accept_length or 1:.2f}"
            + (f"; accuracy {acc.text()}" if acc is not None else ""), highlight=False)


def _say_ties_and_capacity(answer: Answer, chosen: Configuration,
                           larger: TrialSummary | None) -> None:
    from tuner.cli._common import console
    from tuner.errors import counted

    ties = [t.number for t in answer.ties] if chosen.is_pick else []
    if ties:
        console().print(f"tie: {counted(len(ties), 'other re-measured configuration')} "
                        "within the "
                        f"pick's interval ({', '.join(f'#{n}' for n in ties[:8])}): the "
                        "data cannot say which is faster; `tuner report` lists them")
    if larger is not None:
        big, first = larger, chosen.first
        console().print(
            f"capacity: {' '.join(f'{k}={v}' for k, v in big.held.items())} served in the "
            f"finals (trial #{big.number}): KV pool {big.kv_tokens or '?'} tokens, against "
            f"{first.kv_tokens or '?'} at the baseline's setting; the profile uses it")
