"""Progress for a night: a live rich Progress on a terminal, one line per trial otherwise.

The live view is two lines that fit the terminal: a bar (the share of the trial budget or
of the hours spent, whichever is further), launches done of the budget, ETA and the best
TPOT; then failures by reason, gated trials, repeats and trials running (cropped first).
Counts cover the whole study, so a resumed sweep shows what earlier runs did too.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING
from typing import Any

from tuner.sweep import Progress


if TYPE_CHECKING:
    from rich.console import Console
    from rich.live import Live

    from tuner.study.storages import StudyView


def _hms(seconds: float) -> str:
    s = int(max(0, seconds))
    return f"{s // 3600:d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def eta_s(p: Progress, now: float) -> float | None:
    """Seconds left: to the ``--hours`` deadline, or at this run's pace to the trial
    budget, whichever ends first; None before either can be known."""
    elapsed = now - p.started
    left = []
    if p.hours:
        left.append(p.hours * 3600 - elapsed)
    this_run = p.done - p.done_before
    if p.budget and this_run > 0:
        left.append(elapsed / this_run * max(0, p.budget - p.done))
    return max(0.0, min(left)) if left else None


def fraction(p: Progress, now: float) -> float:
    """How far the sweep is, 0..1: the trial budget or the hours, whichever is further."""
    parts = [p.done / p.budget] if p.budget else []
    if p.hours:
        parts.append((now - p.started) / (p.hours * 3600))
    return min(1.0, max(parts, default=0.0))


def best_text(p: Progress) -> str:
    """The pick so far as every output names it: its TPOT is the mean of its launches
    once the finals re-measure it (it may rise: the first reading was the luckiest)."""
    if p.best_tpot is None:
        return "pick -"
    runs = f" x{p.best_launches}" if p.best_launches > 1 else ""
    out = f"pick #{p.best_number} {p.best_tpot:.2f} ms{runs}"
    if p.baseline_tpot:
        out += f" {p.baseline_tpot / p.best_tpot:.2f}x"
    if p.best_figures:
        out += f" ({p.best_figures})"
    if not p.best_checked:
        out += " (accuracy not checked)"
    return out


def counts_text(p: Progress) -> str:
    fails = ", ".join(f"{n} {reason}" for reason, n in sorted(
        p.failures.items(), key=lambda kv: (-kv[1], kv[0])))
    failed = f"{p.failed} failed" + (f" ({fails})" if fails else "")
    return f"{failed}, {p.gated} gated, {p.duplicates} repeats, {p.running} running"


def status_line(p: Progress, now: float) -> str:
    """The whole status as one line (logs and non-terminal output)."""
    eta = eta_s(p, now)
    budget = f"/{p.budget}" if p.budget else ""
    return (f"elapsed {_hms(now - p.started)}  ETA {'-' if eta is None else _hms(eta)}  "
            f"trials {p.done}{budget} done  {best_text(p)} (vs the baseline)  "
            f"{counts_text(p)}")


def live_view(p: Progress, now: float) -> Any:
    """The two live lines as a rich Progress (bar, done/budget, ETA, best) plus the counts."""
    from rich.console import Group
    from rich.progress import BarColumn
    from rich.progress import Progress as RichProgress
    from rich.progress import TextColumn
    from rich.text import Text

    bar = RichProgress(BarColumn(bar_width=22), TextColumn("{task.description}"),
                       TextColumn("ETA {task.fields[eta]}"), TextColumn("{task.fields[best]}"),
                       auto_refresh=False, expand=False)
    eta = eta_s(p, now)
    done = f"{p.done}/{p.budget}" if p.budget else f"{p.done} done"
    bar.add_task(done, total=1000, completed=round(1000 * fraction(p, now)),
                 eta="-" if eta is None else _hms(eta), best=best_text(p))
    counts = Text(counts_text(p), style="dim", no_wrap=True, overflow="ellipsis")
    return Group(bar.make_tasks_table(bar.tasks), counts)


class Display:
    def __init__(self, console: Console, *, interactive: bool, simulated: bool) -> None:
        self.console = console
        self.interactive = interactive
        self.simulated = simulated
        self._last = ""
        self._done = -1
        self._notes = 0
        self._live: Live | None = None
        self._progress: Progress | None = None

    def __enter__(self) -> Display:
        if self.interactive:
            from rich.live import Live

            self._live = Live(console=self.console, refresh_per_second=2, transient=False,
                              get_renderable=self._render)
            self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.stop()

    def _render(self) -> Any:
        from rich.text import Text

        p = self._progress
        return live_view(p, time.monotonic()) if p is not None else Text("")

    def update(self, p: Progress) -> None:
        self._progress = p
        if p.last and p.last != self._last:
            self._last = p.last
            stamp = time.strftime("%H:%M:%S")
            self.console.print(f"[dim]{stamp}[/] {p.last}", highlight=False)
            if not self.interactive and p.done != self._done:
                self._done = p.done
                self.console.print(f"[dim]{stamp}   {status_line(p, time.monotonic())}[/]",
                                   highlight=False)
        for note in p.notes[self._notes:]:       # said once each, after the event's line
            self.console.print(f"[yellow]note[/]: {note}", highlight=False)
        self._notes = len(p.notes)


def print_front(console: Console, study: StudyView, *, simulated: bool) -> None:
    """The pick and the front as `tuner report` shows them (:func:`tuner.report.
    print_answer`)."""
    from tuner.report import collect
    from tuner.report import print_answer

    print_answer(console, collect(study))
