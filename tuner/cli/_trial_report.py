"""Human-readable summary of one TrialResult (rich)."""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any


if TYPE_CHECKING:
    from rich.console import Console

    from tuner.trial import TrialResult


def _fmt(v: float | None, spec: str = ".2f", unit: str = "") -> str:
    return "-" if v is None else f"{v:{spec}}{unit}"


#: what a class's accuracy is, by content class
ACCURACY_NAMES = {"math": "GSM8K accuracy", "code": "HumanEval pass@1"}


def _accuracy(fig: Any) -> str:
    """``97.0% (97/100)  [91.5%, 99.0%] Wilson 95%`` of figures with an accuracy."""
    ci = fig.accuracy_ci95
    return (f"{fig.accuracy:.1%} ({fig.correct}/{fig.scored})"
            + (f"  [{ci.low:.1%}, {ci.high:.1%}] Wilson 95%" if ci else ""))


def _class_rows(t: Any, a: Any) -> None:
    """One row per content class when the trial measured several, or a mix."""
    for name, fig in a.shown_classes().items():
        share = f", share {fig.share:.2f}" if fig.share is not None else ""
        accept = f", accept {fig.accept_length:.2f}" if fig.accept_length else ""
        t.add_row(f"  {name} ({fig.requests} requests{share})",
                  _fmt(fig.tpot_ms, ".2f", " ms") + accept)


def accuracy_label(a: Any) -> str:
    """What the trial's accuracy is: one class's name for it, else "accuracy (the classes
    scored)"."""
    scored = [c for c, f in (a.per_class or {}).items() if f.accuracy is not None]
    if len(scored) == 1:
        return ACCURACY_NAMES.get(scored[0], "accuracy")
    return f"accuracy ({' + '.join(scored)})" if scored else "accuracy"


def _accuracy_rows(t: Any, a: Any) -> None:
    """The trial's accuracy, then each scored class's when it measured several."""
    if a.accuracy is None:
        return
    t.add_row(accuracy_label(a), _accuracy(a))
    scored = {c: f for c, f in (a.per_class or {}).items() if f.accuracy is not None}
    if len(scored) > 1:
        for name, fig in scored.items():
            t.add_row(f"  {ACCURACY_NAMES.get(name, name)}", _accuracy(fig))


def print_result(r: TrialResult) -> None:
    from rich.table import Table

    from tuner.cli._common import console
    from tuner.trial import clock_label

    out = console()
    clock = clock_label(r.simulated, r.twin) + (
        f" (time scale x{r.time_scale:g})" if r.simulated else "")
    out.print(f"[bold]trial[/bold] {r.space} on {r.machine}  engine {r.engine} "
              f"{r.engine_version or ''}  [dim]{clock}[/dim]")
    out.print(f"config  {' '.join(f'{k}={v}' for k, v in r.config.items())}  "
              f"[dim]hash {r.config_hash}[/dim]")
    if r.effect:
        t = Table(title="did each setting take effect?")
        for col in ("knob", "value", "verdict", "evidence"):
            t.add_column(col, overflow="fold")
        colour = {"confirmed": "green", "mismatched": "red", "unobservable": "yellow",
                  "unsupported": "red"}
        for c in r.effect:
            detail = "; ".join(c.problems or c.observations) or (c.note or "")
            if c.verdict == "unobservable" and c.note:
                detail = c.note
            t.add_row(c.knob, str(c.value), f"[{colour[c.verdict]}]{c.verdict}[/]", detail)
        out.print(t)
    _print_launch(out, r)
    if r.status == "failed":
        out.print(f"[red bold]FAILED[/] reason [bold]{r.reason}[/bold]: {r.message}")
        if r.log_tail:
            out.print("[dim]last server log lines:[/dim]")
            for line in r.log_tail.splitlines()[-8:]:
                out.print(f"  [dim]{line}[/dim]")
        return
    a = r.aggregates
    assert a is not None
    t = Table(title=f"{a.requests} measured requests ({r.warmup_requests} warm-up excluded)")
    t.add_column("figure")
    t.add_column("value", justify="right")
    ci = a.tpot_ci95
    label = ("TPOT, classes weighted by share" if a.tpot_basis == "mix"
             else "TPOT, token-weighted mean")
    t.add_row(label, _fmt(a.tpot_ms, ".2f", " ms") + (
        f"  [{ci.low:.2f}, {ci.high:.2f}] 95% CI" if ci else ""))
    _class_rows(t, a)
    t.add_row("TPOT median / P95", f"{_fmt(a.tpot_median_ms)} / {_fmt(a.tpot_p95_ms)} ms")
    t.add_row("decode throughput", _fmt(a.decode_tok_s, ".1f", " tok/s"))
    t.add_row("TTFT mean", _fmt(a.ttft_mean_s, ".3f", " s"))
    t.add_row("end-to-end mean / P50 / P95",
              f"{_fmt(a.e2e_mean_s)} / {_fmt(a.e2e_p50_s)} / {_fmt(a.e2e_p95_s)} s")
    t.add_row("output tokens, mean", _fmt(a.output_tokens_mean, ".0f"))
    t.add_row("accept length (this trial's requests)", _fmt(a.accept_length))
    _accuracy_rows(t, a)
    out.print(t)
    if r.regimes:
        out.print(regime_table(r))
    _print_gate(out, r)
    if r.cleanup:
        out.print(f"[yellow]clean-up warning[/]: {'; '.join(r.cleanup)}")


def regime_table(r: TrialResult) -> Any:
    """The load regimes measured on this launch, one row each."""
    from rich.table import Table

    t = Table(title="load regimes (same launch, after the workload)")
    for col in ("regime", "users", "requests", "ran at once (queued at most)",
                "TPOT mean / p95 ms", "TTFT mean / p95 s", "tok/s", "goodput req/s", "SLA"):
        t.add_column(col, justify="left" if col in ("regime", "SLA") else "right")
    for g in r.regimes:
        if g.status == "failed":
            t.add_row(g.name, str(g.concurrency), "-", "-", "-", "-", "-", "-",
                      f"[red]failed[/]: {g.message}")
            continue
        load = ("-" if g.peak_running is None else
                f"{g.peak_running} ({g.peak_queued})")
        sla = ("-" if g.within_sla is None else
               f"{'[green]met[/]' if g.within_sla else '[red]missed[/]'} "
               f"({g.sla_met:.0%} of requests)")
        t.add_row(g.name, str(g.concurrency), str(g.requests), load,
                  f"{_fmt(g.tpot_mean_ms)} / {_fmt(g.tpot_p95_ms)}",
                  f"{_fmt(g.ttft_mean_s)} / {_fmt(g.ttft_p95_s)}",
                  _fmt(g.throughput_tok_s, ".0f"), _fmt(g.goodput_rps, ".3f"), sla)
    return t


def _print_launch(out: Console, r: TrialResult) -> None:
    """The launch's start-up (its time to healthy, or to its failure) and what the
    unified-memory guard saw of the host."""
    s = r.timings.startup_s
    if s is not None:
        what = "start-up (launch to healthy)" if r.timings.evidence_s is not None else (
            "start-up, until it failed")
        total = r.timings.total_s
        share = f", {s / total:.0%} of the launch's {total:.0f} s" if total else ""
        out.print(f"{what}: {s:.0f} s{share}", highlight=False)
    m = r.memory
    if m is not None:
        peak = "-" if m.predicted_peak_gib is None else f"{m.predicted_peak_gib:.1f}"
        low = ("" if m.lowest_available_gib is None
               else f", lowest while it ran {m.lowest_available_gib:.1f} GiB")
        out.print(f"host memory (unified): predicted peak {peak} GiB, {m.available_gib:.1f} "
                  f"GiB available of {m.total_gib:.1f} before the launch{low}, margin "
                  f"{m.margin_gib:.1f} GiB", highlight=False)


def _print_gate(out: Console, r: TrialResult) -> None:
    g = r.gate
    if g is None:
        return
    for rule in g.rules:
        mark = "[red]GATED[/]" if rule.fired else "[green]pass[/]"
        out.print(f"{mark} {rule.rule}: {rule.detail}")
    out.print("[green bold]feasible[/]" if g.passed else "[red bold]infeasible[/]")
