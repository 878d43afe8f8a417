"""A self-contained HTML report with plotly charts (plotly.js inlined: works offline)."""

from __future__ import annotations

import html
from typing import Any

import pandas as pd

from tuner.errors import clip
from tuner.report._data import StudyData
from tuner.report._data import differs
from tuner.report._regimes import regime_front_figure


#: Colours that tell the three kinds of trial apart (also in the screenshot test).
FEASIBLE = "#1f77b4"
FRONT = "#2ca02c"
GATED = "#9a9a9a"
FAILED = "#d62728"
BASELINE = "#000000"
PICK = "#ff7f0e"


def label(v: Any) -> str:
    """A knob value as an axis label: 3.0 and 3 are one label, missing is "n/a"."""
    if v is None or v is pd.NA or (isinstance(v, float) and pd.isna(v)):
        return "n/a"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def ordered_labels(values: pd.Series) -> list[str]:
    """The distinct labels of ``values``: numbers in numeric order, then the rest."""
    present = values.dropna().unique().tolist()
    nums = sorted(v for v in present if isinstance(v, (int, float)) and not isinstance(v, bool))
    rest = sorted((v for v in present if v not in nums), key=str)
    return list(dict.fromkeys([label(v) for v in nums + rest]))


def _hover(df: pd.DataFrame, data: StudyData) -> list[str]:
    out = []
    for _, r in df.iterrows():
        lines = [f"trial #{r['number']}: {r['verdict']}"]
        if pd.notna(r.get("tpot_ms")):
            runs = int(r["launches"]) if pd.notna(r.get("launches")) else 1
            lines.append(f"TPOT {r['tpot_ms']:.2f} ms"
                         + (f" (mean of {runs} launches)" if runs > 1 else " (1 launch)"))
        if pd.notna(r.get("accuracy")):
            n = r.get("accuracy_questions")
            lines.append(f"accuracy {r['accuracy']:.1%}" + (
                f" on {int(n)} questions ({r['accuracy_sample']})" if pd.notna(n) else ""))
        if pd.notna(r.get("accept_length")) and r.get("accept_length"):
            lines.append(f"accept length {r['accept_length']:.2f}")
        if r.get("gate"):
            lines.append(f"gated: {r['gate']}")
        if r.get("reason") and r["kind"] == "failed":
            lines.append(f"failed: {r['reason']}")
        lines.append(clip(differs(r, data.baseline), 160))
        out.append("<br>".join(html.escape(str(x)) for x in lines))
    return out


def pareto_figure(data: StudyData) -> Any:
    import plotly.graph_objects as go

    t = data.trials
    fig = go.Figure()
    measured = t[t["kind"] != "failed"]
    y_col = "accuracy" if data.with_accuracy else "tpot_ms"
    feas, gated = t[t["kind"] == "feasible"], t[t["kind"].isin(("gated", "refused"))]
    fig.add_trace(go.Scatter(x=feas["tpot_ms"], y=feas[y_col], mode="markers",
                             name="feasible", hovertext=_hover(feas, data), hoverinfo="text",
                             marker={"color": FEASIBLE, "size": 11}))
    front = data.front()
    fig.add_trace(go.Scatter(x=front["tpot_ms"], y=front[y_col], mode="lines+markers",
                             name="Pareto front", hovertext=_hover(front, data),
                             hoverinfo="text", line={"color": FRONT, "width": 2},
                             marker={"color": FRONT, "size": 14, "symbol": "star"}))
    fig.add_trace(go.Scatter(x=gated["tpot_ms"], y=gated[y_col], mode="markers",
                             name="infeasible (gated or refused)", hovertext=_hover(gated, data),
                             hoverinfo="text",
                             marker={"color": GATED, "size": 13, "symbol": "x"}))
    pick = data.pick()
    if not pick.empty:
        fig.add_trace(go.Scatter(x=pick["tpot_ms"], y=pick[y_col], mode="markers",
                                 name="the pick (tuner export)", hovertext=_hover(pick, data),
                                 hoverinfo="text", marker={
                                     "color": "rgba(0,0,0,0)", "size": 24, "symbol": "circle",
                                     "line": {"color": PICK, "width": 3}}))
    failed = t[t["kind"] == "failed"]
    if not failed.empty:
        x_fail = (measured["tpot_ms"].max() * 1.12) if not measured.empty else 1.0
        y_mid = measured[y_col].median() if not measured.empty else 0.5
        fig.add_trace(go.Scatter(
            x=[x_fail] * len(failed), y=[y_mid] * len(failed), mode="markers",
            name=f"failed ({len(failed)}, no measurement: shown at the right edge)",
            hovertext=_hover(failed, data), hoverinfo="text",
            marker={"color": FAILED, "size": 13, "symbol": "triangle-up"}))
    if data.baseline is not None:
        b = data.baseline
        fig.add_trace(go.Scatter(x=[b["tpot_ms"]], y=[b[y_col]], mode="markers+text",
                                 name="baseline (trial #0's configuration)", text=["baseline"],
                                 textposition="top center", hoverinfo="text",
                                 hovertext=_hover(data.trials[data.trials["number"] ==
                                                              b["number"]], data),
                                 marker={"color": BASELINE, "size": 16,
                                         "symbol": "diamond-open", "line": {"width": 3}}))
    unit = f" ({data.clock})" if data.simulated else ""
    fig.update_layout(
        title=f"{data.name}: TPOT vs GSM8K accuracy{unit}", xaxis_title="TPOT, ms (lower "
        "is better)", yaxis_title="GSM8K accuracy" if data.with_accuracy else "TPOT",
        template="plotly_white", height=520, legend={"orientation": "h", "y": -0.2})
    if data.with_accuracy:
        fig.update_yaxes(tickformat=".0%")
    return fig


def knob_figures(data: StudyData) -> list[Any]:
    import plotly.graph_objects as go

    figs = []
    m = data.measured
    for knob in data.knobs:
        col = f"knob.{knob}"
        if col not in m or m[col].dropna().nunique() < 2:
            continue
        fig = go.Figure()
        for kind, colour in (("feasible", FEASIBLE), ("gated", GATED)):
            sub = m[m["kind"] == kind]
            fig.add_trace(go.Box(x=[label(v) for v in sub[col]], y=sub["tpot_ms"], name=kind,
                                 boxpoints="all", marker_color=colour))
        fig.update_layout(title=f"TPOT vs {knob}", yaxis_title="TPOT, ms",
                          template="plotly_white", height=360, boxmode="group")
        fig.update_xaxes(type="category", categoryorder="array",
                         categoryarray=ordered_labels(m[col]), title=knob)
        figs.append(fig)
    return figs


def _speculation_knobs(data: StudyData) -> list[str]:
    """Numeric knobs set exactly on the trials that speculate (those with an accept length),
    in the space's order: draft steps, top-k, verify window in the shipped spaces."""
    m = data.measured
    spec = m["accept_length"].notna() if "accept_length" in m else None
    out = []
    for k in data.knobs:
        col = f"knob.{k}"
        if spec is None or col not in m or not spec.any():
            continue
        values = pd.to_numeric(m.loc[spec, col], errors="coerce")
        if values.notna().all() and m.loc[~spec, col].isna().all() and values.nunique() > 1:
            out.append(k)
    return out


def accept_figure(data: StudyData) -> Any | None:
    """Accept length against the first speculation knob, one series per value of the
    second (when it has few values)."""
    import plotly.graph_objects as go

    knobs = _speculation_knobs(data)
    if not knobs:
        return None
    m = data.measured
    spec = m[m["accept_length"].notna()]
    x = pd.to_numeric(spec[f"knob.{knobs[0]}"])
    split = next((k for k in knobs[1:] if spec[f"knob.{k}"].nunique() <= 4), None)
    groups = spec[f"knob.{split}"] if split else pd.Series("all", spec.index)
    fig = go.Figure()
    for g in sorted(groups.unique(), key=str):
        sub = spec[groups == g]
        fig.add_trace(go.Scatter(x=x[groups == g], y=sub["accept_length"], mode="markers",
                                 name=f"{split} {g}" if split else "trials",
                                 hovertext=_hover(sub, data), hoverinfo="text",
                                 marker={"size": 11}))
    fig.update_layout(title=f"accept length vs {knobs[0]}", xaxis_title=knobs[0],
                      yaxis_title="accept length (tokens per verify round)",
                      template="plotly_white", height=380)
    if (x == x.round()).all():                      # draft steps: whole numbers only
        fig.update_xaxes(dtick=1)
    return fig


#: What the importance chart measures, printed under it: it can rank a knob low that the
#: per-knob table shows to matter, and the page says why.
IMPORTANCE_NOTE = (
    "Importance here is PED-ANOVA's: how differently the fastest 10% of the measured "
    "configurations set each knob than all measured configurations do. It is not the knob's "
    "effect on the median: a value the search tried almost everywhere (because it was fast) "
    "scores low even when the per-knob effects table shows the other value is much slower.")


def importance_figure(data: StudyData) -> Any | None:
    """Each knob's importance for TPOT (:func:`tuner.report._data.tpot_importance`)."""
    import plotly.graph_objects as go

    if not data.importance:
        return None
    items = sorted(data.importance.items(), key=lambda kv: kv[1])
    fig = go.Figure(go.Bar(x=[v for _, v in items], y=[k for k, _ in items], orientation="h",
                           marker_color=FEASIBLE, text=[f"{v:.0%}" for _, v in items],
                           textposition="outside"))
    fig.update_layout(title="knob importance for TPOT (PED-ANOVA; read the note below)",
                      xaxis_title="share of importance",
                      xaxis_tickformat=".0%", template="plotly_white",
                      height=120 + 34 * len(items))
    return fig


def parallel_figure(data: StudyData) -> Any | None:
    """Parallel coordinates of the feasible configurations: one axis per knob (numbers in
    order, "n/a" where a knob is inactive), then TPOT; lines coloured by TPOT."""
    import plotly.graph_objects as go

    f = data.feasible
    knobs = [k for k in data.knobs if f"knob.{k}" in f and f[f"knob.{k}"].nunique() > 1]
    if len(f) < 3 or not knobs:
        return None
    dims = []
    for k in knobs:
        labels = ordered_labels(f[f"knob.{k}"])
        if f[f"knob.{k}"].isna().any():
            labels.append("n/a")
        codes = [labels.index(label(v)) for v in f[f"knob.{k}"]]
        dims.append({"label": k, "values": codes, "tickvals": list(range(len(labels))),
                     "ticktext": labels, "range": [-0.3, len(labels) - 0.7]})
    dims.append({"label": "TPOT ms", "values": f["tpot_ms"].astype(float).tolist()})
    fig = go.Figure(go.Parcoords(
        line={"color": f["tpot_ms"].astype(float).tolist(), "colorscale": "Viridis",
              "showscale": True, "colorbar": {"title": "TPOT ms"}},
        dimensions=dims))
    fig.update_layout(title="feasible configurations: knobs to TPOT (dark is fast)",
                      template="plotly_white", height=460)
    return fig


def _html_tables(tables: dict[str, pd.DataFrame]) -> str:
    def fmt(v: Any) -> str:
        return f"{v:.2f}" if isinstance(v, float) else str(v)

    return "".join(
        f"<h2>{html.escape(title)}</h2>" + df.to_html(index=False, na_rep="-", escape=True,
                                                       float_format=fmt)
        for title, df in tables.items() if not df.empty)     # no empty table, no heading


def render(data: StudyData, tables: dict[str, pd.DataFrame]) -> str:
    """The page: plots (Pareto with the baseline, importance, parallel coordinates, accept
    length, TPOT per knob), then ``tables`` (title -> rows as they should read)."""
    import plotly.io as pio
    from plotly.offline import get_plotlyjs

    importance = importance_figure(data)
    figs = [pareto_figure(data), *(regime_front_figure(data, g) for g in data.regimes if g.rows),
            *(f for f in (importance, parallel_figure(data), accept_figure(data))
              if f is not None), *knob_figures(data)]
    parts = [pio.to_html(f, full_html=False, include_plotlyjs=False, config={
        "displaylogo": False}) for f in figs]
    if importance is not None:
        regimes = sum(1 for g in data.regimes if g.rows)
        parts.insert(2 + regimes, f"<p class=note>{IMPORTANCE_NOTE}</p>")
    clock = (f"Figures are {data.clock} (the built-in simulator)."
             if data.simulated else "Figures are wall-clock time.")
    from tuner.report._tables import pick_sentence

    said = pick_sentence(data)
    summary = html.escape(data.summary()) + (f". {html.escape(said)}" if said else "")
    table_html = _html_tables(tables)
    overhead = ("" if data.overhead is None else
                f"<p class=overhead>{html.escape(data.overhead.sentence())}.</p>")
    if data.budget is not None:
        overhead += f"<p class=budget>{html.escape(data.budget.sentence())}.</p>"
    gate = ("" if data.accuracy is None else "<h2>Accuracy gate</h2><ul>" + "".join(
        f"<li>{html.escape(line)}</li>" for line in data.accuracy.sentences()) + "</ul>")
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>tuner report: {html.escape(data.name)}</title>
<script>{get_plotlyjs()}</script>
<style>body{{font-family:system-ui,sans-serif;margin:24px;max-width:1200px}}
table{{border-collapse:collapse;font-size:13px}}td,th{{border:1px solid #ddd;padding:4px 8px}}
th{{background:#f3f3f3}}</style></head>
<body><h1>tuner report: {html.escape(data.name)}</h1>
<p>{summary}. {clock} TPOT is the token-weighted mean over measured requests
(decode time / decode tokens); accept length is this trial's tokens / verify rounds;
accuracy is exact match of the final number on a fixed, seeded GSM8K subset.</p>
{overhead}
{''.join(parts)}
{gate}
{table_html}
</body></html>"""
