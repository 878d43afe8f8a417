from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pandas as pd

from tests.conftest import tuner_argv
from tests.report_tests.conftest import STUDY
from tests.report_tests.conftest import colour_pixels
from tests.report_tests.conftest import rendered_dom
from tests.report_tests.conftest import screenshot
from tuner.report._html import FAILED
from tuner.report._html import FEASIBLE
from tuner.report._html import GATED


def run(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(tuner_argv("report", STUDY, "--storage", str(db), *args),
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "COLUMNS": "200"})


def test_report_tables_json_and_csv(mixed_study: Path, tmp_path: Path) -> None:
    proc = run(mixed_study, "--csv", str(tmp_path / "t.csv"), "--top", "40")
    assert proc.returncode == 0, proc.stderr
    for title in ("Pareto front", "Leaderboard", "Failures by reason", "Per-knob effects"):
        assert title in proc.stdout
    assert "gated: collapse" in proc.stdout
    df = pd.read_csv(tmp_path / "t.csv")
    assert {"feasible", "gated", "failed"} <= set(df["kind"])
    js = json.loads(run(mixed_study, "--json").stdout)
    assert js["front"] and all(r["kind"] == "feasible" for r in js["front"])
    tpots = [r["tpot_ms"] for r in js["front"]]
    assert tpots == sorted(tpots)
    accs = [r["accuracy"] for r in js["front"]]
    assert accs == sorted(accs)                    # slower points must be more accurate
    assert js["failures"][0]["reason"] in ("oom", "startup_timeout")
    for r in js["front"] + js["leaderboard"]:          # numbers as numbers
        lo, hi = r["tpot_ci95"]
        assert isinstance(lo, float) and lo <= r["tpot_ms"] <= hi
        assert all(isinstance(v, float) for v in r["accuracy_ci95"] or [])
        assert isinstance(r["launches"], int) and r["on_front"] == (r in js["front"])
    assert js["importance"] and abs(sum(js["importance"].values()) - 1.0) < 1e-6
    raw = pd.read_csv(tmp_path / "t.csv", dtype=str, keep_default_na=False)
    assert raw.loc[raw["role"] == "baseline", "speedup"].astype(float).tolist() == [1.0]
    assert set(raw.loc[raw["on_front"] == "True", "number"].astype(int)) == {
        r["trial"] for r in js["front"]}
    pd.to_datetime(raw["started_at"])                  # timestamps, parseable
    for col in ("knob.spec_steps", "knob.spec_draft_tokens"):    # integers as integers
        assert all(v == "" or v.isdigit() for v in raw[col]), set(raw[col])


def test_html_report_shows_three_kinds_distinctly(mixed_study: Path, tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    assert run(mixed_study, "--html", str(page)).returncode == 0
    text = page.read_text()
    assert "cdn.plot.ly" not in text.split("</script>", 1)[1]   # self-contained
    png = screenshot(page.as_uri(), tmp_path / "report.png")
    hexrgb = [tuple(int(c[i:i + 2], 16) for i in (1, 3, 5)) for c in (FEASIBLE, GATED, FAILED)]
    counts = [colour_pixels(png, rgb) for rgb in hexrgb]
    assert all(n > 50 for n in counts), counts


def test_html_report_has_importance_parallel_coordinates_and_sorted_axes(
        mixed_study: Path, tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    assert run(mixed_study, "--html", str(page)).returncode == 0
    dom = rendered_dom(page.as_uri(), tmp_path, width=1300, height=4000)
    titles = re.findall(r'class="gtitle"[^>]*>([^<]+)<', dom)
    assert any(t.startswith("knob importance for TPOT") for t in titles), titles
    assert any(t.startswith("feasible configurations: knobs to TPOT") for t in titles)
    assert 'class="parcoords"' in dom
    axes = re.findall(r'class="axis-title"[^>]*>([^<]+)<', dom)     # parcoords' axis names
    assert "moe_backend" in axes and "TPOT ms" in axes, axes
    assert "baseline (trial #0's configuration)" in dom             # the baseline marker
    # the memory-fraction box plot: numeric categories in order, each once
    plot = next(seg for seg in dom.split('class="plot-container plotly"')
                if ">TPOT vs mem_fraction<" in seg)
    ticks = re.findall(r'class="xtick"><text[^>]*data-unformatted="([^"]+)"', plot)
    assert ticks == sorted(ticks, key=float) and len(ticks) == len(set(ticks)) > 1, ticks
    screenshot(page.as_uri(), tmp_path / "report-full.png", height=4000)


def _trace_points(plot: str) -> list[list[tuple[float, float]]]:
    """Each scatter trace's marker positions (screen pixels: x right, y down), in the
    figure's trace order, from the SVG Chromium rendered."""
    out = []
    for chunk in plot.split('class="trace scatter')[1:]:
        pts = re.findall(r'class="point"[^>]*transform="translate\(([-\d.]+),([-\d.]+)\)',
                         chunk.split('class="trace scatter')[0])
        out.append([(float(x), float(y)) for x, y in pts])
    return out


def test_html_front_star_has_no_better_point_to_its_left(mixed_study: Path,
                                                           tmp_path: Path) -> None:
    """Issue 23: the front's star had 12 faster points at the same accuracy to its left (the
    front chosen on first readings, drawn at pooled values). Under the plotted values, no
    feasible point lies left of a front point at equal or better accuracy."""
    page = tmp_path / "report.html"
    assert run(mixed_study, "--html", str(page)).returncode == 0
    dom = rendered_dom(page.as_uri(), tmp_path, width=1300, height=1400)
    plot = dom[dom.index('class="main-svg"'):dom.index('class="main-svg"', dom.index(
        'class="main-svg"') + 1) if dom.count('class="main-svg"') > 1 else len(dom)]
    feasible, front = _trace_points(plot)[:2]         # the figure's first two traces
    assert front and len(feasible) >= len(front)
    for fx, fy in front:
        better = [(x, y) for x, y in feasible if x < fx - 0.5 and y <= fy + 0.5]
        assert not better, (fx, fy, better)
