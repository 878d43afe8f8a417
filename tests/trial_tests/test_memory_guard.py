"""The unified-memory guard against real simulator processes on a simulated DGX Spark, and
the real /proc/meminfo of this machine."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import GSM8K_DIR
from tests.conftest import SPARK
from tests.simulator import sim_env
from tuner.engines import Host
from tuner.engines import make_engine
from tuner.engines import read_meminfo
from tuner.space import SearchSpace
from tuner.space import load_space
from tuner.space import parse_space
from tuner.trial import TrialOptions
from tuner.trial import TrialResult
from tuner.trial import run_trial
from tuner.trial._memory import unified_memory
from tuner.trial._server import port_is_free


SPACE = load_space(SPARK)


def top_space(tmp: Path, top: float = 0.95) -> SearchSpace:
    """The Spark space with its memory-fraction cap raised to ``top`` (what an overnight
    sweep that "raises the memory fraction" runs)."""
    text = SPARK.read_text().replace("    max: 0.70\n", f"    max: {top}\n").replace(
        "    high: 0.70\n", f"    high: {top}\n")
    path = tmp / "spark-top.yaml"
    path.write_text(text)
    return load_space(path)


def trial(tmp: Path, settings: dict[str, Any] | None = None, *, space: SearchSpace = SPACE,
          faults: list[dict[str, Any]] | None = None, **env: str) -> TrialResult:
    e = sim_env(tmp, 100.0, TUNER_SIM_HOST_DIR=str(tmp / "hosts"), **env)
    if faults is not None:
        e["TUNER_SIM_FAULTS"] = json.dumps(faults)
    engine = make_engine("sim", sim_env=e)
    wl = space.spec.workload.model_copy(update={"questions": 4})
    opts = TrialOptions(workdir=tmp / "logs", workload=wl, gsm8k=str(GSM8K_DIR),
                        startup_timeout_s=60)
    return run_trial(space, engine, engine.resolve(space, settings or {}), opts)


def test_the_host_memory_of_this_machine_is_its_proc_meminfo_memavailable() -> None:
    now = Host().read()
    assert now is not None and now.source == "/proc/meminfo"
    assert 0 < now.available_gib <= now.total_gib
    text = Path("/proc/meminfo").read_text()
    kb = int(next(x for x in text.splitlines() if x.startswith("MemAvailable:")).split()[1])
    assert abs(now.available_gib - kb / 1024**2) < 2.0      # MemAvailable, not MemTotal


def test_a_meminfo_without_memavailable_cannot_be_read(tmp_path: Path) -> None:
    old = tmp_path / "meminfo"
    old.write_text("MemTotal:  1000 kB\nMemFree:  500 kB\n")   # a pre-3.14 kernel's
    assert read_meminfo(old) is None
    assert read_meminfo(tmp_path / "absent") is None


def test_unified_memory_is_the_spaces_word_else_the_gpus_name() -> None:
    data = yaml.safe_load(SPARK.read_text())
    assert unified_memory(SPACE)                                  # the Spark space says so
    data["machine"].pop("unified_memory")
    assert unified_memory(parse_space(yaml.safe_dump(data)))     # its GPU is a GB10
    data["machine"]["unified_memory"] = False
    assert not unified_memory(parse_space(yaml.safe_dump(data)))


def _need(space: SearchSpace, settings: dict[str, Any], available: float = 119.0) -> Any:
    engine = make_engine("sglang")
    plan = engine.plan(space, engine.resolve(space, settings))
    need = engine.memory_need(space, plan, available_gib=available, visible_gib=119.0)
    assert need is not None
    return need


def test_the_prediction_grows_with_the_fraction_and_a_draft_and_floors_at_the_weights(
        tmp_path: Path) -> None:
    base = _need(SPACE, {})
    assert base.terms["weights"] == 64.9
    assert base.terms["weights"] + base.terms["kv_pool"] == pytest.approx(0.68 * 119.0)
    higher = _need(top_space(tmp_path), {"mem_fraction": 0.95})
    assert higher.peak_gib - base.peak_gib == pytest.approx((0.95 - 0.68) * 119.0)
    nextn = _need(SPACE, {"speculative": "NEXTN"})          # its draft's CUDA graphs
    assert nextn.terms["cuda_graphs"] == 3 * base.terms["cuda_graphs"]
    dspark = _need(SPACE, {"speculative": "DSPARK"})        # its weights and ring come out
    assert dspark.terms["draft"] == 1.03                     # of the fraction's budget
    assert dspark.terms["kv_pool"] == pytest.approx(base.terms["kv_pool"] - 1.03)
    assert any("ReplaySSM ring" in n for n in dspark.notes)
    short = _need(SPACE, {}, available=50.0)                 # a busy host: the budget is
    assert short.terms["weights"] == 64.9 and "kv_pool" not in short.terms   # 0.68 x 50
    assert short.peak_gib > 64.9                             # but the weights load whole


def test_a_launch_that_would_exhaust_the_simulated_spark_is_never_started(tmp_path: Path
                                                                          ) -> None:
    r = trial(tmp_path, {"mem_fraction": 0.95}, space=top_space(tmp_path))
    assert r.status == "failed" and r.reason == "would_exhaust_memory"
    assert r.message is not None and r.message.startswith(
        "predicted peak 117.1 GiB of host memory, 113.0 GiB usable (119.0 GiB MemAvailable "
        "of 121.0, less a 6.1 GiB margin): not launched")
    assert r.memory is not None and r.memory.predicted_peak_gib == pytest.approx(117.1, abs=0.05)
    assert r.memory.available_gib == pytest.approx(119.0)
    assert not Path(r.log_path or "").exists()               # no server was ever started
    assert r.timings.startup_s is None
    host = read_meminfo(r.memory.source)                      # the simulated machine, idle
    assert host is not None and host.available_gib == pytest.approx(119.0)


def test_a_host_already_busy_refuses_even_the_baseline(tmp_path: Path) -> None:
    r = trial(tmp_path, TUNER_SIM_HOST_BUSY_GIB="60")       # a server left behind
    assert r.reason == "would_exhaust_memory"
    assert r.memory is not None and r.memory.available_gib == pytest.approx(59.0)
    assert "59.0 GiB MemAvailable" in (r.message or "")
    assert not Path(r.log_path or "").exists()


@pytest.mark.slow
def test_the_prediction_covers_what_the_simulated_server_took(tmp_path: Path) -> None:
    for settings in ({}, {"speculative": "DSPARK"}):
        r = trial(tmp_path, settings)
        assert r.ok, r.message
        m = r.memory
        assert m is not None and m.lowest_available_gib is not None and not m.stopped
        took = m.available_gib - m.lowest_available_gib
        assert m.predicted_peak_gib is not None
        assert 0.95 * m.predicted_peak_gib < took <= m.predicted_peak_gib
        assert not Path(m.source).exists()                   # powered off at the stop


@pytest.mark.slow
def test_a_trial_whose_memory_grows_past_the_margin_is_stopped(tmp_path: Path) -> None:
    # at 0.68 the server leaves 34.5 GiB free; 30 GiB more after the first answered request
    # (a warm-up one) leaves 4.5 GiB: under the 6.05 GiB margin, above the wedge
    r = trial(tmp_path, faults=[{"kind": "memory_growth", "after": 1, "gib": 30}])
    assert r.status == "failed" and r.reason == "would_exhaust_memory", r.message
    m = r.memory
    assert m is not None and m.stopped
    assert m.lowest_available_gib == pytest.approx(4.46, abs=0.05)
    assert (r.message or "").startswith("host memory fell to 4.5 GiB MemAvailable, under "
                                        "the 6.1 GiB margin")
    assert r.timings.startup_s is not None                   # it had started
    assert r.cleanup == [] and port_is_free("127.0.0.1", r.plan.port)
    log = Path(r.log_path or "").read_text()
    assert "simulated host memory growth" in log and "NV_ERR_NO_MEMORY" not in log


@pytest.mark.slow
def test_tuner_trial_shows_the_start_up_the_host_memory_and_a_refusal(tmp_path: Path) -> None:
    from tests.conftest import run_tuner

    top_space(tmp_path)
    common = ("--engine", "sim", "--gsm8k", str(GSM8K_DIR), "--questions", "2",
              "--workdir", str(tmp_path / "runs"))
    ok = run_tuner(tmp_path, "trial", str(tmp_path / "spark-top.yaml"), *common)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    out = " ".join(ok.stdout.split())
    assert "start-up (launch to healthy): " in out and "% of the launch's" in out
    assert "host memory (unified): predicted peak 85.0 GiB, 119.0 GiB available of 121.0 " \
           "before the launch, lowest while it ran 34.5 GiB, margin 6.1 GiB" in out
    no = run_tuner(tmp_path, "trial", str(tmp_path / "spark-top.yaml"), *common,
                   "--set", "mem_fraction=0.95")
    assert no.returncode == 1
    said = " ".join(no.stdout.split())
    assert "FAILED reason would_exhaust_memory: predicted peak 117.1 GiB" in said
    assert "start-up" not in said                           # nothing was started
