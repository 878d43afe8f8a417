"""``tuner sweep --config FILE``: a night from a file, the command line overriding it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import optuna
import pytest
import yaml

from tests.conftest import GSM8K_DIR
from tests.conftest import REPO
from tests.conftest import SPARK
from tests.conftest import tuner_argv


def _night(tmp: Path, **extra: object) -> Path:
    folder = tmp / "nights"
    folder.mkdir(exist_ok=True)
    data = {"space": str(SPARK), "engine": "sim", "gsm8k": str(GSM8K_DIR),
            "storage": "out/night.db", "workdir": "out/runs", "trials": 5, "questions": 6,
            "time-scale": 300, "ray_address": "none", "seed": 2, **extra}
    path = folder / "night.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.mark.slow
def test_a_night_runs_from_a_file_and_the_command_line_overrides_it(tmp_path: Path) -> None:
    night = _night(tmp_path)
    (night.parent / "out").mkdir()          # a storage's folder must exist (docs/sweep.md)
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    proc = subprocess.run(tuner_argv("sweep", "--config", str(night), "--trials", "3"),
                          cwd=elsewhere, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    db = night.parent / "out" / "night.db"             # relative to the file, not the cwd
    study = optuna.load_study(study_name="ling-3.0-flash-dgx-spark", storage=f"sqlite:///{db}")
    assert len([t for t in study.trials if t.state.is_finished()]) == 3   # CLI: 3, file: 5
    stored = study.user_attrs["tuner:sweep_options"]
    assert stored["trials"] == 3 and stored["questions"] == 6 and stored["seed"] == 2
    assert stored["ray_address"] == "none" and stored["config_file"] == str(night)
    assert stored["workdir"] == str(night.parent / "out" / "runs")
    assert "api_key" not in stored
    assert f"tuner report ling-3.0-flash-dgx-spark --storage sqlite:///{db}" in proc.stdout


@pytest.mark.parametrize(("extra", "located"), [
    ({"trails": 5}, "night.yaml:11: trails: unknown sweep option; expected one of"),
    ({"trials": 0}, "night.yaml:6: trials: "),
    ({"sampler": ["tpe"]}, "night.yaml:11: sampler: "),
    ({"api-key": "s3cret"}, "night.yaml:11: api-key: an API key does not belong"),
    ({"regime": [["a:2"]]}, "night.yaml:11: regime: expected a value or a list of values"),
    # a repeatable option takes one value or a list: both reach the regime's own checks
    ({"regime": "a:0"}, "workload.regimes[0].concurrency"),
    ({"regime": ["a:2", "b:0"]}, "workload.regimes[1].concurrency"),
])
def test_a_bad_key_or_value_is_a_located_error(tmp_path: Path, extra: dict[str, object],
                                               located: str) -> None:
    night = _night(tmp_path, **extra)
    proc = subprocess.run(tuner_argv("sweep", "--config", str(night)), capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert located in proc.stderr and "Traceback" not in proc.stderr
    assert not (night.parent / "out").exists()           # nothing was created


def test_the_readme_night_file_is_a_valid_sweep_config() -> None:
    import typer

    from tuner.cli._sweep_config import read_config
    from tuner.cli.main import app

    command = typer.main.get_command(app).commands["sweep"]   # type: ignore[attr-defined]
    ctx = command.make_context("sweep", ["x"], resilient_parsing=True)
    night = REPO / "docs" / "night.yaml"
    options = read_config(ctx, command.params, night)
    assert Path(options["space_file"]).resolve() == SPARK.resolve()
    assert options["hours"] == 10.0 and options["questions"] == 60
    assert "--config docs/night.yaml" in (REPO / "README.md").read_text()


@pytest.mark.parametrize(("extra", "located"), [
    # once a journal file named "5" beside the file, a sweep of 1 trial, a lock broken
    ({"storage": 5}, "night.yaml:4: storage: expected a string, got 5 (an integer)"),
    ({"trials": True}, "night.yaml:6: trials: expected an integer, got true (a boolean)"),
    ({"break-lock": "yes"}, "night.yaml:11: break-lock: expected true or false, got 'yes'"),
    ({"hours": "10"}, "night.yaml:11: hours: expected a number, got '10' (a string)"),
    ({"trials": None}, "night.yaml:6: trials: expected an integer, got nothing"),
])
def test_config_file_values_are_typed_strictly_not_converted(
        tmp_path: Path, extra: dict[str, object], located: str) -> None:
    """Issue 34 item 4, finding 3: a value of the wrong YAML type was converted as the
    command line converts text (5 became the path "5", true the count 1, "yes" true)."""
    night = _night(tmp_path, **extra)
    before = sorted(tmp_path.rglob("*"))
    proc = subprocess.run(tuner_argv("sweep", "--config", str(night)), capture_output=True,
                          text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert located in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert sorted(tmp_path.rglob("*")) == before          # no journal "5", no study


@pytest.mark.parametrize(("extra", "located"), [
    ({"regime": [1, 2]}, "night.yaml:12: regime[0]: expected a string, got 1"),
    ({"workload": 7}, "night.yaml:11: workload: expected a string, got 7"),
    ({"workload": "bogus"}, "night.yaml:11: workload: unknown workload 'bogus'"),
    ({"regime": ["a:2", "b:4:"]}, "night.yaml:13: regime[1]: --regime 'b:4:'"),
])
def test_config_file_workload_and_regime_errors_name_the_file_and_line(
        tmp_path: Path, extra: dict[str, object], located: str) -> None:
    """Finding 7: ``regime: [1, 2]`` and ``workload: 7`` were refused later, without the
    file and line that held them."""
    night = _night(tmp_path, **extra)
    proc = subprocess.run(tuner_argv("sweep", "--config", str(night)), capture_output=True,
                          text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert located in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert not (night.parent / "out").exists()


def _comments(text: str) -> dict[str, str]:
    """Each key of a night file -> its comment (the line's, and the comment-only lines
    indented under it that go on with it)."""
    out: dict[str, str] = {}
    key = None
    for line in text.splitlines():
        body, _, comment = line.partition("#")
        if body.strip() and not line.startswith(" "):
            key = body.split(":")[0].strip()
            out[key] = comment.strip()
        elif key is not None and line.startswith(" ") and not body.strip():
            out[key] += " " + comment.strip()
        else:
            key = None
    return out


def test_the_night_files_stated_question_counts_are_what_its_sweep_runs() -> None:
    """Issue 34 item 4, finding 9: docs/night.yaml said the finals measure 60 questions;
    they ran 300 (the default final sample for 60 questions, ``default_size``). Every
    clause of a comment that speaks of the finals states the final sample's size, every
    one that speaks of the search trials theirs, and the file's final sample is the
    default it says it is."""
    import re

    import typer

    from tuner.cli._sweep_config import read_config
    from tuner.cli.main import app
    from tuner.space import load_space
    from tuner.sweep import default_final_size

    command = typer.main.get_command(app).commands["sweep"]   # type: ignore[attr-defined]
    ctx = command.make_context("sweep", ["x"], resilient_parsing=True)
    night = REPO / "docs" / "night.yaml"
    options = read_config(ctx, command.params, night)
    gate = load_space(options["space_file"]).spec.gate
    questions = options["questions"]
    default = default_final_size(gate, questions)[0]
    final = options.get("final_questions", default)
    search = options.get("search_questions") or questions
    assert final == default                      # "the default for 60 questions"
    stated = {"final": set(), "search": set()}
    for key, comment in _comments(night.read_text()).items():
        for clause in re.split(r"[,;()]", comment):
            numbers = {int(n) for n in re.findall(r"\b\d+\b", clause)}
            for word, size in (("final", final), ("search", search)):
                if re.search(rf"\b{word}(s|\b)", clause) and numbers:
                    assert numbers == {size}, (key, clause, size)
                    stated[word] |= numbers
    assert stated == {"final": {final}, "search": {search}}, stated
