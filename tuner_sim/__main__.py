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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tuner_sim")
    sub = ap.add_subparsers(dest="cmd", required=True)
    cal = sub.add_parser("calibrate", help="published figures beside the model's")
    cal.add_argument("--json", action="store_true")
    cal.add_argument("--machine", default="dgx-spark")
    host = sub.add_parser("host", help="write an idle simulated machine's meminfo")
    host.add_argument("path")
    args = ap.parse_args(argv)
    if args.cmd == "host":
        from tuner_sim.host import main as host_main

        return host_main(args.path)
    from tuner_sim.calibrate import rows

    try:
        table = rows(args.machine)
    except LookupError as exc:              # an unknown --machine: one line, not a traceback
        print(f"error: {exc.args[0] if exc.args else exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([{**r.__dict__, "error_pct": r.error_pct, "ok": r.ok} for r in table],
                         indent=2))
    else:
        from rich.console import Console
        from rich.table import Table

        t = Table(title=f"Spark simulator vs published figures (machine {args.machine})")
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


if __name__ == "__main__":
    sys.exit(main())
