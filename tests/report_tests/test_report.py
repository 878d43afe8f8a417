from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pandas as pd

from tests.conftest import tuner_argv
from tests.report_tests.conftest import STUDY
from tests.report_tests.conftest import colour_pixels
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


def test_html_report_shows_three_kinds_distinctly(mixed_study: Path, tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    assert run(mixed_study, "--html", str(page)).returncode == 0
    text = page.read_text()
    assert "cdn.plot.ly" not in text.split("</script>", 1)[1]   # self-contained
    png = screenshot(page.as_uri(), tmp_path / "report.png")
    hexrgb = [tuple(int(c[i:i + 2], 16) for i in (1, 3, 5)) for c in (FEASIBLE, GATED, FAILED)]
    counts = [colour_pixels(png, rgb) for rgb in hexrgb]
    assert all(n > 50 for n in counts), counts
