"""``tuner report``: the Pareto front, a leaderboard, failures and per-knob effects."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer


def report(
    study: str = typer.Argument(..., help="study name"),
    storage: str = typer.Option(None, help="Optuna storage URL or journal file (default "
                                "trials/<study>.db)"),
    top: int = typer.Option(10, min=1, help="leaderboard rows"),
    html: Path = typer.Option(None, help="write a self-contained HTML page with plots"),
    csv: Path = typer.Option(None, help="write the trials table as CSV"),
    json_: bool = typer.Option(False, "--json", help="print the front and leaderboard as JSON"),
) -> None:
    """Print the Pareto front and leaderboard (rich tables); optionally HTML, CSV, JSON."""
    import json

    from tuner.cli._common import console
    from tuner.cli._common import writing
    from tuner.report import collect
    from tuner.report import front_table
    from tuner.report import leaderboard
    from tuner.report import print_tables
    from tuner.study import open_study

    data = collect(open_study(study, storage))
    front = front_table(data)
    board = leaderboard(data, top)
    if csv is not None:
        cols = [c for c in data.trials.columns if c != "config"]
        with writing("--csv", csv):
            data.trials[cols].to_csv(csv, index=False)
    if html is not None:
        from tuner.report import render

        page = render(data, _page_tables(data, front, board))
        with writing("--html", html):
            html.write_text(page)
    if json_:
        from tuner.report import as_dict
        from tuner.report import pick_row
        from tuner.report import pick_sentence
        from tuner.report import regime_records

        typer.echo(json.dumps({"study": study, "simulated": data.simulated,
                               "workload": data.workload, "summary": data.summary(),
                               "pick_note": data.answer.pick_note() if data.answer else None,
                               "pick": pick_row(data),
                               "pick_sentence": pick_sentence(data),
                               "regimes": regime_records(data),
                               "front": front.to_dict(orient="records"),
                               "leaderboard": board.to_dict(orient="records"),
                               "failures": data.failures().to_dict(orient="records"),
                               "launch_overhead": data.overhead.as_dict()
                               if data.overhead is not None else None,
                               "budget": data.budget.as_dict()
                               if data.budget is not None else None,
                               "importance": data.importance,
                               "accuracy_gate": as_dict(data.accuracy)
                               if data.accuracy is not None else None},
                              indent=2, default=str))
        return
    print_tables(console(), data, front, board)
    if html is not None:
        console().print(f"wrote {html}")
    if csv is not None:
        console().print(f"wrote {csv}")


def _page_tables(data: Any, front: Any, board: Any) -> dict[str, Any]:
    """The HTML page's tables, title -> rows, in the order they appear."""
    from tuner.report import display_table
    from tuner.report import final_table
    from tuner.report import pick_table

    tables = {"The pick (tuner export --pick fastest)": display_table(pick_table(data)),
              "Pareto front": display_table(front), "Leaderboard": display_table(board),
              "Failures by reason": data.failures(), "Per-knob effects": data.knob_effects()}
    if data.regimes:
        from tuner.report import regime_front_table
        from tuner.report import regime_front_title
        from tuner.report import regime_table

        tables["The pick per load regime (tuner export --regime NAME)"] = regime_table(data)
        for g in data.regimes:
            tables[f"Load regime {regime_front_title(g)}"] = regime_front_table(data, g)
    if data.accuracy is not None and data.accuracy.final_rows:
        tables["Final accuracy sample"] = final_table(data.accuracy)
    return tables
