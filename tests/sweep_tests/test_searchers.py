"""The Searcher contract (tuner.testing.SearcherContract), run against the product's
searcher (SearchPolicy) in each of its modes, on model-backed sweeps (no servers: fast)."""

from __future__ import annotations

import random
from pathlib import Path

import optuna
import pytest

from tests.conftest import SPARK
from tests.sweep_tests.model_runner import ModelRunner
from tests.sweep_tests.test_driver import _two_configurations
from tuner.engines import make_engine
from tuner.space import SearchSpace
from tuner.space import load_space
from tuner.space import parse_space
from tuner.study import StudyReads
from tuner.study import SweepStudy
from tuner.study import answer_of
from tuner.study import locate
from tuner.study import regime_answers
from tuner.study import summaries
from tuner.sweep import Ask
from tuner.sweep import Driver
from tuner.sweep import Planned
from tuner.sweep import Remeasure
from tuner.sweep import Searcher
from tuner.sweep import SearchPolicy
from tuner.sweep import Suggestion
from tuner.sweep import SweepSettings
from tuner.sweep import TrialJob
from tuner.sweep import Turn
from tuner.sweep import Wait
from tuner.testing import SearcherContract
from tuner.testing.searcher_contract import MakeSweep
from tuner.testing.searcher_contract import StoreWrite
from tuner.testing.searcher_contract import Watch
from tuner.testing.searcher_contract import watched_sweep
from tuner.trial import RegimeResult
from tuner.trial import TrialOptions
from tuner.trial import TrialResult


ENGINE = make_engine("sim")


class RegimeRunner(ModelRunner):
    """:class:`ModelRunner` whose launches also measure the workload's load regimes: goodput
    grows with the requests run at once, and so does the p95 TPOT (a plain model, enough
    for picks per regime to exist)."""

    def _run(self, job: TrialJob) -> TrialResult:
        res = super()._run(job)
        a = res.aggregates
        if not res.ok or a is None or a.tpot_ms is None:
            return res
        running = min(int(job.config.as_dict().get("max_running", 1)), 16)
        for r in job.options.workload.regimes:
            p95 = a.tpot_ms * (1 + 0.08 * running)
            sla = r.sla.p95_tpot_ms if r.sla is not None else None
            res.regimes.append(RegimeResult(
                name=r.name, concurrency=r.concurrency, requests=r.total, duration_s=60.0,
                tpot_mean_ms=p95 / 1.2, tpot_p95_ms=p95, goodput_rps=running / p95,
                within_sla=None if sla is None else p95 <= sla))
        return res


def sweep_of(space: SearchSpace, trials: int, *, staged: bool = True,
             final_questions: int | None = None, runner: type[ModelRunner] = ModelRunner,
             slots: int = 1, searcher: Searcher | None = None) -> MakeSweep:
    """``make_sweep`` for a sweep of ``space`` on the simulator's model, ``slots`` launches
    at a time: the product's searcher (``searcher``: another one) with these settings."""
    def make(tmp: Path, seed: int, watch: Watch) -> Driver:
        settings = SweepSettings(study_name="s", location=locate(str(tmp / "s.db"), "s"),
                                 trials=trials, seed=seed, staged=staged,
                                 final_questions=final_questions)
        opts = TrialOptions(workdir=tmp, workload=space.spec.workload)
        inner = searcher or SearchPolicy.for_sweep(space, ENGINE, opts.workload, settings)
        return Driver(space, ENGINE, opts, settings, lambda: runner(seed=seed, slots=slots),
                      searcher=watch(inner, space.for_workload(opts.workload)))
    return make


def _sixteen_users() -> SearchSpace:
    text = SPARK.read_text().replace("workload:\n", (
        "workload:\n  regimes:\n    - {name: sixteen, concurrency: 16, requests: 32, "
        "sla: {p95_tpot_ms: 60}}\n"), 1)
    return parse_space(text)


STAGED = sweep_of(load_space(SPARK), 24)
FINAL_SAMPLE = sweep_of(load_space(SPARK), 24, final_questions=200, slots=2)
REGIMES = sweep_of(_sixteen_users(), 24, runner=RegimeRunner)


class TestStagedSearch(SearcherContract):
    """The default: the search plan beside TPE, then the finals."""

    @pytest.fixture
    def make_sweep(self) -> MakeSweep:
        return STAGED


class TestTheSamplerAlone(SearcherContract):
    seed = 3

    @pytest.fixture
    def make_sweep(self) -> MakeSweep:
        return sweep_of(load_space(SPARK), 16, staged=False)


class TestFinalSample(SearcherContract):
    """The finals on a final accuracy sample, two launches at a time: the baseline's
    launch on it first, the finalists waiting for it."""

    seed = 1

    @pytest.fixture
    def make_sweep(self) -> MakeSweep:
        return FINAL_SAMPLE


class TestLoadRegimes(SearcherContract):
    """A load regime: the capacity knobs searched and screened first, the local search
    around each regime's best too, each regime's pick launched again in the finals."""

    seed = 2

    @pytest.fixture
    def make_sweep(self) -> MakeSweep:
        return REGIMES


class TestAnExhaustedSpace(SearcherContract):
    """Two configurations: both measured, the finals forced at once."""

    @pytest.fixture
    def make_sweep(self) -> MakeSweep:
        return sweep_of(_two_configurations(), 20)


def test_the_product_searcher_suggests_every_kind(tmp_path: Path) -> None:
    """The contract is not vacuous here: the staged search plans (screens, combinations,
    neighbours), leaves turns to the sampler and launches its finalists again; on a final
    sample it also waits for the baseline's launch on it; a regime's pick measured once
    is launched again before the finals race (not a confirmation)."""
    staged = watched_sweep(STAGED, tmp_path / "staged", 0).suggestions
    assert {type(s) for s in staged} == {Planned, Ask, Remeasure}
    assert {s.why for s in staged if isinstance(s, Planned)} >= {
        "screen", "combine", "neighbour"}
    final = watched_sweep(FINAL_SAMPLE, tmp_path / "final", 1).suggestions
    assert Wait in {type(s) for s in final}
    assert any(isinstance(s, Remeasure) and s.final_sample for s in final)
    regimes = watched_sweep(REGIMES, tmp_path / "regimes", 2).suggestions
    rows = summaries(optuna.load_study(study_name="s",
                                       storage=f"sqlite:///{tmp_path / 'regimes' / 's.db'}"))
    (sixteen,) = regime_answers(answer_of(rows, with_accuracy=True), rows)
    # the search's own re-measurements of its fastest so far aside (``contender``)
    first = next(s for s in regimes if isinstance(s, Remeasure) and not s.contender)
    # the race would begin with the fastest finalist at batch 1 (#11 here)
    assert sixteen.pick is not None and first == Remeasure(sixteen.pick.number)


class _Writer(Searcher):
    """Breaks the contract: asks the study it is shown for a write."""

    def suggest(self, study: StudyReads, turn: Turn) -> Suggestion:
        study.enqueue({}, "a searcher that writes")   # type: ignore[attr-defined]
        return Ask()


class _Sneak(Searcher):
    """Breaks the contract behind the spy's back: writes through the store it was built
    with."""

    def __init__(self) -> None:
        self.store: SweepStudy | None = None

    def suggest(self, study: StudyReads, turn: Turn) -> Suggestion:
        assert self.store is not None
        self.store.enqueue({"moe_backend": "humming"}, "a searcher that writes")
        return Ask()


class _Partial(Searcher):
    """Breaks the contract: plans a configuration with an active knob left out."""

    def suggest(self, study: StudyReads, turn: Turn) -> Suggestion:
        return Planned({"moe_backend": "humming"}, "partial")


@pytest.mark.parametrize("bad", [_Writer, _Sneak])
def test_the_contract_catches_a_searcher_that_writes(tmp_path: Path, bad: type) -> None:
    searcher = bad()
    make = sweep_of(load_space(SPARK), 4, searcher=searcher)

    def made(tmp: Path, seed: int, watch: Watch) -> Driver:
        driver = make(tmp, seed, watch)
        searcher.store = driver.sweep
        return driver

    with pytest.raises(StoreWrite):
        watched_sweep(made, tmp_path, 0)


def test_the_contract_catches_a_plan_the_space_does_not_complete(tmp_path: Path) -> None:
    """The space would fill the missing knob in: the launch would not be what was
    planned."""
    watched = watched_sweep(sweep_of(load_space(SPARK), 3, searcher=_Partial()), tmp_path, 0)
    assert watched.incomplete and "partial" in watched.incomplete[0]


class _Unseeded(Searcher):
    """Breaks the contract: plans from a generator it never seeded."""

    def __init__(self) -> None:
        self.configs = list(load_space(SPARK).iter_configs(limit=500))
        self.rng = random.Random()

    def suggest(self, study: StudyReads, turn: Turn) -> Suggestion:
        return Planned(self.rng.choice(self.configs), "unseeded")


class _Stalls(Searcher):
    """Breaks the contract: waits once the baseline is measured, with nothing in flight."""

    def suggest(self, study: StudyReads, turn: Turn) -> Suggestion:
        return Ask() if turn.baseline is None else Wait()


def test_the_contract_catches_a_searcher_of_unseeded_chance(tmp_path: Path) -> None:
    def make(tmp: Path, seed: int, watch: Watch) -> Driver:     # a fresh searcher each
        return sweep_of(load_space(SPARK), 6, searcher=_Unseeded())(tmp, seed, watch)

    with pytest.raises(AssertionError):
        SearcherContract().test_its_suggestions_are_a_function_of_the_study_and_the_seed(
            make, tmp_path)


def test_the_contract_catches_a_searcher_that_stalls(tmp_path: Path) -> None:
    with pytest.raises(AssertionError):
        SearcherContract().test_it_waits_only_while_a_launch_is_in_flight(
            sweep_of(load_space(SPARK), 4, searcher=_Stalls()), tmp_path)
