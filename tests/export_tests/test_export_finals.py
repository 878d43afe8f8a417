"""`tuner export` of a sweep that ran its finals: the confirmed pick, its pooled TPOT, the
capacity the confirmations found, and the ties (a real CLI process on a real study)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from tests.conftest import tuner_argv
from tests.sweep_tests.model_runner import ModelRunner
from tests.sweep_tests.model_runner import model_sweep
from tuner.study import feasible_best
from tuner.study._storage import locate
from tuner.study.pooled import estimates


def test_export_after_the_finals_with_model_backed_runner(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    loc = locate(str(db), "s")
    study = model_sweep(tmp_path, ModelRunner(seed=2, noise=0.03), trials=30,   # 2 confirms
                        seed=2)
    pick = feasible_best(study)
    est = estimates(study)[pick.number]
    out = subprocess.run(tuner_argv("export", "s", "--storage", f"sqlite:///{db}",
                                    "--artifacts", str(loc.artifacts), "--out",
                                    str(tmp_path / "prof")),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert f"trial #{pick.number} (fastest; pick)" in out.stdout
    assert "capacity: mem_fraction=0.7 served in the finals" in out.stdout
    prof = yaml.safe_load((tmp_path / "prof" / "profile.yaml").read_text())
    assert prof["config"]["mem_fraction"] == 0.7                # the larger KV pool
    assert prof["figures"]["tpot_ms"] == est.tpot_ms            # the confirmed mean
    assert prof["figures"]["tpot_ci95"] == [est.low, est.high]
    assert "mem-fraction-static: 0.7\n" in (tmp_path / "prof" / "sglang.yaml").read_text()
