"""Export a profile from a real trial, check SGLang's --config rules, verify live servers."""

from __future__ import annotations

import os
import shlex
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import GSM8K_DIR
from tests.conftest import SPARK
from tests.conftest import tuner_argv
from tests.simulator import sim_env
from tuner.engines import make_engine
from tuner.export._profile import write_profile
from tuner.space import load_space
from tuner.trial import TrialOptions
from tuner.trial import TrialResult
from tuner.trial import run_trial
from tuner.trial._server import free_port
from tuner_sim.args import build_parser
from tuner_sim.config_file import merge


SPACE = load_space(SPARK)
OPTIMISED = {"moe_backend": "humming", "lm_head": "fp8", "speculative": "NEXTN"}


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> TrialResult:
    tmp = tmp_path_factory.mktemp("trial")
    engine = make_engine("sim:fork", sim_env=sim_env(tmp, 100.0))
    wl = SPACE.spec.workload.model_copy(update={"questions": 12})
    r = run_trial(SPACE, engine, engine.resolve(SPACE, OPTIMISED),
                  TrialOptions(workdir=tmp, workload=wl, gsm8k=str(GSM8K_DIR),
                               startup_timeout_s=30))
    assert r.feasible, r.message
    return r


@pytest.fixture(scope="module")
def profile(measured: TrialResult, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("profile")
    write_profile(out, make_engine("sglang"), ["sglang", "serve"], SPACE.spec.model.path,
                  measured, trial_number=3, study_name="s", storage_url="sqlite:///x.db",
                  baseline=None, gate_floor=1.2)
    return out


def _tokens(argv: list[str]) -> list[str]:
    """Flag/value tokens without the entry point, the model path, host and port."""
    out, skip = [], False
    start = next(i for i, tok in enumerate(argv) if tok.startswith("--"))
    for tok in argv[start:]:
        if skip:
            skip = False
        elif tok in ("--model-path", "--host", "--port"):
            skip = True
        else:
            out.append(tok)
    return out


def test_config_file_reproduces_the_measured_argv_under_sglang_rules(
        profile: Path, measured: TrialResult) -> None:
    cli = _launch_argv(profile, measured.plan.port)[2:]     # launch.sh's command line
    merged = merge(build_parser(), cli)          # SGLang 0.5.23's ConfigArgumentMerger rules
    assert sorted(_tokens(merged)) == sorted(_tokens(measured.plan.argv))
    parser = build_parser()
    assert parser.parse_args(merged) == parser.parse_args(
        measured.plan.argv[measured.plan.argv.index("--model-path"):])
    data = yaml.safe_load((profile / "sglang.yaml").read_text())
    assert all("_" not in k for k in data)       # dashes: underscores are rejected
    assert "model-path" not in data              # must stay on the command line


def test_launch_script_is_safe_and_its_env_matches(profile: Path, measured: TrialResult
                                                   ) -> None:
    script = (profile / "launch.sh").read_text()
    assert subprocess.run(["bash", "-n", str(profile / "launch.sh")]).returncode == 0
    assert "\nexec sglang serve --model-path" in script and "api-key" not in script.split(
        "\n", 3)[3].replace("--api-key KEY", "")
    env = subprocess.run(["bash", "-c", f"set -a; . {shlex.quote(str(profile / 'sglang.env'))}"
                          "; env -0"], capture_output=True, env={}, check=True).stdout
    got = dict(kv.split("=", 1) for kv in env.decode().split("\0") if "=" in kv)
    for k, v in measured.plan.env.items():
        if not k.startswith("TUNER_SIM_"):
            assert got[k] == v
    prof = yaml.safe_load((profile / "profile.yaml").read_text())
    assert prof["engine"]["simulated"] is True and prof["config"] == measured.config
    assert prof["expect"]["server_info"]["speculative_algorithm"] == "EAGLE"
    assert prof["expect"]["accept_length"]["min"] >= 1.2


def _serve(profile: Path, tmp: Path, variant: str, yaml_edit: dict | None = None
           ) -> tuple[subprocess.Popen[bytes], str, Path]:
    cfg = profile / "sglang.yaml"
    if yaml_edit:
        data = yaml.safe_load(cfg.read_text())
        data.update(yaml_edit)
        cfg = tmp / "edited.yaml"
        cfg.write_text(yaml.safe_dump(data, sort_keys=False))
    port = free_port()
    env = dict(os.environ)
    for line in (profile / "sglang.env").read_text().splitlines():
        if line and not line.startswith("#"):
            k, v = line.split("=", 1)
            env[k] = shlex.split(v)[0] if v else ""
    env.update(sim_env(tmp, 100.0))
    log = tmp / f"{variant}-{port}.log"
    module = {"fork": "tuner_sim.fork", "fork-unshared": "tuner_sim.fork_unshared",
              "stock": "tuner_sim.stock"}[variant]
    tail = _launch_argv(profile, port)[2:]        # launch.sh's flags after `sglang serve`
    tail[tail.index("--config") + 1] = str(cfg)
    proc = subprocess.Popen([sys.executable, "-m", module, "serve", *tail],
                            env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    return proc, f"http://127.0.0.1:{port}", log


def _verify(profile: Path, url: str, log: Path | None, probe: int = 6
            ) -> subprocess.CompletedProcess[str]:
    import time

    import httpx

    for _ in range(150):
        try:
            if httpx.get(url + "/health", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.1)
    with_log = ["--log", str(log)] if log is not None else []
    return subprocess.run(tuner_argv("verify", str(profile / "profile.yaml"), "--url", url,
                                     *with_log, "--gsm8k", str(GSM8K_DIR),
                                     "--requests", str(probe)), capture_output=True, text=True,
                          timeout=180, env={**os.environ, "COLUMNS": "200"})


@pytest.mark.slow
@pytest.mark.parametrize(("variant", "edit", "failing"), [
    ("fork", None, None),
    ("fork", {"moe-runner-backend": "marlin"}, "server_info moe_runner_backend"),
    ("fork-unshared", None, "accept length (verify workload)"),
])
def test_verify_against_live_servers(profile: Path, tmp_path: Path, variant: str,
                                     edit: dict | None, failing: str | None) -> None:
    proc, url, log = _serve(profile, tmp_path, variant, edit)
    try:
        out = _verify(profile, url, log)
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    if failing is None:
        assert out.returncode == 0, out.stdout + out.stderr
        assert "PASS: the server is the profile" in out.stdout
    else:
        assert out.returncode == 1, out.stdout + out.stderr
        last = out.stdout.strip().splitlines()[-1]
        assert last.startswith("FAIL") and failing in last, last


@pytest.mark.slow
def test_verify_is_strict_without_the_log(profile: Path, tmp_path: Path) -> None:
    # Stock SGLang silently ignores the FP8 LM-head variable: only the log shows it.
    proc, url, log = _serve(profile, tmp_path, "stock")
    try:
        blind = _verify(profile, url, None, probe=0)      # settings only: no TPOT check
        seeing = _verify(profile, url, log, probe=0)
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    assert blind.returncode == 1, blind.stdout
    last = blind.stdout.strip().splitlines()[-1]
    assert last.startswith("UNVERIFIED") and "lm_head=fp8" in last, last
    assert "lm_head=fp8 (log evidence)" in " ".join(blind.stdout.split()).split(
        "not compared:")[1]
    assert seeing.returncode == 1
    last = seeing.stdout.strip().splitlines()[-1]
    assert last.startswith("FAIL") and "lm_head=fp8 (log evidence)" in last, last


TINY = Path(__file__).resolve().parents[2] / "search_spaces" / "tiny-qwen3moe-h200.yaml"


def _launch_argv(profile: Path, port: int = 30000) -> list[str]:
    """The argv launch.sh would exec (bash expands it; nothing is started)."""
    script = (profile / "launch.sh").read_text().replace("\nexec ", "\nprintf '%s\\0' ")
    printer = profile / "print-argv.sh"
    printer.write_text(script)
    out = subprocess.run(["bash", str(printer)], capture_output=True, check=True,
                         env={**os.environ, "HOST": "127.0.0.1", "PORT": str(port)}).stdout
    printer.unlink()
    return out.decode().split("\0")[:-1]


def test_flags_sglang_0_5_17_refuses_in_a_config_file_stay_on_the_command_line(
        measured: TrialResult, tmp_path: Path) -> None:
    # Real SGLang 0.5.17 refused the exported sglang.yaml of the tiny H200 space:
    # "Unsupported config option 'cuda_graph_backend_prefill' with action
    # 'DeprecatedStoreConstAction'" (docs/real-sglang-h200.md).
    from tuner.engines._sglang_flags import CONFIG_REFUSED

    tiny = load_space(TINY)
    engine = make_engine("sglang")
    plan = engine.plan(tiny, engine.resolve(tiny, {}), port=30000)
    assert "--cuda-graph-backend-prefill" in plan.argv
    write_profile(tmp_path, engine, engine.entry_point(plan.argv), tiny.spec.model.path,
                  measured.model_copy(update={"plan": plan}), trial_number=0, study_name="t",
                  storage_url="sqlite:///t.db", baseline=None, gate_floor=0.5)
    data = yaml.safe_load((tmp_path / "sglang.yaml").read_text())
    assert not {f"--{k}" for k in data} & CONFIG_REFUSED
    argv = _launch_argv(tmp_path)
    assert argv[:2] == ["sglang", "serve"]
    i = argv.index("--cuda-graph-backend-prefill")
    assert argv[i + 1] == "disabled" and i < argv.index("--config")
    merged = merge(build_parser(), argv[2:])      # 0.5.23's rules: the same launch
    assert sorted(_tokens(merged)) == sorted(_tokens(plan.argv))


def test_launch_script_runs_the_entry_point_that_was_measured(
        measured: TrialResult, tmp_path: Path) -> None:
    engine = make_engine("sglang")
    entry = engine.entry_point(measured.plan.argv)   # the simulator's python -m ...
    assert entry[1:] == ["-m", "tuner_sim.fork", "serve"]
    write_profile(tmp_path, engine, entry, SPACE.spec.model.path, measured, trial_number=0,
                  study_name="t", storage_url="sqlite:///t.db", baseline=None, gate_floor=1.2)
    assert _launch_argv(tmp_path)[:4] == entry


def test_the_profile_reports_the_pooled_tpot_and_verify_bounds_it(
        measured: TrialResult, tmp_path: Path) -> None:
    from tuner.study import Role
    from tuner.study import TrialSummary
    from tuner.study import answer_of

    assert measured.aggregates is not None and measured.aggregates.tpot_ms
    first = measured.aggregates.tpot_ms
    readings = [first, first * 1.05, first * 1.03, first * 1.06]
    rows = [TrialSummary(0, "COMPLETE", Role.BASELINE, values=[first * 2], feasible=True,
                         tpot_ms=first * 2, accept_length=1.0),
            TrialSummary(5, "COMPLETE", Role.TRIAL, values=[first], feasible=True,
                         tpot_ms=first, accept_length=2.8),
            *(TrialSummary(6 + i, "COMPLETE", Role.REMEASURE, values=[v], feasible=True,
                           tpot_ms=v, remeasure_of=5, confirm=i > 0, accept_length=3.0)
              for i, v in enumerate(readings[1:]))]
    answer = answer_of(rows, with_accuracy=False)
    shown = answer.get(5)
    assert shown is not None and shown.is_pick and shown.launches == 4
    write_profile(tmp_path, make_engine("sglang"), ["sglang", "serve"],
                  SPACE.spec.model.path, measured, trial_number=5, study_name="t",
                  storage_url="sqlite:///t.db", baseline=None, gate_floor=1.2,
                  tpot_tolerance=0.15, shown=shown, shown_baseline=answer.baseline)
    prof = yaml.safe_load((tmp_path / "profile.yaml").read_text())
    mean = statistics.fmean(readings)
    assert prof["figures"]["tpot_ms"] == pytest.approx(mean)
    assert prof["figures"]["tpot_first_reading_ms"] == first
    assert prof["figures"]["tpot_launches"] == 4
    assert prof["figures"]["tpot_is"] == "the mean over its 4 launches"
    assert prof["figures"]["accept_length"] == pytest.approx(statistics.fmean(
        [2.8, 3.0, 3.0, 3.0]))                  # the mean over its launches, not one's
    assert prof["baseline"]["tpot_ms"] == first * 2
    assert prof["speedup"] == pytest.approx(first * 2 / mean)
    assert prof["expect"]["tpot_ms"] == {"measured": round(mean, 3),
                                         "max": round(mean * 1.15, 3)}


@pytest.mark.slow
def test_verify_checks_a_regime_profiles_sla_under_its_load(profile: Path, tmp_path: Path
                                                             ) -> None:
    """Issue 33, item 4: a profile exported for a load regime is verified at its users,
    each p95 bound of its SLA against the running server (a loose bound passes, one no
    server meets fails and is named)."""
    import shutil

    proc, url, _log = _serve(profile, tmp_path, "fork")
    try:
        outs = {}
        for bound in (10_000.0, 0.5):
            copy = tmp_path / f"p{bound:g}"
            shutil.copytree(profile, copy)
            data = yaml.safe_load((copy / "profile.yaml").read_text())
            data["regime"] = {"name": "two", "concurrency": 2, "sla": {"p95_tpot_ms": bound},
                              "tpot_p95_ms": 30.0}
            (copy / "profile.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
            outs[bound] = _verify(copy, url, None, probe=4)
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    loose, tight = outs[10_000.0], outs[0.5]
    line = next(x for x in loose.stdout.splitlines() if "regime two (2 users): TPOT p95" in x)
    assert "PASS" in line and "<= 10000 ms (measured 30)" in line, loose.stdout
    assert tight.returncode == 1, tight.stdout + tight.stderr
    assert tight.stdout.strip().splitlines()[-1] == "FAIL: regime two (2 users): TPOT p95"
