"""The sweep's live progress: fits 80 columns, counts the whole study, an ETA that moves."""

from __future__ import annotations

import copy
import io
from pathlib import Path

from rich.console import Console

from tests.sweep_tests.model_runner import ModelRunner
from tests.sweep_tests.model_runner import model_sweep
from tuner.cli._sweep_display import eta_s
from tuner.cli._sweep_display import live_view
from tuner.cli._sweep_display import status_line
from tuner.sweep import Progress


def _render(p: Progress, now: float, width: int) -> list[str]:
    out = io.StringIO()
    Console(file=out, width=width, color_system=None, legacy_windows=False).print(
        live_view(p, now))
    return out.getvalue().rstrip("\n").split("\n")


def _night(**kw: object) -> Progress:
    p = Progress(started=1000.0, **kw)  # type: ignore[arg-type]
    p.baseline_tpot, p.best_tpot, p.best_number = 26.51, 17.42, 123
    p.failures = {"oom": 3, "launch_error": 1, "startup_timeout": 2}
    p.failed, p.gated, p.duplicates, p.running = 6, 4, 9, 1
    return p


def test_at_80_columns_the_first_line_holds_bar_eta_and_best() -> None:
    p = _night(budget=300, done=120, done_before=100)
    lines = _render(p, now=1000.0 + 600, width=80)
    assert len(lines) == 2 and all(len(line) <= 80 for line in lines)
    first = lines[0]
    assert "━" in first and "120/300" in first
    assert "ETA 1:30:00" in first                # 20 launches in 600 s; 180 to go
    assert "pick #123 17.42 ms 1.52x" in first
    p.best_launches = 13                         # after the finals: the pooled mean's launches
    assert "pick #123 17.42 ms x13 1.52x" in _render(p, now=1000.0 + 600, width=80)[0]
    assert lines[1].startswith("6 failed (3 oom, 2 startup_timeout, 1 launch_error)")
    narrow = _render(p, now=1600.0, width=60)     # the counts line is cropped, not wrapped
    assert len(narrow) == 2 and narrow[1].endswith("…")


def test_with_hours_the_eta_counts_down_to_the_deadline() -> None:
    p = _night(hours=1.0)
    assert eta_s(p, 1000.0 + 600) == 3000.0
    assert eta_s(p, 1000.0 + 660) == 2940.0
    assert "ETA 0:49:00" in _render(p, 1000.0 + 660, width=80)[0]
    assert eta_s(p, 1000.0 + 4000) == 0.0
    both = _night(hours=1.0, budget=30, done=20, done_before=0)   # the budget ends first
    assert eta_s(both, 1000.0 + 600) == 300.0
    assert eta_s(Progress(started=0.0, budget=30), 10.0) is None  # no pace yet, no deadline


def test_a_resumed_sweep_counts_the_whole_study_with_model_backed_runner(
        tmp_path: Path) -> None:
    model_sweep(tmp_path, ModelRunner(seed=1), trials=4, finals_share=0.0)
    seen: list[Progress] = []
    model_sweep(tmp_path, ModelRunner(seed=2), trials=7, finals_share=0.0,
                on_progress=lambda p: seen.append(copy.deepcopy(p)))
    # the first report says where the study stands: 4 earlier launches of 7, not 0/7
    assert seen[0].done == 4 and seen[0].done_before == 4 and seen[0].budget == 7
    assert seen[0].last.startswith("resuming study 's': 4 launches done, 3 left")
    assert any(p.done == 5 for p in seen)       # then this run's first launch: 4 + 1
    assert seen[-1].done == 7
    line = status_line(seen[-1], seen[-1].started + 1.0)
    assert "trials 7/7 done" in line
