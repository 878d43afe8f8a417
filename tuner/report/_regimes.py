"""The report's answer per load regime: "for 1 user: #A; for 16 users: #B".

Read from :func:`tuner.study.regime_answers` (the same rule ``tuner export --regime``
follows), one row per regime: its load and SLA, its pick and the pick's figures there, and
how many configurations measured it and were eligible; then each regime's front (goodput
against accuracy), as a table and, on the HTML page, a plot.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any

import pandas as pd

from tuner.errors import counted
from tuner.report._data import StudyData
from tuner.report._data import differs
from tuner.study import RegimeAnswer
from tuner.study.regimes import RegimeRow


if TYPE_CHECKING:
    from rich.console import Console


def _figures(r: RegimeRow) -> dict[str, Any]:
    f = r.figures
    return {"trial": r.number, "config": r.configuration.served_config,
            "goodput_rps": f.goodput_rps, "throughput_tok_s": f.throughput_tok_s,
            "tpot_p95_ms": f.tpot_p95_ms, "ttft_p95_s": f.ttft_p95_s, "sla_met": f.sla_met,
            "within_sla": f.within_sla, "launches": r.launches,
            "accuracy": r.configuration.accuracy, "peak_running": f.peak_running,
            "peak_queued": f.peak_queued}


def regime_records(data: StudyData) -> list[dict[str, Any]]:
    """Each regime as a JSON-ready record (``tuner report --json``'s ``regimes``)."""
    out = []
    for g in data.regimes:
        out.append({"regime": g.name, "concurrency": g.concurrency, "sla": g.sla,
                    "measured": len(g.rows), "eligible": sum(r.eligible for r in g.rows),
                    "pick": _figures(g.pick) if g.pick is not None else None,
                    "pick_near_sla_bound": g.pick.near_bound(g.sla) if g.pick else [],
                    "infeasible": g.infeasibility(),
                    "front": [_figures(r) for r in g.front]})
    return out


def _f(v: float | None, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def _load(r: RegimeRow | None) -> str:
    """``9 (7)``: the most requests run at once and kept waiting, or ``-`` (no batch
    lines in the server's log)."""
    f = r.figures if r is not None else None
    if f is None or f.peak_running is None:
        return "-"
    return f"{f.peak_running} ({f.peak_queued if f.peak_queued is not None else '-'})"


def regime_table(data: StudyData) -> pd.DataFrame:
    """One text row per regime (the terminal and the HTML page)."""
    rows = []
    for g in data.regimes:
        p = g.pick
        f = p.figures if p is not None else None
        rows.append({
            "regime": g.name, "users": g.concurrency, "SLA": g.describe_sla(),
            "pick": f"#{p.number}" if p is not None else "none eligible",
            "goodput req/s": _f(f.goodput_rps if f else None, ".3f"),
            "tok/s": _f(f.throughput_tok_s if f else None, ".0f"),
            "p95 TPOT ms": _f(f.tpot_p95_ms if f else None, ".1f"),
            "p95 TTFT s": _f(f.ttft_p95_s if f else None, ".2f"),
            "ran at once (queued)": _load(p),
            "eligible": f"{sum(r.eligible for r in g.rows)} of {len(g.rows)}",
            "differs from the baseline": differs(_config_row(p), data.baseline) if p else ""})
    return pd.DataFrame(rows)


def _config_row(r: RegimeRow) -> dict[str, Any]:
    return {"config": r.configuration.served_config}


def regime_front_title(g: RegimeAnswer) -> str:
    return f"{g.name} ({counted(g.concurrency, 'user')}, {g.describe_sla()}): its front"


def regime_front_table(data: StudyData, g: RegimeAnswer) -> pd.DataFrame:
    """Regime ``g``'s front: the eligible configurations no other beats on goodput and
    accuracy, most goodput first, the pick marked."""
    return pd.DataFrame([{
        "trial": f"#{r.number}" + (" (pick)" if r is g.pick else ""),
        "goodput req/s": _f(r.figures.goodput_rps, ".3f"),
        "tok/s": _f(r.figures.throughput_tok_s, ".0f"),
        "p95 TPOT ms": _f(r.figures.tpot_p95_ms, ".1f"),
        "p95 TTFT s": _f(r.figures.ttft_p95_s, ".2f"),
        "ran at once (queued)": _load(r), "accuracy": _f(r.configuration.accuracy, ".1%"),
        "launches": r.launches,
        "differs from the baseline": differs(_config_row(r), data.baseline)}
        for r in g.front])


def regime_front_figure(data: StudyData, g: RegimeAnswer) -> Any:
    """Goodput against accuracy of every configuration that measured regime ``g``: the
    eligible ones, its front, its pick; the others (SLA missed, not admissible, failed)
    greyed."""
    import plotly.graph_objects as go

    def trace(rows: list[RegimeRow], name: str, **kw: Any) -> Any:
        return go.Scatter(x=[r.figures.goodput_rps or 0.0 for r in rows],
                          y=[r.configuration.accuracy for r in rows], name=name,
                          hovertext=[f"#{r.number}: {differs(_config_row(r), data.baseline)}"
                                     for r in rows], hoverinfo="text", **kw)

    measured = [r for r in g.rows if r.figures.goodput_rps is not None]
    fig = go.Figure([
        trace([r for r in measured if not r.eligible], "not eligible", mode="markers",
              marker={"color": "#bbbbbb", "size": 10, "symbol": "x"}),
        trace([r for r in measured if r.eligible], "eligible", mode="markers",
              marker={"color": "#1f77b4", "size": 11}),
        trace(g.front, "front", mode="lines+markers", line={"color": "#d62728"},
              marker={"color": "#d62728", "size": 14, "symbol": "star"})])
    if g.pick is not None:
        fig.add_trace(trace([g.pick], f"the pick (tuner export --regime {g.name})",
                            mode="markers", marker={"color": "rgba(0,0,0,0)", "size": 24,
                                                    "line": {"color": "black", "width": 3}}))
    fig.update_layout(title=f"load regime {regime_front_title(g)}", template="plotly_white",
                      xaxis_title="goodput, requests within the SLA per second (higher is "
                      "better)", yaxis_title="GSM8K accuracy", height=460,
                      legend={"orientation": "h", "y": -0.25})
    fig.update_yaxes(tickformat=".0%")
    return fig


def regime_sentence(data: StudyData) -> str | None:
    """``for the workload itself: #3; for sixteen (16 users): #7``, or None."""
    if not data.regimes:
        return None
    main = f"#{data.pick_number}" if data.pick_number is not None else "none"
    parts = [f"for the workload itself: {main}"]
    parts += [f"for {g.name} ({counted(g.concurrency, 'user')}): "
              + (f"#{g.pick.number}" if g.pick else "none eligible") for g in data.regimes]
    return "; ".join(parts)


def print_regimes(out: Console, data: StudyData) -> None:
    """The regime table and sentence (nothing when the study measured no regimes)."""
    from rich.table import Table

    df = regime_table(data)
    if df.empty:
        return
    t = Table(title="The pick per load regime (tuner export --regime NAME)")
    for col in df.columns:
        t.add_column(col, overflow="fold")
    for _, r in df.iterrows():
        t.add_row(*(str(r[c]) for c in df.columns))
    out.print(t)
    for g in data.regimes:
        front = regime_front_table(data, g)
        if front.empty:
            continue
        ft = Table(title=regime_front_title(g))
        for col in front.columns:
            ft.add_column(col, overflow="fold")
        for _, r in front.iterrows():
            ft.add_row(*(str(r[c]) for c in front.columns))
        out.print(ft)
    sentence = regime_sentence(data)
    if sentence:
        out.print(sentence, highlight=False)
    for line in near_bound_notes(data):
        out.print(f"[yellow]note[/]: {line}", highlight=False)
    for g in data.regimes:                 # nothing measured meets its SLA: the nearest
        if (said := g.infeasibility()) is not None:
            out.print(f"[yellow]note[/]: {said}", highlight=False)


def near_bound_notes(data: StudyData) -> list[str]:
    """One sentence per regime whose pick meets its SLA by a hair on one launch."""
    out = []
    for g in data.regimes:
        if g.pick is None or not (near := g.pick.near_bound(g.sla)):
            continue
        out.append(f"{g.name}: the pick #{g.pick.number} is within its SLA by less "
                   f"than 5% on one launch ({'; '.join(near)}); a single reading that "
                   "close can pass by noise: measure it again before trusting it")
    return out
