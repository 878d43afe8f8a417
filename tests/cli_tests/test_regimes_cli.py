"""A simulated sweep with a load regime, end to end through real processes: the report
answers each regime, and ``export --regime`` writes the regime's pick, within its SLA."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
import yaml

from tests.conftest import GSM8K_DIR
from tests.conftest import SPARK
from tests.conftest import run_tuner
from tests.conftest import serve_dashboard


pytestmark = pytest.mark.slow
SLA_MS = 400.0


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("regimes")
    text = SPARK.read_text().replace("  max_running: 1\n", "  max_running: 4\n")
    assert "  max_running: 4\n" in text          # the baseline serves the four together
    text = text.replace("workload:\n", "workload:\n  regimes:\n    - {name: four, "
                        f"concurrency: 4, requests: 8, sla: {{p95_tpot_ms: {SLA_MS}}}}}\n", 1)
    (tmp / "space.yaml").write_text(text)
    r = run_tuner(tmp, "sweep", str(tmp / "space.yaml"), "--engine", "sim", "--ray-address",
               "none", "--trials", "4", "--questions", "4", "--max-tokens", "256",
               "--final-questions", "0", "--gsm8k", str(GSM8K_DIR), "--storage",
               str(tmp / "s.db"), "--study", "s", "--workdir", str(tmp / "runs"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "for four (4 users): #" in r.stdout
    (tmp / "sweep.out").write_text(r.stdout)
    return tmp


def test_the_sweep_and_the_report_say_where_the_budget_went(study: Path) -> None:
    """Each launch records what it was proposed for: the baseline, the capacity screens
    (batch 1's plan); every launch counted once, split between batch 1 and the regime."""
    r = run_tuner(study, "report", "s", "--storage", str(study / "s.db"), "--json")
    budget = json.loads(r.stdout)["budget"]
    assert budget["launches"] == 4
    assert set(budget["by_objective"]) == {"batch 1", "four"}
    assert sum(sum(k.values()) for k in budget["by_objective"].values()) == 4
    assert budget["by_objective"]["batch 1"]["baseline"] == 1
    assert budget["by_objective"]["batch 1"].get("screen", 0) >= 1
    said = " ".join((study / "sweep.out").read_text().split())
    assert budget["text"] in said          # the sweep's last lines say the same


def test_the_report_answers_each_regime(study: Path) -> None:
    r = run_tuner(study, "report", "s", "--storage", str(study / "s.db"), "--json")
    assert r.returncode == 0, r.stderr
    (g,) = json.loads(r.stdout)["regimes"]
    assert (g["regime"], g["concurrency"], g["sla"]) == ("four", 4, {"p95_tpot_ms": SLA_MS})
    assert g["measured"] >= 2 and g["pick"] is not None
    assert g["pick"]["goodput_rps"] == max(x["goodput_rps"] for x in g["front"])
    assert g["pick"]["tpot_p95_ms"] <= SLA_MS and g["pick"]["within_sla"] is True
    assert 1 <= g["pick"]["peak_running"] <= 4          # the server's batch lines, read back


def test_the_report_shows_each_regimes_front_beside_the_workloads(study: Path) -> None:
    g = json.loads(run_tuner(study, "report", "s", "--storage", str(study / "s.db"),
                             "--json").stdout)["regimes"][0]
    r = run_tuner(study, "report", "s", "--storage", str(study / "s.db"), "--html",
                  str(study / "r.html"))
    assert r.returncode == 0, r.stderr
    text = " ".join(r.stdout.split())
    assert "Pareto front" in text                                   # the workload's
    assert "four (4 users, p95 TPOT <= 400 ms): its front" in text  # the regime's
    assert "(pick)" in text                      # the pick's row (wrapped at 80 columns)
    page = (study / "r.html").read_text()
    assert "load regime four (4 users, p95 TPOT" in page            # its plot
    assert "Load regime four (4 users, p95 TPOT &lt;= 400 ms): its front</h2>" in page
    for row in g["front"]:
        assert f"#{row['trial']}" + (" (pick)" if row["trial"] == g["pick"]["trial"] else "") \
            in page


def test_the_dashboard_shows_each_regimes_front_as_a_study(study: Path) -> None:
    report = json.loads(run_tuner(study, "report", "s", "--storage", str(study / "s.db"),
                                  "--json").stdout)
    (g,) = report["regimes"]
    for base in serve_dashboard("s", study / "s.db"):
        listed = httpx.get(base + "/api/studies", timeout=10).json()["study_summaries"]
        assert [x["study_name"] for x in listed] == ["s", "s / regime four"]
        detail = httpx.get(f"{base}/api/studies/{listed[1]['study_id']}",
                           params={"after": 0}, timeout=30).json()
    assert len(detail["trials"]) == g["measured"]
    assert sum(t["state"] == "Complete" for t in detail["trials"]) == g["eligible"]
    best = {t["number"]: t["values"] for t in detail["best_trials"]}
    assert set(best) == {r["trial"] for r in g["front"]}          # the regime's front
    pick = g["pick"]
    assert best[pick["trial"]][0] == pytest.approx(pick["goodput_rps"])
    assert f"trial #{pick['trial']}" in detail["note"]["body"]


def test_export_regime_writes_the_regimes_pick(study: Path) -> None:
    report = json.loads(run_tuner(study, "report", "s", "--storage", str(study / "s.db"),
                               "--json").stdout)
    pick = report["regimes"][0]["pick"]
    r = run_tuner(study, "export", "s", "--storage", str(study / "s.db"), "--regime", "four",
               "--out", str(study / "p"))
    assert r.returncode == 0, r.stderr
    profile = yaml.safe_load((study / "p" / "profile.yaml").read_text())
    assert profile["config"] == pick["config"]
    assert profile["regime"]["name"] == "four"
    assert profile["regime"]["tpot_p95_ms"] <= SLA_MS
    assert "load regime 'four'" in profile["tuned_for"]
    assert f"trial #{pick['trial']} (the pick of regime four; for the workload itself:" \
        in " ".join(r.stdout.split())


@pytest.mark.parametrize(("args", "says"), [
    (["--regime", "sixteen"], "no such regime"),
    (["--regime", "four", "--pick", "knee"], "not both"),
])
def test_a_regime_export_that_cannot_be_is_refused(study: Path, args: list[str],
                                                   says: str) -> None:
    r = run_tuner(study, "export", "s", "--storage", str(study / "s.db"), *args, "--out",
               str(study / "never"))
    assert r.returncode == 2 and says in r.stderr, r.stderr
    assert not (study / "never").exists()


@pytest.mark.parametrize(("value", "says"), [
    ("four", "expected NAME:USERS"),
    ("four:0", "workload.regimes[0].concurrency"),
    ("four:4:p95_tpot_ms=-1", "workload.regimes[0].sla.p95_tpot_ms"),
    ("four:4:requests=2", "at least its concurrency"),
    ("four:4:p95_tpot=9", "expected NAME:USERS"),
])
def test_a_bad_regime_option_is_refused_in_one_line(tmp_path: Path, value: str,
                                                     says: str) -> None:
    r = run_tuner(tmp_path, "sweep", str(SPARK), "--engine", "sim", "--ray-address", "none",
               "--gsm8k", str(GSM8K_DIR), "--regime", value)
    assert r.returncode == 2 and says in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "trials").exists()


def test_the_regime_option_replaces_the_spaces_regimes(tmp_path: Path) -> None:
    r = run_tuner(tmp_path, "trial", str(SPARK), "--engine", "sim", "--gsm8k", str(GSM8K_DIR),
               "--questions", "2", "--max-tokens", "64", "--regime", "pair:2:requests=2",
               "--out", str(tmp_path / "r.json"))
    assert r.returncode == 0, r.stderr
    result = json.loads((tmp_path / "r.json").read_text())
    assert [(g["name"], g["concurrency"], g["requests"]) for g in result["regimes"]] == [
        ("pair", 2, 2)]


@pytest.mark.parametrize("value", ["four:4:", "four:4: ", "four:4:requests=8,",
                                   "four:4:requests=8,,p95_tpot_ms=60"])
def test_a_regime_with_an_empty_sla_part_is_refused(tmp_path: Path, value: str) -> None:
    """Finding 7 (issue 34 item 4): ``--regime x:4:`` was taken as ``x:4``."""
    r = run_tuner(tmp_path, "sweep", str(SPARK), "--engine", "sim", "--ray-address", "none",
               "--gsm8k", str(GSM8K_DIR), "--trials", "1", "--questions", "2",
               "--regime", value)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert f"--regime {value!r}: expected NAME:USERS" in r.stderr, r.stderr
    assert "a part after USERS is empty" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "trials").exists()


QWEN_SPARK = SPARK.parent / "qwen3.8-flash-next-nvfp4-dgx-spark.yaml"


@pytest.mark.parametrize(("space", "regime", "says"), [
    (QWEN_SPARK, "sixteen:16:p95_tpot_ms=60",
     "fixed_flags: regime 'sixteen' (--regime) has 16 users but every configuration of this "
     "space serves at most 1 at once (the rest would only wait in the queue): add a "
     "capacity knob for the maximum of running requests"),
    (SPARK, "many:32:p95_tpot_ms=60",
     "knobs.max_running: regime 'many' (--regime) has 32 users but every configuration of "
     "this space serves at most 16 at once (the rest would only wait in the queue): extend "
     "knob 'max_running' to 32, or ask for at most 16 users"),
])
def test_a_regime_the_space_cannot_serve_is_refused_before_any_launch(
        tmp_path: Path, space: Path, regime: str, says: str) -> None:
    """Issue 33, item 3: it once warned, then ran for tens of minutes to report what the
    space already implied."""
    r = run_tuner(tmp_path, "sweep", str(space), "--engine", "sim", "--ray-address", "none",
               "--gsm8k", str(GSM8K_DIR), "--regime", regime, "--storage",
               str(tmp_path / "s.db"), "--workdir", str(tmp_path / "runs"))
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert f"{space}:" in r.stderr and says in " ".join(r.stderr.split()), r.stderr
    assert not (tmp_path / "s.db").exists() and not (tmp_path / "runs").exists()
