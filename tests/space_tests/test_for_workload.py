"""A capacity knob's role follows the load (issue 25, item 3): held at one user at a time,
searched (and lossless) when the workload or a load regime serves several at once."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import SPARK
from tuner.space import Regime
from tuner.space import Workload
from tuner.space import load_space


def test_one_user_at_a_time_holds_the_memory_fraction() -> None:
    space = load_space(SPARK)
    assert space.for_workload(space.spec.workload) is space
    assert space.for_workload(Workload(regimes=[Regime(name="one", concurrency=1)])) is space
    assert space.capacity_knobs == ("mem_fraction", "max_running")


def test_a_regime_of_several_users_searches_it_and_leaves_the_space_as_it_was() -> None:
    space = load_space(SPARK)
    loaded = space.for_workload(Workload(regimes=[Regime(name="sixteen", concurrency=16)]))
    assert loaded.capacity_knobs == ()
    assert loaded.knob("mem_fraction").role == "speed"
    assert "mem_fraction" not in loaded.numerics_knobs        # it never changes an answer
    assert "mem_fraction" in dict(loaded.speed_key(loaded.complete({})))
    assert space.knob("mem_fraction").role == "capacity"      # the original is untouched
    assert loaded.numerics_knobs == space.numerics_knobs


def test_the_workloads_own_concurrency_counts_too() -> None:
    space = load_space(SPARK)
    assert space.for_workload(Workload(concurrency=4)).capacity_knobs == ()


def _launched(tmp: Path, text: str) -> tuple[set[float], set[int]]:
    """The memory fractions and maxima of running requests a 40-launch sweep launched."""
    from tests.sweep_tests.model_runner import ModelRunner
    from tests.sweep_tests.model_runner import model_sweep
    from tuner.space import parse_space

    runner = ModelRunner(seed=3)
    model_sweep(tmp, runner, trials=40, seed=3, space=parse_space(text, file="space"),
                final_questions=None)
    return ({c["mem_fraction"] for c in runner.launched},
            {c["max_running"] for c in runner.launched})


def test_a_sweep_with_a_regime_of_sixteen_launches_other_capacities(tmp_path: Path) -> None:
    text = SPARK.read_text()
    memory, running = _launched(tmp_path / "one", text)
    assert memory <= {0.68, 0.69, 0.70} and running == {1}   # the finals' ladder; held
    loaded = text.replace("workload:\n", "workload:\n  regimes:\n    - {name: sixteen, "
                          "concurrency: 16}\n", 1)
    memory, running = _launched(tmp_path / "many", loaded)
    assert memory - {0.68, 0.69, 0.70} and running - {1}      # both searched
