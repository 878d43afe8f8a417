"""``tuner dashboard`` serves optuna-dashboard: trials, gated ones infeasible, artifacts."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.conftest import tuner_argv
from tests.report_tests.conftest import STUDY
from tests.report_tests.conftest import colour_pixels
from tests.report_tests.conftest import screenshot
from tuner.trial._server import free_port


@pytest.fixture
def dashboard(mixed_study: Path):
    port = free_port()
    proc = subprocess.Popen(tuner_argv("dashboard", STUDY, "--storage", str(mixed_study),
                                       "--port", str(port)), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                if httpx.get(base + "/api/meta", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_dashboard_lists_trials_marks_gated_infeasible_and_serves_artifacts(
        dashboard: str) -> None:
    meta = httpx.get(dashboard + "/api/meta", timeout=10).json()
    assert meta["artifact_is_available"] is True
    studies = httpx.get(dashboard + "/api/studies", timeout=10).json()["study_summaries"]
    sid = studies[0]["study_id"]
    detail = httpx.get(f"{dashboard}/api/studies/{sid}", params={"after": 0},
                       timeout=30).json()
    trials = detail["trials"]
    gated = [t for t in trials if t["user_attrs"] and any(
        a["key"] == "gate" and a["value"] not in ("[]", "") for a in t["user_attrs"])]
    assert gated
    for t in gated:                                 # legacy constraints: the dashboard sees them
        assert any(c > 0 for c in t["constraints"]), t["constraints"]
    with_art = next(t for t in trials if t["artifacts"])
    art = next(a for a in with_art["artifacts"] if a["filename"].endswith("-result.json"))
    resp = httpx.get(f"{dashboard}/artifacts/{sid}/{with_art['trial_id']}/"
                     f"{art['artifact_id']}", timeout=10)
    assert resp.status_code == 200
    from tuner.trial import TrialResult

    assert TrialResult.model_validate_json(resp.content).config


def test_dashboard_pareto_view_greys_infeasible_trials(dashboard: str, tmp_path: Path) -> None:
    sid = httpx.get(dashboard + "/api/studies", timeout=10).json()["study_summaries"][0][
        "study_id"]
    png = screenshot(f"{dashboard}/dashboard/studies/{sid}", tmp_path / "dash.png",
                     width=1400, height=1400, budget_ms=15000)
    assert colour_pixels(png, (0xCC, 0xCC, 0xCC), tol=4) > 30   # plotly.js "Infeasible"
