"""One answer everywhere: after a sweep with finals, the pick's configuration, pooled TPOT
and interval are the same in the sweep's status line, `tuner report` (terminal, --json,
--csv, --html), `tuner export`'s summary and profile.yaml, and the dashboard's
``study.best_trials``; no re-measure launch is a best trial (real CLI processes on a study
made by the product's driver with the model-backed runner)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import optuna
import pandas as pd
import pytest
import yaml

from tests.conftest import tuner_argv
from tests.sweep_tests.model_runner import ModelRunner
from tests.sweep_tests.model_runner import model_sweep
from tuner.study import Role
from tuner.study import dashboard_storage
from tuner.study import locate
from tuner.study import study_answer
from tuner.study import summaries


def _cli(*args: str) -> str:
    out = subprocess.run(tuner_argv(*args), capture_output=True, text=True, timeout=180,
                         env={**os.environ, "COLUMNS": "200"})
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_the_pick_is_the_same_in_every_output_with_model_backed_runner(
        tmp_path: Path) -> None:
    seen = []
    study = model_sweep(tmp_path, ModelRunner(seed=5, noise=0.04), trials=40, seed=5,
                        on_progress=lambda p: seen.append((p.best_number, p.best_tpot,
                                                           p.baseline_tpot)))
    answer = study_answer(study)
    pick = answer.pick
    assert pick is not None and pick.confirmed and pick.launches > 2
    lo, hi = pick.tpot_ci95 or (None, None)
    assert seen[-1][:2] == (pick.number, pick.tpot_ms)       # the sweep's last status line
    db = f"sqlite:///{tmp_path / 's.db'}"
    where = ["s", "--storage", db, "--artifacts", str(tmp_path / "s.artifacts")]

    report = json.loads(_cli("report", *where[:3], "--json"))
    assert report["pick"]["trial"] == pick.number
    assert report["pick"]["tpot_ms"] == pick.tpot_ms
    assert report["pick"]["tpot_ci95"] == [lo, hi]
    assert report["pick"]["launches"] == pick.launches and report["pick"]["verdict"] == "pick"
    assert report["pick"]["speedup"] == seen[-1][2] / seen[-1][1]    # the status's speed-up
    text = _cli("report", *where[:3])
    assert f"#{pick.number}" in text and f"{pick.tpot_ms:.2f} [{lo:.2f}, {hi:.2f}]" in text
    _cli("report", *where[:3], "--csv", str(tmp_path / "t.csv"), "--html",
         str(tmp_path / "r.html"))
    rows = pd.read_csv(tmp_path / "t.csv")
    (row,) = rows[rows["pick"]].itertuples()
    assert (row.number, row.tpot_ms, row.tpot_lo, row.tpot_hi) == pytest.approx(
        (pick.number, pick.tpot_ms, lo, hi))
    page = (tmp_path / "r.html").read_text()
    assert "The pick (tuner export --pick fastest)" in page
    assert f"{pick.tpot_ms:.2f} [{lo:.2f}, {hi:.2f}]" in page
    if not any(c.kind == "failed" for c in answer.configurations):
        assert "Failures by reason" not in page and "Failures by reason" not in text

    out = _cli("export", *where, "--out", str(tmp_path / "prof"))
    assert f"trial #{pick.number} (fastest; pick)" in out
    assert f"TPOT {pick.tpot_ms:.2f} ms [{lo:.2f}, {hi:.2f}]" in out
    prof = yaml.safe_load((tmp_path / "prof" / "profile.yaml").read_text())
    assert prof["source"]["trial"] == pick.number
    assert prof["figures"]["tpot_ms"] == pick.tpot_ms
    assert prof["figures"]["tpot_ci95"] == [lo, hi]
    assert prof["figures"]["tpot_launches"] == pick.launches

    view = optuna.load_study(study_name="s", storage=dashboard_storage(
        locate(db, "s"), "s"))
    best = {t.number: t for t in view.best_trials}
    assert set(best) == {c.number for c in answer.front}
    remeasures = {s.number for s in summaries(study) if s.role == Role.REMEASURE}
    assert remeasures and not remeasures & set(best)
    if pick.on_front:
        assert best[pick.number].values[0] == pick.tpot_ms
        assert best[pick.number].user_attrs["verdict"] == "pick"
    else:                       # said, not hidden: the report names why
        assert report["pick_note"] and f"#{pick.number}" in report["pick_note"]

