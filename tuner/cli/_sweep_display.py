"""Progress for a night: a live panel on a terminal, one line per trial otherwise."""

from __future__ import annotations

import time
from typing import Any

from tuner.sweep import Progress


def _hms(seconds: float) -> str:
    s = int(max(0, seconds))
    return f"{s // 3600:d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def _status(p: Progress) -> str:
    elapsed = time.monotonic() - p.started
    eta = "-"
    if p.budget and p.done:
        eta = _hms(elapsed / p.done * max(0, p.budget - p.done))
    best = "-"
    if p.best_tpot is not None:
        best = f"{p.best_tpot:.2f} ms (#{p.best_number})"
        if p.baseline_tpot:
            best += f", {p.baseline_tpot / p.best_tpot:.2f}x the baseline"
    budget = f"/{p.budget}" if p.budget else ""
    return (f"elapsed {_hms(elapsed)}  ETA {eta}  trials {p.done}{budget} done, "
            f"{p.failed} failed, {p.gated} gated, {p.duplicates} repeats, {p.running} running"
            f"  best feasible TPOT {best}")


class Display:
    def __init__(self, console: Any, *, interactive: bool, simulated: bool) -> None:
        self.console = console
        self.interactive = interactive
        self.simulated = simulated
        self._last = ""
        self._done = 0
        self._live: Any = None

    def __enter__(self) -> Display:
        if self.interactive:
            from rich.live import Live

            self._live = Live("", console=self.console, refresh_per_second=2, transient=False)
            self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.__exit__(*exc)

    def update(self, p: Progress) -> None:
        if p.last and p.last != self._last:
            self._last = p.last
            stamp = time.strftime("%H:%M:%S")
            self.console.print(f"[dim]{stamp}[/] {p.last}", highlight=False)
            if not self.interactive and p.done != self._done:
                self._done = p.done
                self.console.print(f"[dim]{stamp}   {_status(p)}[/]", highlight=False)
        if self._live is not None:
            self._live.update(_status(p))


def print_front(console: Any, study: Any, *, simulated: bool) -> None:
    from rich.table import Table

    from tuner.study import Role
    from tuner.study import baseline_trial
    from tuner.study import feasible_front
    from tuner.study import summarize

    front = [summarize(t) for t in sorted(feasible_front(study), key=lambda t: t.values[0])]
    base_trial = baseline_trial(study)
    base = summarize(base_trial) if base_trial is not None else None
    title = "Pareto front (feasible trials; TPOT vs GSM8K accuracy)"
    if simulated:
        title += " - simulated machine time"
    table = Table(title=title)
    for col in ("trial", "TPOT ms [95% CI]", "tok/s", "accuracy", "accept len", "speed-up",
                "differs from the baseline"):
        table.add_column(col)
    base_cfg = base.config if base is not None else {}
    for t in front:
        assert t.values is not None
        ci = t.tpot_ci95
        diff = {k: v for k, v in t.config.items() if base_cfg.get(k) != v}
        table.add_row(
            f"#{t.number}" + (" (baseline)" if t.role == Role.BASELINE else ""),
            f"{t.values[0]:.2f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else ""),
            f"{t.decode_tok_s or 0:.1f}",
            f"{t.accuracy:.1%}" if t.accuracy is not None else "-",
            f"{t.accept_length:.2f}" if t.accept_length else "-",
            f"{base.values[0] / t.values[0]:.2f}x" if base is not None and base.values
            else "-",
            " ".join(f"{k}={v}" for k, v in diff.items()) or "-")
    console.print(table)
