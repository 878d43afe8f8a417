"""The report's tables (pandas) and their rich rendering."""

from __future__ import annotations

from typing import Any

import pandas as pd

from tuner.report._data import StudyData
from tuner.report._data import differs


def _verdict(r: Any, data: StudyData) -> str:
    """gated/failed, ``pick`` (what export takes), ``tie with the pick`` (TPOT intervals
    overlap: the data cannot say which is faster), or feasible."""
    if r["kind"] == "gated":
        return "gated: " + r["gate"]
    if r["kind"] != "feasible" or data.pick_number is None:
        return r["kind"]
    if int(r["number"]) == data.pick_number:
        return "pick"
    return "tie with the pick" if int(r["number"]) in data.tie_numbers else "feasible"


def _row(r: Any, data: StudyData) -> dict[str, Any]:
    base = data.baseline["tpot_ms"] if data.baseline else None
    return {
        "trial": int(r["number"]), "kind": r["kind"],
        "launches": int(r["launches"]) if pd.notna(r.get("launches")) else 1,
        "tpot_ms": r["tpot_ms"], "tpot_ci95": (f"[{r['tpot_lo']:.2f}, {r['tpot_hi']:.2f}]"
                                               if pd.notna(r.get("tpot_lo")) else None),
        "decode_tok_s": r.get("decode_tok_s"), "accuracy": r.get("accuracy"),
        "accuracy_ci95": (f"[{r['acc_lo']:.1%}, {r['acc_hi']:.1%}]"
                          if pd.notna(r.get("acc_lo")) else None),
        "accept_length": r.get("accept_length"),
        "speedup": (base / r["tpot_ms"]) if base and pd.notna(r["tpot_ms"]) else None,
        "differs_from_baseline": differs(r, data.baseline),
        "verdict": _verdict(r, data),
    }


def front_table(data: StudyData) -> pd.DataFrame:
    return pd.DataFrame([_row(r, data) for _, r in data.front().iterrows()])


def leaderboard(data: StudyData, top: int) -> pd.DataFrame:
    m = data.measured.copy()
    if m.empty:
        return pd.DataFrame()
    m["_order"] = (m["kind"] != "feasible").astype(int)
    m = m.sort_values(["_order", "tpot_ms"]).head(top)
    return pd.DataFrame([_row(r, data) for _, r in m.iterrows()])


def _fmt(v: Any, spec: str) -> str:
    if v is None or (isinstance(v, float) and pd.isna(v)):
        return "-"
    return format(v, spec)


def print_tables(out: Any, data: StudyData, front: pd.DataFrame, board: pd.DataFrame) -> None:
    from rich.table import Table

    clock = " - simulated machine time" if data.simulated else ""
    counts = data.trials["kind"].value_counts().to_dict()
    out.print(f"[bold]{data.name}[/]: {counts.get('feasible', 0)} feasible, "
              f"{counts.get('gated', 0)} gated, {counts.get('failed', 0)} failed trials{clock}")
    for title, df in (("Pareto front", front), ("Leaderboard", board)):
        t = Table(title=title)
        for col in ("trial", "TPOT ms [95% CI]", "tok/s", "accuracy [95% CI]", "accept",
                    "speed-up", "differs from the baseline", "verdict"):
            t.add_column(col, overflow="fold")
        for _, r in df.iterrows():
            colour = {"feasible": "green", "gated": "yellow"}.get(r["kind"], "red")
            runs = f" x{r['launches']}" if r["launches"] > 1 else ""
            t.add_row(f"#{r['trial']}",
                      f"{_fmt(r['tpot_ms'], '.2f')} {r['tpot_ci95'] or ''}{runs}",
                      _fmt(r["decode_tok_s"], ".1f"),
                      f"{_fmt(r['accuracy'], '.1%')} {r['accuracy_ci95'] or ''}",
                      _fmt(r["accept_length"], ".2f"), _fmt(r["speedup"], ".2f") + "x",
                      r["differs_from_baseline"], f"[{colour}]{r['verdict']}[/]")
        out.print(t)
    fails = data.failures()
    if not fails.empty:
        t = Table(title="Failures by reason")
        for col in fails.columns:
            t.add_column(col, overflow="fold")
        for _, r in fails.iterrows():
            t.add_row(*(str(r[c]) for c in fails.columns))
        out.print(t)
    eff = data.knob_effects()
    if not eff.empty:
        t = Table(title="Per-knob effects (feasible trials' TPOT)")
        for col in ("knob", "value", "trials", "failed", "gated", "median TPOT", "best TPOT"):
            t.add_column(col)
        for _, r in eff.iterrows():
            t.add_row(r["knob"], str(r["value"]), str(r["trials"]), str(r["failed"]),
                      str(r["gated"]), _fmt(r["median_tpot_ms"], ".2f"),
                      _fmt(r["best_tpot_ms"], ".2f"))
        out.print(t)
