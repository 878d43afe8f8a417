"""``python -m tuner_sim calibrate [--json] [--machine NAME]``: model vs published numbers.
``python -m tuner_sim host PATH``: power a simulated machine on (its idle meminfo at PATH,
``tuner_sim.host``).

The server itself runs as ``python -m tuner_sim.<variant> serve`` (fork, stock,
fork_unshared).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING


if TYPE_CHECKING:
    from tuner_sim.calibrate import Row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tuner_sim")
    sub = ap.add_subparsers(dest="cmd", required=True)
    cal = sub.add_parser("calibrate", help="published figures beside the model's")
    cal.add_argument("--json", action="store_true")
    cal.add_argument("--machine", default="dgx-spark")
    cal.add_argument("--model", default=None, help="a checkpoint folder (or its config.json)"
                     ": the twin's predictions, DERIVED when no calibrated profile matches")
    host = sub.add_parser("host", help="write an idle simulated machine's meminfo")
    host.add_argument("path")
    args = ap.parse_args(argv)
    if args.cmd == "host":
        from tuner_sim.host import main as host_main

        return host_main(args.path)
    from tuner_sim.calibrate import qwen38_rows
    from tuner_sim.calibrate import rows
    from tuner_sim.calibrate import spark_rows

    try:
        if args.model is not None:
            return _predict(args.model, args.machine, args.json)
        table = rows(args.machine) + spark_rows(args.machine) + qwen38_rows(args.machine)
    except (LookupError, ValueError) as exc:    # an unknown --machine or --model: one line
        print(f"error: {exc.args[0] if exc.args else exc}", file=sys.stderr)
        return 2
    return _print_rows(table, args.machine, args.json)


def _print_rows(table: list[Row], machine: str, as_json: bool) -> int:
    """The rows as a table (or JSON); exit 1 when a checked one is off."""
    if as_json:
        print(json.dumps([{**r.__dict__, "error_pct": r.error_pct, "ok": r.ok} for r in table],
                         indent=2))
    else:
        from rich.console import Console
        from rich.table import Table

        t = Table(title=f"Spark simulator vs published figures (machine {machine})")
        for col in ("table", "metric", "published", "model", "error", "check"):
            t.add_column(col, justify="right" if col in ("published", "model", "error")
                         else "left")
        for r in table:
            verdict = {None: "info", True: "ok", False: "FAIL"}[r.ok]
            if r.check == "above1":
                verdict += " (>1x)"
            elif r.check.startswith("within"):
                verdict += f" (+-{r.check[6:]}%)"
            t.add_row(r.table, r.metric, f"{r.published:.2f} {r.unit}",
                      f"{r.model:.2f} {r.unit}", f"{r.error_pct:+.1f}%", verdict)
        Console(width=None if sys.stdout.isatty() else 180).print(t)
    return 0 if all(r.ok is not False for r in table) else 1


def _predict(path: str, machine_name: str, as_json: bool) -> int:
    """``calibrate --model PATH``: Ling's published rows when PATH is Ling's; otherwise the
    twin's predictions, labelled with its source (DERIVED), none of them checked."""
    from tuner_sim.predict import predictions
    from tuner_sim.profiles import load_machine
    from tuner_sim.profiles import load_model_for_path

    machine = load_machine(machine_name)
    try:
        model = load_model_for_path(path)
    except LookupError:
        raise LookupError(f"{path}: no calibrated profile matches it and it is not a local "
                          "checkpoint folder with a config.json") from None
    if model.id == "ling-3.0-flash-fp4":
        return main(["calibrate", "--machine", machine_name, *(["--json"] if as_json else [])])
    if model.id == "qwen3.8-flash-next-nvfp4" and machine_name == "dgx-spark":
        from tuner_sim.calibrate import qwen38_rows

        return _print_rows(qwen38_rows(machine_name), machine_name, as_json)
    table = predictions(model, machine, path)
    if as_json:
        print(json.dumps([r.__dict__ for r in table], indent=2))
        return 0
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"{model.twin} twin of {path} (machine {machine_name}): predictions; no "
                    "published figures, nothing checked")
    for col in ("table", "metric", "model", "source"):
        t.add_column(col, justify="right" if col == "model" else "left")
    for r in table:
        value = "-" if r.model is None else f"{r.model:,.2f} {r.unit}"
        t.add_row(r.table, r.metric + (f" ({r.note})" if r.note else ""), value, r.source)
    Console(width=None if sys.stdout.isatty() else 180).print(t)
    return 0


if __name__ == "__main__":
    sys.exit(main())
