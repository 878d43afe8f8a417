"""The driver's bookkeeping, with a model-backed stand-in runner (no servers: fast)."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest
import yaml

from tests.conftest import SPARK
from tests.sweep_tests import assert_every_constraint_set
from tests.sweep_tests import assert_only_measurements_complete
from tests.sweep_tests import stand_ins
from tests.sweep_tests.model_runner import ModelRunner
from tests.sweep_tests.model_runner import model_sweep
from tuner.engines import make_engine
from tuner.space import load_space
from tuner.space import parse_space
from tuner.study._record import ROLE
from tuner.study.pooled import feasible_front


SPACE = load_space(SPARK)
ENGINE = make_engine("sim")


def run(tmp: Path, runner: ModelRunner, *, trials: int = 15, space=SPACE, seed: int = 0,
        sampler: str = "tpe", staged: bool = True) -> optuna.Study:
    return model_sweep(tmp, runner, trials=trials, seed=seed, space=space, sampler=sampler,
                       staged=staged)


def test_baseline_first_budget_and_every_constraint_with_model_backed_runner(tmp_path: Path
                                                                              ) -> None:
    runner = ModelRunner(seed=1)
    study = run(tmp_path, runner, trials=15)
    trials = study.get_trials()
    assert trials[0].user_attrs[ROLE] == "baseline"
    assert runner.launched[0] == ENGINE.resolve(SPACE, {}).as_dict()
    measured = [t for t in trials if t.user_attrs.get(ROLE) in ("baseline", "trial")]
    finals = [t for t in trials if t.user_attrs.get(ROLE) == "remeasure"]
    # the budget counts launches: 12 configurations, then 3 finals (20% of 15)
    assert len(measured) + len(finals) == 15 == len(runner.launched)
    assert len(finals) == 3
    hashes = [t.user_attrs["config_hash"] for t in measured]
    assert len(hashes) == len(set(hashes))                 # measured once each, then the
    assert {t.user_attrs["remeasure_of"] for t in finals} <= {     # finals again
        t.number for t in measured}
    speed = {SPACE.speed_key(t.user_attrs["config"]) for t in measured}
    assert {SPACE.speed_key(t.user_attrs["config"]) for t in finals} <= speed
    for t in trials:
        if t.state == optuna.trial.TrialState.COMPLETE:
            assert_every_constraint_set(t)
    fails = [t for t in trials if t.state == optuna.trial.TrialState.FAIL]
    assert stand_ins(study) == {t.number for t in fails}      # seen by the sampler only
    assert_only_measurements_complete(study)
    for t in feasible_front(study):
        assert t.user_attrs.get(ROLE) in ("baseline", "trial")
    assert study.user_attrs["tuner:driver_lock"] == {}


def test_duplicates_are_copied_not_run_with_model_backed_runner(tmp_path: Path) -> None:
    data = yaml.safe_load(SPARK.read_text())
    data["knobs"]["spec_steps"].update({"low": 3, "high": 3})
    data["knobs"]["spec_topk"]["choices"] = [1]
    data["knobs"]["spec_draft_tokens"].update({"low": 4, "high": 4})
    data["knobs"]["dspark_block_size"].update({"low": 8, "high": 8})
    data["knobs"]["mem_fraction"].update({"low": 0.68, "high": 0.68})
    tiny = parse_space(yaml.safe_dump(data))     # 36 configurations at most
    runner = ModelRunner(seed=2)
    study = run(tmp_path, runner, trials=50, space=tiny)
    measured = [t.user_attrs["config_hash"] for t in study.get_trials()
                if t.user_attrs.get(ROLE) in ("baseline", "trial")]
    assert len(measured) == len(set(measured)) <= 36     # each measured once, then the
    assert len(runner.launched) <= 36 + 10               # finals (20% of 50)
    dupes = [t for t in study.get_trials() if t.user_attrs.get(ROLE) == "duplicate"]
    assert dupes
    for d in dupes:
        orig = study.trials[d.user_attrs["duplicate_of"]]
        assert d.values == orig.values and d.user_attrs["config_hash"] == orig.user_attrs[
            "config_hash"]


def _two_configurations() -> object:
    """The Spark space with one knob left to turn: the LM head's fp32 or bf16."""
    data = yaml.safe_load(SPARK.read_text())
    keep = {"moe_backend": ["flashinfer_mxfp4"], "lm_head": ["fp32", "bf16"],
            "speculative": ["off"]}
    for name, choices in keep.items():
        k = data["knobs"][name]
        k["choices"] = choices
        for table in ("values", "evidence_by_value"):
            if table in k:
                k[table] = {v: e for v, e in k[table].items() if v in choices}
        if "lossy_values" in k:
            k["lossy_values"] = [v for v in k["lossy_values"] if v in choices]
    data["knobs"] = {n: k for n, k in data["knobs"].items() if n in keep
                     or n in ("mem_fraction", "max_running")}      # capacity: held
    return parse_space(yaml.safe_dump(data))


@pytest.mark.parametrize("trials", [20, None])
def test_an_exhausted_space_goes_to_its_finals_and_stops_with_model_backed_runner(
        tmp_path: Path, trials: int | None) -> None:
    """Two configurations and a budget of 20 launches (or none): both are measured, the
    finals race and confirm at once, and the sweep ends there; before, the sampler's
    repeats were stored as 50 copies, and the finals never came (the budget counts
    launches, not copies)."""
    said: list[str] = []
    runner = ModelRunner(seed=4)
    study = model_sweep(tmp_path, runner, trials=trials, space=_two_configurations(),
                        hours=None if trials else 1.0,
                        on_progress=lambda p: said.append(p.last or ""))
    rows = study.get_trials()
    roles = [t.user_attrs.get(ROLE) for t in rows]
    assert roles[:2] == ["baseline", "trial"]
    finals = [t for t in rows if t.user_attrs.get(ROLE) == "remeasure"]
    # the finals' launches: 20% of 20; with no trial budget, MIN_FINAL_LAUNCHES less the
    # final sample's baseline launch (this sweep has none): 4 either way
    assert len(finals) == 4 and len(runner.launched) == 6
    assert any(t.user_attrs.get("confirm") for t in finals)
    assert roles.count("duplicate") <= 2
    assert "every configuration of the space is measured: the finals start now" in said
    assert any(line.startswith("stopping: every configuration") for line in said)


def test_accuracy_gate_uses_the_baseline_per_question_with_model_backed_runner(
        tmp_path: Path) -> None:
    study = run(tmp_path, ModelRunner(seed=3), trials=8)
    base = study.trials[0]
    for t in study.get_trials():
        if t.user_attrs.get(ROLE) == "trial" and t.state == optuna.trial.TrialState.COMPLETE:
            assert "McNemar" in (t.user_attrs.get("gate_detail") or "")
            assert t.constraints["accuracy_drop"] <= 0 or "accuracy_drop" in t.user_attrs["gate"]
    assert base.constraints["accuracy_drop"] < 0


def test_resume_fails_and_requeues_what_a_dead_driver_left_with_model_backed_runner(
        tmp_path: Path) -> None:
    first = run(tmp_path, ModelRunner(seed=4), trials=4)
    t = first.ask({"moe_backend": optuna.distributions.CategoricalDistribution(
        ["flashinfer_mxfp4", "humming", "marlin"])})   # a trial left RUNNING
    left = t.number
    study = run(tmp_path, ModelRunner(seed=5), trials=6)
    dead = study.trials[left]
    assert dead.state == optuna.trial.TrialState.FAIL and dead.user_attrs["recovered"]
    assert any(x.user_attrs.get("retry_of") == left for x in study.get_trials())
    measured = [x for x in study.get_trials() if x.user_attrs.get(ROLE) in ("baseline", "trial")
                and not x.user_attrs.get("recovered")]
    assert len(measured) == 6


def test_a_failed_baseline_stops_the_sweep_clearly(tmp_path: Path) -> None:
    data = yaml.safe_load(SPARK.read_text())
    data["knobs"]["mem_fraction"]["low"] = 0.30
    data["baseline"]["mem_fraction"] = 0.30
    space = parse_space(yaml.safe_dump(data))
    from tuner.sweep._driver import FatalSweepError

    with pytest.raises(FatalSweepError, match="baseline"):
        run(tmp_path, ModelRunner(), trials=5, space=space)


def test_no_launch_asks_for_a_draft_tree_sglang_cannot_build_with_model_backed_runner(
        tmp_path: Path) -> None:
    # Speculation on, one step, top-k 4: the sampler's draft counts 6-8 overflow the tree.
    data = yaml.safe_load(SPARK.read_text())
    data["baseline"].update({"speculative": "NEXTN", "spec_steps": 1, "spec_topk": 4,
                             "spec_draft_tokens": 5})
    data["knobs"]["spec_steps"].update({"low": 1, "high": 1, "default": 1})
    data["knobs"]["spec_topk"].update({"choices": [4], "default": 4})
    data["knobs"]["spec_draft_tokens"]["default"] = 5
    space = parse_space(yaml.safe_dump(data))
    runner = ModelRunner(seed=6)
    study = run(tmp_path, runner, trials=12, space=space, sampler="random", staged=False)
    assert runner.launched
    assert all(c.get("spec_draft_tokens", 0) <= 5 for c in runner.launched)
    repaired = [t for t in study.get_trials() if t.user_attrs.get("repaired")]
    assert repaired                       # the sampler did propose 6-8, and it was repaired
    for t in repaired:
        assert t.params["spec_draft_tokens"] > 5 and "-> 5" in t.user_attrs["repaired"]
    assert not [t for t in study.get_trials() if t.user_attrs.get("reason") == "launch_error"]


def test_a_refused_second_driver_writes_nothing_with_model_backed_runner(
        tmp_path: Path) -> None:
    from tuner.study import context_of
    from tuner.study.storages import DriverLock
    from tuner.study.storages import LockHeld

    first = run(tmp_path, ModelRunner(seed=7), trials=2)
    before = context_of(first)
    held = DriverLock(first)
    held.acquire()                       # another live driver (this process, another token)
    data = yaml.safe_load(SPARK.read_text())
    data["name"] = "someone-elses-space"      # what a second driver would record
    other = parse_space(yaml.safe_dump(data))
    with pytest.raises(LockHeld, match="being run by"):
        run(tmp_path, ModelRunner(seed=8), trials=4, space=other)
    study = optuna.load_study(study_name="s", storage=f"sqlite:///{tmp_path / 's.db'}")
    assert context_of(study) == before                  # space name and workload kept
    assert len(study.trials) == len(first.trials)       # and no trial was added
    held.release()


class InterruptingRunner(ModelRunner):
    """Ctrl-C arrives while trial ``at`` (a submission count) is in flight: forced, not
    timed."""

    def __init__(self, at: int, **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.at, self.submitted = at, 0

    def submit(self, job) -> None:  # type: ignore[no-untyped-def]
        super().submit(job)
        self.submitted += 1
        self.interrupted_key = job.key

    def poll(self, timeout: float):  # type: ignore[no-untyped-def]
        if self.submitted == self.at:
            raise KeyboardInterrupt
        return super().poll(timeout)


def test_ctrl_c_then_resume_reruns_the_interrupted_configuration_with_model_backed_runner(
        tmp_path: Path) -> None:
    runner = InterruptingRunner(at=3, seed=9)
    with pytest.raises(KeyboardInterrupt):
        run(tmp_path, runner, trials=6)
    study = optuna.load_study(study_name="s", storage=f"sqlite:///{tmp_path / 's.db'}")
    cut = study.trials[runner.interrupted_key]
    assert cut.state == optuna.trial.TrialState.FAIL and cut.user_attrs["recovered"]
    assert cut.number not in stand_ins(study)        # the sampler is not steered away
    waiting = [t for t in study.trials if t.state == optuna.trial.TrialState.WAITING]
    assert [t.user_attrs.get("retry_of") for t in waiting] == [cut.number]
    again = ModelRunner(seed=10)
    resumed = run(tmp_path, again, trials=6)
    retry = next(t for t in resumed.trials if t.user_attrs.get("retry_of") == cut.number)
    assert retry.state.is_finished() and retry.params == cut.params
    counted = [t for t in resumed.trials if t.user_attrs.get(ROLE) in ("baseline", "trial")
               and t.state.is_finished() and not t.user_attrs.get("recovered")]
    assert len(counted) == 6                  # the interrupted run did not use the budget
    assert not [t for t in resumed.trials if t.user_attrs.get("reason") == "cancelled"
                and not t.user_attrs.get("recovered")]
