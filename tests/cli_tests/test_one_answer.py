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
from tuner.study import locate
from tuner.study import study_answer
from tuner.study import summaries
from tuner.study.storages import dashboard_storage


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



def test_one_accuracy_capacity_accept_length_and_launch_count_everywhere_with_model_backed_runner(
        tmp_path: Path) -> None:
    """With a final accuracy sample: the pick's accuracy is the one on the final sample
    (its question count and the paired comparison with the baseline on the same questions),
    its memory fraction the one export writes, its accept length and TPOT pooled over its
    launches, in every output; the screening figure only where labelled so."""
    from tuner.cli._sweep_display import best_text

    seen = []
    status = []
    study = model_sweep(tmp_path, ModelRunner(seed=5, noise=0.04), trials=40, seed=5,
                        final_questions=200,
                        on_progress=lambda p: (seen.append((p.best_number, p.best_tpot,
                                                            p.best_launches)),
                                               status.append(best_text(p))))
    answer = study_answer(study)
    pick = answer.pick
    assert pick is not None and pick.confirmed and pick.launches > 2
    acc = pick.accuracy_figure
    assert acc is not None and acc.sample == "final sample" and acc.questions == 200
    assert acc.paired and acc.pairs == 200 and acc.baseline is not None
    assert acc.screening_questions == 60 and pick.capacity_launch is not None
    mem = pick.served_config["mem_fraction"]
    assert mem == pick.capacity_launch.held["mem_fraction"] != pick.first.config[
        "mem_fraction"]                   # the finals served it larger than it was searched
    launch_tpots = [s.tpot_ms for s in summaries(study) if s.state == "COMPLETE" and (
        s.number == pick.number or s.remeasure_of == pick.number)]
    assert pick.launches == len(launch_tpots)                     # "xN": N launches
    assert pick.tpot_ms == pytest.approx(sum(launch_tpots) / len(launch_tpots))
    al = pick.accept_length
    assert al is not None
    assert seen[-1] == (pick.number, pick.tpot_ms, pick.launches)   # the status line
    assert status[-1].startswith(f"pick #{pick.number} {pick.tpot_ms:.2f} ms x{pick.launches}")
    assert (f"acc {acc.value:.1%}/200, accept {al:.2f}, mem_fraction={mem}" in status[-1])
    db = f"sqlite:///{tmp_path / 's.db'}"
    where = ["s", "--storage", db, "--artifacts", str(tmp_path / "s.artifacts")]

    report = json.loads(_cli("report", *where[:3], "--json"))
    r = report["pick"]
    assert (r["trial"], r["launches"], r["accuracy"], r["accuracy_questions"],
            r["accuracy_sample"], r["baseline_accuracy"], r["accept_length"],
            r["config"]["mem_fraction"]) == (pick.number, pick.launches, acc.value, 200,
                                             "final sample", acc.baseline, al, mem)
    assert r["tpot_ms"] == pick.tpot_ms and r["paired_drop_pp"] == acc.drop_pp
    assert r["screening_accuracy"] == pick.first.accuracy          # labelled as such
    said = report["pick_sentence"]
    assert f"the mean of {pick.launches} launches" in said and f"on {200}" in said
    assert f"mem_fraction={mem}" in said and f"accept length {al:.2f}" in said
    text = _cli("report", *where[:3])
    assert said in " ".join(text.split())           # the terminal's wrapping aside
    _cli("report", *where[:3], "--csv", str(tmp_path / "t.csv"), "--html",
         str(tmp_path / "r.html"))
    rows = pd.read_csv(tmp_path / "t.csv")
    (row,) = rows[rows["pick"]].itertuples()
    assert (row.number, row.launches, row.accuracy, row.accuracy_questions,
            row.accept_length, row.tpot_ms) == pytest.approx(
        (pick.number, pick.launches, acc.value, 200, al, pick.tpot_ms))
    assert row.accuracy_sample == "final sample"
    assert rows.loc[rows["pick"], "knob.mem_fraction"].item() == mem
    page = (tmp_path / "r.html").read_text()
    import html as html_lib

    assert html_lib.escape(said) in page

    out = " ".join(_cli("export", *where, "--out", str(tmp_path / "prof")).split())
    assert f"mem_fraction={mem}" in out
    assert f"the mean of {pick.launches} launches; accept length {al:.2f}" in out
    assert f"accuracy {acc.text()}" in out
    prof = yaml.safe_load((tmp_path / "prof" / "profile.yaml").read_text())
    f = prof["figures"]
    assert (f["tpot_ms"], f["tpot_launches"], f["accept_length"], f["accuracy"],
            f["questions"], f["sample"]) == (pick.tpot_ms, pick.launches, al, acc.value, 200,
                                             "final sample")
    assert f["tpot_first_reading_ms"] == pick.first.tpot_ms
    assert prof["config"]["mem_fraction"] == mem
    assert prof["baseline"]["accuracy"] == acc.baseline            # on the same questions
    assert prof["baseline"]["accuracy_questions"] == 200

    view = optuna.load_study(study_name="s", storage=dashboard_storage(
        locate(db, "s"), "s"))
    best = {t.number: t for t in view.best_trials}
    assert pick.number in best                   # the pick is always among the best trials
    b = best[pick.number]
    assert b.values == [pick.tpot_ms, acc.value]
    assert (b.user_attrs["launches"], b.user_attrs["accept_length"],
            b.user_attrs["config"]["mem_fraction"], b.user_attrs["questions"],
            b.user_attrs["verdict"]) == (pick.launches, al, mem, 200, "pick")
    assert set(best) == {c.number for c in answer.front}
