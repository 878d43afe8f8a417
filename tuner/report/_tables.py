"""The report's tables (pandas) and their rich rendering."""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any

import pandas as pd

from tuner.report._data import StudyData
from tuner.report._data import differs
from tuner.report._regimes import print_regimes


if TYPE_CHECKING:
    from rich.console import Console


def _num(v: Any) -> Any:
    """A JSON-ready number: None for missing, an int for a whole count."""
    if v is None or (isinstance(v, float) and pd.isna(v)) or v is pd.NA:
        return None
    return v.item() if hasattr(v, "item") else v


def _pair(lo: Any, hi: Any) -> list[float] | None:
    return None if _num(lo) is None or _num(hi) is None else [float(lo), float(hi)]


def _row(r: Any, data: StudyData) -> dict[str, Any]:
    """One trial of the front or leaderboard; numbers stay numbers (``--json``)."""
    return {
        "trial": int(r["number"]), "kind": r["kind"],
        "launches": int(r["launches"]) if pd.notna(r.get("launches")) else 1,
        "tpot_ms": _num(r["tpot_ms"]), "tpot_ci95": _pair(r.get("tpot_lo"), r.get("tpot_hi")),
        "decode_tok_s": _num(r.get("decode_tok_s")), "accuracy": _num(r.get("accuracy")),
        "accuracy_ci95": _pair(r.get("acc_lo"), r.get("acc_hi")),
        "accuracy_questions": _num(r.get("accuracy_questions")),
        "accuracy_sample": r.get("accuracy_sample") if isinstance(
            r.get("accuracy_sample"), str) else None,
        "screening_accuracy": _num(r.get("screening_accuracy")),
        "baseline_accuracy": _num(r.get("baseline_accuracy")),
        "paired_drop_pp": _num(r.get("paired_drop_pp")), "p_drop": _num(r.get("p_drop")),
        "accuracy_by_kind": r.get("accuracy_by_kind") if isinstance(
            r.get("accuracy_by_kind"), str) else None,
        "first_reading_ms": _num(r.get("first_reading_ms")),
        "accept_length": _num(r.get("accept_length")), "speedup": _num(r.get("speedup")),
        "tpot_ms_by_class": _classes(r.get("class_tpot_ms")),
        "on_front": bool(r.get("on_front")), "pick": bool(r.get("pick")),
        "confirmed": bool(r.get("confirmed")),
        "differs_from_baseline": differs(r, data.baseline),
        "config": r.get("config"),
        "verdict": r["verdict"],
    }


def _classes(value: Any) -> dict[str, float | None] | None:
    """A mixed workload's TPOT per content class (its first launch's), or None."""
    return {c: _num(v) for c, v in value.items()} if isinstance(value, dict) and value else None


def class_text(value: Any) -> str:
    """``code 15.8 / chat 23.1``: per-class TPOT in ms, or empty."""
    if not value:
        return ""
    return " / ".join(f"{c} {_fmt(v, '.1f')}" for c, v in value.items())


def display_table(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` (front or leaderboard rows) as text: TPOT and its interval at the same
    precision, accuracy as percentages, counts as integers."""
    if df.empty:
        return df
    out = pd.DataFrame({"trial": [f"#{n}" for n in df["trial"]], "kind": df["kind"]})
    out["launches"] = df["launches"].astype(int)
    out["TPOT ms [95% CI]"] = [tpot_text(r) for _, r in df.iterrows()]
    out["tok/s"] = [_fmt(v, ".1f") for v in df["decode_tok_s"]]
    out["accuracy [95% CI]"] = [accuracy_text(r) for _, r in df.iterrows()]
    out["accept"] = [_fmt(v, ".2f") for v in df["accept_length"]]
    if "tpot_ms_by_class" in df and df["tpot_ms_by_class"].notna().any():
        out["TPOT ms by class"] = [class_text(v) for v in df["tpot_ms_by_class"]]
    out["speed-up"] = [_fmt(v, ".2f") + ("x" if _num(v) is not None else "")
                       for v in df["speedup"]]
    out["differs from the baseline"] = df["differs_from_baseline"]
    out["verdict"] = df["verdict"]
    return out


def accuracy_text(r: Any, paired: bool = False) -> str:
    """``90.0% [86.1%, 92.9%] on 300 (final sample)``: a configuration's one accuracy with
    its sample; ``paired``: and the paired comparison with the baseline on the same
    questions."""
    out = _fmt(r.get("accuracy"), ".1%")
    ci = r.get("accuracy_ci95")
    if ci:
        out += f" [{ci[0]:.1%}, {ci[1]:.1%}]"
    n, sample = _num(r.get("accuracy_questions")), r.get("accuracy_sample")
    kinds = r.get("accuracy_by_kind")
    if n:
        out += f" on {n}" + (f" ({sample}" + (f": {kinds}" if isinstance(kinds, str) else "")
                             + ")" if sample else "")
    drop = _num(r.get("paired_drop_pp"))
    if paired and drop is not None:
        out += (f"; the baseline {r['baseline_accuracy']:.1%} on them, {-drop:+.2f} pp "
                f"paired (p = {r['p_drop']:.2g})")
    return out


def tpot_text(r: Any) -> str:
    ci = r["tpot_ci95"]
    return _fmt(r["tpot_ms"], ".2f") + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")


def front_table(data: StudyData) -> pd.DataFrame:
    return pd.DataFrame([_row(r, data) for _, r in data.front().iterrows()])


def pick_row(data: StudyData) -> dict[str, Any] | None:
    """The pick as one row (``tuner report --json``'s ``pick``), or None."""
    rows = [_row(r, data) for _, r in data.pick().iterrows()]
    return rows[0] if rows else None


def pick_sentence(data: StudyData) -> str | None:
    """The pick in words, with every figure as every output shows it: TPOT pooled over its
    launches, the first reading, the mean accept length, its one accuracy with the paired
    comparison, and the capacity it is exported at. None before there is a pick."""
    p = data.answer.pick if data.answer is not None else None
    r = pick_row(data)
    if p is None or r is None or p.tpot_ms is None:
        return None
    runs = (f"the mean of {p.launches} launches (first reading {p.first_reading_ms:.2f})"
            if p.launches > 1 and p.first_reading_ms else "1 launch, unconfirmed")
    out = f"the pick #{p.number}: TPOT {tpot_text(r)} ms, {runs}"
    if p.accept_length:
        out += f"; accept length {p.accept_length:.2f}"
    if p.accuracy is not None:
        out += f"; accuracy {accuracy_text(r, paired=True)}"
    elif not p.accuracy_checked:
        out += "; accuracy not checked (nothing scored its answers)"
    if p.capacity_launch is not None:
        held = " ".join(f"{k}={v}" for k, v in p.capacity_launch.held.items())
        out += f"; {held} (the largest capacity the finals saw serve: what export writes)"
    return out


def pick_table(data: StudyData) -> pd.DataFrame:
    return pd.DataFrame([_row(r, data) for _, r in data.pick().iterrows()])


def leaderboard(data: StudyData, top: int) -> pd.DataFrame:
    m = data.measured.copy()
    if m.empty:
        return pd.DataFrame()
    m["_order"] = m["kind"].map({"feasible": 0, "refused": 1, "gated": 2}).fillna(3)
    m = m.sort_values(["_order", "tpot_ms"]).head(top)
    return pd.DataFrame([_row(r, data) for _, r in m.iterrows()])


def _fmt(v: Any, spec: str) -> str:
    return "-" if _num(v) is None else format(_num(v), spec)


def print_tables(out: Console, data: StudyData, front: pd.DataFrame, board: pd.DataFrame
                 ) -> None:
    from rich.table import Table

    clock = f"; {data.clock}" if data.simulated else ""
    out.print(f"[bold]{data.name}[/]: {data.summary()}{clock}"
              + (f"; measured on {data.workload}" if data.workload else ""))
    note = data.answer.pick_note() if data.answer is not None else None
    if note:
        out.print(f"[yellow]note[/]: {note}", highlight=False)
    said = pick_sentence(data)
    if said:
        out.print(said, highlight=False)
    for title, df in (("The pick (tuner export --pick fastest)", pick_table(data)),
                      ("Pareto front", front), ("Leaderboard", board)):
        if df.empty:
            continue
        t = Table(title=title)
        shown = display_table(df)
        by_class = "TPOT ms by class" in shown
        for col in ("trial", "TPOT ms [95% CI]", *(["TPOT ms by class"] if by_class else []),
                    "tok/s", "accuracy [95% CI]", "accept", "speed-up",
                    "differs from the baseline", "verdict"):
            t.add_column(col, overflow="fold")
        for (_, r), (_, d) in zip(df.iterrows(), shown.iterrows(), strict=True):
            colour = {"feasible": "green", "gated": "yellow", "refused": "yellow"}.get(
                r["kind"], "red")
            runs = f" x{r['launches']}" if r["launches"] > 1 else ""
            t.add_row(d["trial"], d["TPOT ms [95% CI]"] + runs,
                      *([d["TPOT ms by class"]] if by_class else []), d["tok/s"],
                      d["accuracy [95% CI]"], d["accept"], d["speed-up"],
                      r["differs_from_baseline"], f"[{colour}]{r['verdict']}[/]")
        out.print(t)
    print_regimes(out, data)
    _plain_table(out, "Failures by reason", data.failures())
    if data.overhead is not None:
        out.print(data.overhead.sentence(), highlight=False)
    if data.budget is not None:
        out.print(data.budget.sentence(), highlight=False)
    if data.accuracy is not None:
        from tuner.report._accuracy import final_table

        out.print("[bold]Accuracy gate[/]")
        for line in data.accuracy.sentences():
            out.print(f"  {line}")
        _plain_table(out, "Final accuracy sample (each finals launch vs the baseline's)",
                     final_table(data.accuracy))
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


def print_answer(out: Console, data: StudyData) -> None:
    """The end of a sweep: the pick and the front as `tuner report` shows them (same TPOT,
    interval, launches and verdict), readable at 80 columns: the table holds the figures,
    each configuration follows on its own wrapped line."""
    from rich.table import Table

    clock = f" ({data.clock})" if data.simulated else ""
    out.print(f"[bold]{data.name}[/]: {data.summary()}")
    note = data.answer.pick_note() if data.answer is not None else None
    if note:
        out.print(f"[yellow]note[/]: {note}", highlight=False)
    rows = pd.concat([data.pick(), data.front()]).drop_duplicates("number")
    if rows.empty:
        out.print("no feasible configuration was measured")
        return
    said = pick_sentence(data)
    if said:
        out.print(said, highlight=False)
    shown = display_table(pd.DataFrame([_row(r, data) for _, r in rows.iterrows()]))
    t = Table(title=f"The pick and the Pareto front{clock}")
    for col in ("trial", "TPOT ms [95% CI]", "accuracy", "speed-up", "verdict"):
        t.add_column(col, overflow="fold")
    for (_, r), (_, d) in zip(rows.iterrows(), shown.iterrows(), strict=True):
        runs = f" x{int(r['launches'])}" if r["launches"] > 1 else ""
        t.add_row(d["trial"], d["TPOT ms [95% CI]"] + runs, d["accuracy [95% CI]"],
                  d["speed-up"], d["verdict"])
    out.print(t)
    for (_, r), (_, d) in zip(rows.iterrows(), shown.iterrows(), strict=True):
        out.print(f"{d['trial']}: {differs(r, data.baseline) or '-'}", highlight=False)
    print_regimes(out, data)
    if data.overhead is not None:
        out.print(data.overhead.sentence(), highlight=False)
    if data.budget is not None:
        out.print(data.budget.sentence(), highlight=False)


def _plain_table(out: Console, title: str, df: pd.DataFrame) -> None:
    """``df`` as a rich table of its cells as text; nothing when it is empty."""
    from rich.table import Table

    if df.empty:
        return
    t = Table(title=title)
    for col in df.columns:
        t.add_column(col, overflow="fold")
    for _, r in df.iterrows():
        t.add_row(*(str(r[c]) for c in df.columns))
    out.print(t)
