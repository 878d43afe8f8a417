"""``tuner dashboard`` serves optuna-dashboard read-only: by default one trial per
configuration with the figures the report shows (its best trials are the tool's front);
``--launches``: every launch, gated ones infeasible; artifacts in both."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import optuna
import pytest

from tests.conftest import serve_dashboard
from tests.report_tests.conftest import STUDY
from tests.report_tests.conftest import colour_pixels
from tests.report_tests.conftest import rendered_dom
from tests.report_tests.conftest import screenshot
from tests.sweep_tests import assert_only_measurements_complete


@pytest.fixture
def dashboard(mixed_study: Path):
    yield from serve_dashboard(STUDY, mixed_study, "--launches")


@pytest.fixture
def answer_dashboard(mixed_study: Path):
    yield from serve_dashboard(STUDY, mixed_study)


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


def _pareto_plot(dom: str) -> str:
    """The SVG of the dashboard's Pareto Front card (up to the next card, History)."""
    start = dom.index("Pareto Front</h6>")
    return dom[start:dom.index("History</h6>", start)]


def test_dashboard_study_holds_only_measurements_and_its_pareto_axis_fits_them(
        dashboard: str, mixed_study: Path, tmp_path: Path) -> None:
    study = optuna.load_study(study_name=STUDY, storage=f"sqlite:///{mixed_study}")
    states = [t.state for t in study.get_trials(deepcopy=False)]
    assert optuna.trial.TrialState.FAIL in states
    assert_only_measurements_complete(study)     # no stand-in stored: failures stay failed
    sid = httpx.get(dashboard + "/api/studies", timeout=10).json()["study_summaries"][0][
        "study_id"]
    shown = httpx.get(f"{dashboard}/api/studies/{sid}", params={"after": 0},
                      timeout=30).json()["trials"]
    assert [t["state"] for t in shown] == [s.name.capitalize() for s in states]
    tpots = [t.values[0] for t in study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))]
    url = f"{dashboard}/dashboard/studies/{sid}"
    plot = _pareto_plot(rendered_dom(url, tmp_path))
    ticks = [float(v) for v in re.findall(r'class="xtick"><text[^>]*data-unformatted="([^"]+)"',
                                          plot)]
    xs = [float(x) for x in re.findall(r'class="point"[^>]*transform="translate\(([\d.]+),',
                                       plot)]
    width = float(re.search(r'class="nsewdrag drag"[^>]*width="([\d.]+)"', plot).group(1))
    assert len(xs) == len(tpots)                  # every measured trial drawn, nothing else
    assert 0.8 * min(tpots) <= min(ticks) and max(ticks) <= 1.2 * max(tpots), ticks
    assert max(xs) - min(xs) >= 0.6 * width       # spread over the plot, not in one corner
    screenshot(url, tmp_path / "pareto.png", width=1400, height=1400, budget_ms=15000)


def test_dashboard_shows_one_trial_per_configuration_and_its_best_trials_are_the_front(
        answer_dashboard: str, mixed_study: Path) -> None:
    from tuner.study import study_answer

    study = optuna.load_study(study_name=STUDY, storage=f"sqlite:///{mixed_study}")
    answer = study_answer(study)
    assert answer.pick is not None
    sid = httpx.get(answer_dashboard + "/api/studies", timeout=10).json()[
        "study_summaries"][0]["study_id"]
    detail = httpx.get(f"{answer_dashboard}/api/studies/{sid}", params={"after": 0},
                       timeout=30).json()
    assert [t["number"] for t in detail["trials"]] == [c.number for c in
                                                       answer.configurations]
    best = {t["number"]: t["values"] for t in detail["best_trials"]}
    assert set(best) == {c.number for c in answer.front}       # the card is the front
    for c in answer.front:
        assert best[c.number][0] == pytest.approx(c.tpot_ms)    # the displayed TPOT
    attrs = {t["number"]: {a["key"]: a["value"] for a in t["user_attrs"]}
             for t in detail["trials"]}
    assert attrs[answer.pick.number]["verdict"] == "pick"
    assert f"trial #{answer.pick.number}" in detail["note"]["body"]
    # writes refused: the study and its trials are as they were
    httpx.delete(f"{answer_dashboard}/api/studies/{sid}", timeout=10)
    assert len(optuna.load_study(study_name=STUDY, storage=f"sqlite:///{mixed_study}")
               .trials) == len(study.trials)
