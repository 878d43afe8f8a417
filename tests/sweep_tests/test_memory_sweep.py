"""A sweep on a simulated DGX Spark (unified memory) whose top memory fraction would exhaust
the host: real Optuna storage, real trial processes, real simulator servers."""

from __future__ import annotations

import json
from pathlib import Path

import optuna
import pandas as pd
import pytest
import yaml

from tests.conftest import GSM8K_DIR
from tests.conftest import SPARK
from tests.conftest import run_tuner
from tests.simulator import sim_env
from tests.sweep_tests import stand_ins
from tuner.engines import make_engine
from tuner.report import collect
from tuner.space import load_space
from tuner.study import locate
from tuner.study import summaries
from tuner.sweep import Driver
from tuner.sweep import LocalRunner
from tuner.sweep import SweepSettings
from tuner.trial import TrialOptions


pytestmark = pytest.mark.slow


def fractions_space(tmp: Path) -> Path:
    """The Spark space searching only its memory fraction, over 0.30 (too little: SGLang's
    own start-up error), 0.68 (the baseline) and 0.95 (would exhaust the host), its cap
    raised to 0.95 (what an overnight sweep that raises the memory fraction does)."""
    data = yaml.safe_load(SPARK.read_text())
    data["knobs"] = {"mem_fraction": {
        "type": "categorical", "choices": [0.3, 0.68, 0.95], "flag": "--mem-fraction-static",
        "evidence": {"server_info": {"mem_fraction_static": "{value}"}}}}
    data["baseline"] = {"mem_fraction": 0.68}
    data["fixed_flags"]["--max-running-requests"] = 1      # the max_running knob's baseline
    data["limits"]["--mem-fraction-static"]["max"] = 0.95
    path = tmp / "spark-fractions.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_the_top_fraction_is_never_launched_and_the_night_states_its_launch_overhead(
        tmp_path: Path) -> None:
    space = load_space(fractions_space(tmp_path))
    engine = make_engine("sim", sim_env=sim_env(tmp_path, 300.0,
                                                TUNER_SIM_HOST_DIR=str(tmp_path / "hosts")))
    opts = TrialOptions(workdir=tmp_path / "runs", workload=space.spec.workload.model_copy(
        update={"questions": 3}), gsm8k=str(GSM8K_DIR), startup_timeout_s=60)
    settings = SweepSettings(study_name="s", location=locate(str(tmp_path / "s.db"), "s"),
                             trials=3, seed=1, sampler="random", staged=False, finals_share=0.0)
    driver = Driver(space, engine, opts, settings, lambda: LocalRunner(slots=1))
    view = driver.run()
    study = driver.sweep.study
    rows = {s.config.get("mem_fraction"): s for s in summaries(study) if s.measured}
    assert set(rows) == {0.3, 0.68, 0.95}
    top, low, base = rows[0.95], rows[0.3], rows[0.68]
    assert base.state == "COMPLETE"
    assert top.state == "FAIL" and top.reason == "would_exhaust_memory"
    assert (top.message or "").startswith("predicted peak 117.1 GiB of host memory, 113.0 "
                                          "GiB usable (119.0 GiB MemAvailable")
    assert top.startup_s is None                              # refused: never started
    metas = optuna.artifacts.get_all_artifact_meta(study.trials[top.number],
                                                   storage=study._storage)
    assert "text/plain" not in {m.mimetype for m in metas}    # so no server log either
    assert low.state == "FAIL" and low.reason == "oom"        # launched: SGLang's own error
    assert low.startup_s is not None and low.startup_s > 0    # its start-up time counted
    assert stand_ins(study) == {top.number, low.number}       # the sampler steers away

    data = collect(view)
    failures = {r["reason"]: r["example"] for r in data.failures().to_dict("records")}
    assert failures["would_exhaust_memory"].startswith(f"#{top.number}: predicted peak 117.1")
    o = data.overhead
    assert o is not None and o.launches == 2 and o.simulated   # the refusal is no launch
    assert o.startup_s == pytest.approx((base.startup_s or 0) + (low.startup_s or 0))
    assert o.total_s == pytest.approx((base.total_s or 0) + (low.total_s or 0))
    assert o.sentence().startswith("launch overhead: 2 launches, ")
    assert o.sentence().endswith("(simulated machine time)")

    page = tmp_path / "r.html"
    out = run_tuner(tmp_path, "report", "s", "--storage", str(tmp_path / "s.db"), "--json",
                    "--csv", str(tmp_path / "t.csv"))
    assert out.returncode == 0, out.stderr
    csv = pd.read_csv(tmp_path / "t.csv").set_index("number")
    assert csv.loc[base.number, "startup_s"] == pytest.approx(base.startup_s)   # per launch
    assert pd.isna(csv.loc[top.number, "startup_s"])
    shown = json.loads(out.stdout)["launch_overhead"]
    assert shown["launches"] == 2 and shown["clock"] == "simulated machine time"
    assert shown["share"] == pytest.approx(o.share)
    text = run_tuner(tmp_path, "report", "s", "--storage", str(tmp_path / "s.db"),
                     "--html", str(page))
    assert text.returncode == 0, text.stderr
    assert o.sentence() in " ".join(text.stdout.split())      # the terminal's line
    assert o.sentence().replace("(", "").split(";")[0] in page.read_text().replace("(", "")
