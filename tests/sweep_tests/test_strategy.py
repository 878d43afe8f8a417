"""The default search plan (tuner/sweep/_strategy.py) and knob roles, with the model-backed
stand-in runner (no servers)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import optuna

from tests.conftest import SPARK
from tests.sweep_tests import stand_ins
from tests.sweep_tests.model_runner import ModelRunner
from tests.sweep_tests.model_runner import model_sweep
from tuner.engines import make_engine
from tuner.space import load_space
from tuner.study import summaries
from tuner.sweep._neighbours import neighbours
from tuner.sweep._strategy import StagedPlan
from tuner.sweep._strategy import screens


SPACE = load_space(SPARK)
ENGINE = make_engine("sim")


def run(tmp: Path, *, trials: int, seed: int = 0, staged: bool = True,
        sampler: str = "tpe") -> tuple[optuna.Study, ModelRunner]:
    runner = ModelRunner(seed=seed)
    return model_sweep(tmp, runner, trials=trials, seed=seed, staged=staged,
                       sampler=sampler), runner


def test_screens_change_one_top_level_knob_each_children_at_defaults() -> None:
    got = screens(SPACE)
    base = SPACE.complete({})
    changed = [{k: v for k, v in c.items() if base.get(k) != v} for c in got]
    assert changed == [
        {"moe_backend": "humming", "humming_activation": "bf16"},
        {"moe_backend": "marlin"},
        {"lm_head": "bf16"},
        {"lm_head": "fp8"},
        {"speculative": "NEXTN", "spec_steps": 3, "spec_topk": 1, "spec_draft_tokens": 4},
        {"speculative": "DSPARK", "dspark_block_size": 8},
    ]
    assert all(c["mem_fraction"] == base["mem_fraction"] for c in got)   # capacity held


def test_coupled_neighbours_move_draft_steps_and_verify_window_together() -> None:
    inc = SPACE.complete({"speculative": "NEXTN", "spec_steps": 3, "spec_topk": 2,
                          "spec_draft_tokens": 4})
    pairs = {(c["spec_steps"], c["spec_draft_tokens"]) for c in neighbours(SPACE, inc)
             if c.get("spec_topk") == 2 and c["spec_steps"] != 3
             and c["spec_draft_tokens"] != 4}
    assert pairs == {(2, 3), (4, 5)}
    # a capacity knob never moves
    assert {c["mem_fraction"] for c in neighbours(SPACE, inc)} == {inc["mem_fraction"]}


def test_default_sweep_runs_baseline_screens_then_combination_with_model_backed_runner(
        tmp_path: Path) -> None:
    study, runner = run(tmp_path, trials=20)
    by = [t.user_attrs.get("proposed_by") for t in study.get_trials()
          if t.user_attrs.get("tuner:role") in ("baseline", "trial")]
    assert by[:8] == [None, *["screen"] * 6, "combine"]
    combo = runner.launched[7]
    # the model's screen winners (humming, the FP8 head, DSPARK) together
    assert (combo["moe_backend"], combo["lm_head"], combo["speculative"]) == (
        "humming", "fp8", "DSPARK")
    # once the combinations are in: the best so far's gamma at its domain's quartiles
    probes = [c for c, why in zip(runner.launched, by, strict=False) if why == "probe"]
    assert [c["dspark_block_size"] for c in probes if "dspark_block_size" in c] == [4, 10]
    # and NEXTN's draft steps (1-5) at 2 and 4, on the same kernel and head
    assert [c["spec_steps"] for c in probes if "spec_steps" in c] == [2, 4]
    assert len({(c["moe_backend"], c["lm_head"]) for c in probes}) == 1


def test_no_speed_trial_differs_from_another_only_in_a_capacity_knob_with_model_backed_runner(
        tmp_path: Path) -> None:
    for staged, sampler in ((True, "tpe"), (False, "random")):
        d = tmp_path / f"{staged}-{sampler}"
        d.mkdir()
        study, runner = run(d, trials=30, seed=3, staged=staged, sampler=sampler)
        measured = [s for s in summaries(study) if s.measured]
        keys = [SPACE.speed_key(s.config) for s in measured]
        assert len(keys) == len(set(keys)) >= 20      # then the finals' launches (the
        again = [s for s in summaries(study) if s.role.value == "remeasure"]  # search's
        assert len(keys) + len(again) == len(runner.launched) <= 30       # own too)
        assert {s.config["mem_fraction"] for s in measured} == {0.68}
        # only the finals' confirmations of the pick try the space's cap (its KV pool)
        assert {s.config["mem_fraction"] for s in summaries(study) if s.confirm} == {0.7}
        assert not [s for s in measured if s.state == "FAIL"]     # held value always fits
        # the sampler never sees the capacity knob as a parameter
        assert all("mem_fraction" not in t.params for t in study.get_trials()
                   if t.user_attrs.get("tuner:role") == "trial")


class _FlakyOnce(ModelRunner):
    """Fails the first launch of the second configuration it sees at start-up (a stand-in
    for a start-up that fails once: a port taken, a driver hiccup)."""

    def __init__(self, reason: str, **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.reason, self.failed_once = reason, False

    def _run(self, job):  # type: ignore[no-untyped-def]
        res = super()._run(job)
        if len(self.launched) == 2 and not self.failed_once:
            self.failed_once = True
            res.status, res.reason, res.message = "failed", self.reason, "exited during start"
            res.aggregates = res.gate = None
        return res


def test_a_flaky_start_up_is_launched_once_more_before_it_counts_with_model_backed_runner(
        tmp_path: Path) -> None:
    runner = _FlakyOnce("launch_error", seed=0)
    study = model_sweep(tmp_path, runner, trials=8)
    rows = summaries(study)
    failed = [s for s in rows if s.state == "FAIL"]
    assert len(failed) == 1 and failed[0].retried and failed[0].reason == "launch_error"
    retry = [t for t in study.get_trials()
             if t.user_attrs.get("flaky_retry_of") == failed[0].number]
    assert len(retry) == 1 and retry[0].state == optuna.trial.TrialState.COMPLETE
    assert retry[0].user_attrs["config_hash"] == failed[0].config_hash
    assert not stand_ins(study)                          # the sampler is not steered away
    assert sum(s.launched for s in rows) == 8 == len(runner.launched)
    # the screen planned while the retry was queued was not lost: every screen measured
    measured = {s.config_hash for s in rows if s.measured}
    assert all(ENGINE.canonicalize(SPACE, c).hash() in measured for c in screens(SPACE))


def test_an_out_of_memory_start_is_not_retried_with_model_backed_runner(
        tmp_path: Path) -> None:
    runner = _FlakyOnce("oom", seed=0)
    study = model_sweep(tmp_path, runner, trials=8)
    failed = [s for s in summaries(study) if s.state == "FAIL"]
    assert len(failed) == 1 and not failed[0].retried
    assert not [t for t in study.get_trials() if "flaky_retry_of" in t.user_attrs]
    assert stand_ins(study) == {failed[0].number}


def _plan_after_screens(readings: dict[str, tuple[float, float, float]]
                        ) -> tuple[StagedPlan, dict[str, SimpleNamespace], SimpleNamespace]:
    """A plan whose screens were measured: ``readings`` maps the changed value of each
    screen (``humming``, ``marlin``, ``bf16``, ``fp8``, ``NEXTN``, ``DSPARK``) to (TPOT,
    CI low, CI high); the baseline reads 26 ms. DSPARK reads 27 ms unless given."""
    readings = {"DSPARK": (27.0, 26.8, 27.2), **readings}
    def hash_of(values: dict[str, object]) -> str:
        repaired, _ = ENGINE.repair(SPACE, values)
        return ENGINE.canonicalize(SPACE, repaired).hash()

    plan = StagedPlan(SPACE, hash_of, seed=0)
    base = SPACE.complete({})
    measured = {}
    for cfg in plan.screens:
        (value,) = [v for k, v in cfg.items() if not SPACE.knob(k).when and base.get(k) != v]
        tpot, low, high = readings[str(value)]
        measured[hash_of(cfg)] = SimpleNamespace(feasible=True, tpot_ms=tpot,
                                                 tpot_ci95=[low, high], config=cfg, number=0)
    baseline = SimpleNamespace(tpot_ms=26.0, tpot_ci95=[25.5, 26.5])
    return plan, measured, baseline


def _combos(plan: StagedPlan, measured: dict[str, SimpleNamespace],
            baseline: SimpleNamespace) -> list[tuple[str, str, str]]:
    out = []
    while (got := plan.next(measured, None, baseline)) is not None:
        cfg, why, _ = got
        assert why == "combine"
        out.append((cfg["moe_backend"], cfg["lm_head"], cfg["speculative"]))
    return out


def test_a_runner_up_screen_that_ties_its_winner_is_combined_too() -> None:
    # marlin's screen read faster than humming's, but their intervals overlap (one noisy
    # launch each): the combination is tried with each (seed 41 of the search benchmark)
    plan, measured, baseline = _plan_after_screens({
        "humming": (25.0, 24.0, 26.0), "marlin": (24.5, 23.5, 25.5),
        "bf16": (25.8, 25.3, 26.3), "fp8": (23.0, 22.5, 23.5), "NEXTN": (20.0, 19.5, 20.5)})
    assert _combos(plan, measured, baseline) == [("marlin", "fp8", "NEXTN"),
                                                 ("humming", "fp8", "NEXTN")]


def test_a_runner_up_screen_clearly_slower_is_not_combined() -> None:
    plan, measured, baseline = _plan_after_screens({
        "humming": (25.0, 24.8, 25.2), "marlin": (24.0, 23.8, 24.2),
        "bf16": (25.8, 25.6, 26.0), "fp8": (23.0, 22.8, 23.2), "NEXTN": (20.0, 19.8, 20.2)})
    assert _combos(plan, measured, baseline) == [("marlin", "fp8", "NEXTN")]


def test_a_screen_that_ties_the_baseline_is_tried_in_the_combination() -> None:
    # speculation behind the baseline's FP32 head read no faster than the baseline (search
    # benchmark seed 0): the combination is also tried with it on
    plan, measured, baseline = _plan_after_screens({
        "humming": (24.0, 23.8, 24.2), "marlin": (25.0, 24.8, 25.2),
        "bf16": (25.8, 25.6, 26.0), "fp8": (23.0, 22.8, 23.2), "NEXTN": (26.1, 25.6, 26.6)})
    assert _combos(plan, measured, baseline) == [("humming", "fp8", "off"),
                                                 ("humming", "fp8", "NEXTN")]


def test_a_screen_clearly_slower_than_the_baseline_stays_out_of_the_combination() -> None:
    plan, measured, baseline = _plan_after_screens({
        "humming": (24.0, 23.8, 24.2), "marlin": (25.0, 24.8, 25.2),
        "bf16": (25.8, 25.6, 26.0), "fp8": (23.0, 22.8, 23.2), "NEXTN": (28.0, 27.6, 28.4)})
    assert _combos(plan, measured, baseline) == [("humming", "fp8", "off")]


def test_the_best_configurations_gamma_is_probed_at_the_quartiles_after_the_combinations(
        ) -> None:
    plan, measured, baseline = _plan_after_screens({
        "humming": (24.0, 23.8, 24.2), "marlin": (25.0, 24.8, 25.2),
        "bf16": (25.8, 25.6, 26.0), "fp8": (23.0, 22.8, 23.2), "NEXTN": (25.0, 24.8, 25.2),
        "DSPARK": (22.0, 21.8, 22.2)})
    cfg, why, _ = plan.next(measured, None, baseline)  # type: ignore[misc]
    assert why == "combine" and cfg["dspark_block_size"] == 8
    # the combination is still running: no probe yet (the sampler proposes meanwhile)
    best = SimpleNamespace(config=cfg, feasible=True, tpot_ms=18.0, tpot_ci95=[17.8, 18.2],
                           number=9)
    assert plan.next(measured, best, baseline) is None
    measured[plan.hash_of(cfg)] = best
    probes = []
    while (got := plan.next(measured, best, baseline)) is not None and got[1] == "probe":
        c = got[0]
        probes.append((c["speculative"], c.get("spec_steps", c.get("dspark_block_size")),
                       c["moe_backend"], c["lm_head"]))
        measured[plan.hash_of(c)] = SimpleNamespace(
            config=c, feasible=True, tpot_ms=30.0, tpot_ci95=[29.8, 30.2], number=10)
    # each wide ordered knob at its domain's quartiles, from the best configuration with
    # its condition switched on: its kernel and head carried along
    assert probes == [("NEXTN", 2, "humming", "fp8"), ("NEXTN", 4, "humming", "fp8"),
                      ("DSPARK", 4, "humming", "fp8"), ("DSPARK", 10, "humming", "fp8")]


def test_the_local_search_takes_turns_around_a_load_regimes_center() -> None:
    """A regime's best is often not batch 1's (docs/performance.md, "Load regimes"): every
    other local step looks around the regime's center first, the others around the
    batch-1 best."""
    plan, measured, baseline = _plan_after_screens({
        "humming": (24.0, 23.8, 24.2), "marlin": (25.0, 24.8, 25.2),
        "bf16": (25.8, 25.6, 26.0), "fp8": (23.0, 22.8, 23.2), "NEXTN": (25.0, 24.8, 25.2)})
    plan.explore_every = 0                 # no sampler turns: every step is planned
    plan.combos, plan.probes = [], []      # straight to the local search
    best_cfg = SPACE.complete({"moe_backend": "humming", "lm_head": "fp8"})
    center_cfg = SPACE.complete({"speculative": "DSPARK", "dspark_block_size": 3})
    best = SimpleNamespace(config=best_cfg, feasible=True, tpot_ms=20.0,
                           tpot_ci95=[19.8, 20.2], number=7)
    center = SimpleNamespace(config=center_cfg, number=8)
    around_best = {plan.hash_of(c) for c in neighbours(SPACE, best_cfg)}
    around_center = {plan.hash_of(c) for c in neighbours(SPACE, center_cfg)}
    steps = []
    for _ in range(4):
        cfg, why, serves = plan.next(measured, best, baseline,  # type: ignore[misc]
                                     also=lambda: [(center, "sixteen")])
        assert why == "neighbour"
        h = plan.hash_of(cfg)
        steps.append("center" if h in around_center - around_best else
                     "best" if h in around_best else "other")
        # a neighbour of the regime's center is launched for that regime, the others not
        assert serves == ("sixteen" if steps[-1] == "center" else None)
        measured[h] = SimpleNamespace(config=cfg, feasible=True, tpot_ms=30.0,
                                      tpot_ci95=[29.8, 30.2], number=20)
    assert steps == ["center", "best", "center", "best"]


def test_a_regime_of_many_users_screens_the_capacity_first_largest_first() -> None:
    """Issue 33: the first launches after the baseline measure how many requests run
    together, so whether anything can meet the regime's SLA is known within five."""
    from tuner.space import Regime
    from tuner.space import Workload

    space = load_space(SPARK)
    loaded = space.for_workload(Workload(regimes=[Regime(name="sixteen", concurrency=16)]))
    first = screens(loaded, space.capacity_knobs)
    assert [s["max_running"] for s in first[:4]] == [16, 8, 4, 2]
    base = loaded.complete({})
    assert all({**s, "max_running": 1} == base for s in first[:4])   # the baseline at each
    assert {s["max_running"] for s in first[4:]} == {1}
    assert sorted(map(str, first[4:])) == sorted(map(str, screens(loaded)[:-4]))
    assert screens(space) == [s for s in screens(loaded) if s["max_running"] == 1]


def test_a_move_is_priced_by_measured_pairs_its_children_going_with_their_parent() -> None:
    from tuner.sweep._strategy import move_effects
    from tuner.sweep._strategy import move_of

    dspark = SPACE.complete({"speculative": "DSPARK", "dspark_block_size": 9})
    off = SPACE.complete({})
    # gamma leaves with speculation: the move is speculation's alone
    assert move_of(SPACE, dspark, off) == (("speculative", "'DSPARK'", "'off'"),)
    assert move_of(SPACE, dspark, {**dspark, "dspark_block_size": 8}) == (
        ("dspark_block_size", "9", "8"),)
    assert move_of(SPACE, off, {**off, "mem_fraction": 0.6}) == ()     # capacity: no move
    rows = [SimpleNamespace(config=off, tpot_ms=26.0),
            SimpleNamespace(config=SPACE.complete({"speculative": "DSPARK"}), tpot_ms=16.0),
            SimpleNamespace(config=SPACE.complete({"moe_backend": "marlin"}), tpot_ms=27.0),
            SimpleNamespace(config=SPACE.complete({"moe_backend": "marlin",
                                                   "speculative": "DSPARK"}), tpot_ms=18.0)]
    effects = move_effects(SPACE, rows)
    # DSPARK -> off, measured beside both kernels: the median of 26/16 and 27/18
    assert abs(effects[move_of(SPACE, dspark, off)] - (26 / 16 * 27 / 18) ** 0.5) < 1e-9
    assert abs(effects[move_of(SPACE, off, dspark)] * effects[move_of(SPACE, dspark, off)]
               - 1) < 1e-9


def test_the_local_search_leaves_moves_measured_as_slow_and_then_hands_over() -> None:
    """Around DSPARK on humming with the FP8 head: speculation off or NEXTN, priced 1.6-1.7x
    by the screens, is never proposed; once the rest of the neighbourhood is measured the
    plan says it is exhausted (the finals may start: tuner/sweep/_policy.py)."""
    from tuner.sweep._strategy import EXHAUSTED

    plan, measured, baseline = _plan_after_screens({
        "humming": (24.0, 23.8, 24.2), "marlin": (25.0, 24.8, 25.2),
        "bf16": (25.8, 25.6, 26.0), "fp8": (23.0, 22.8, 23.2), "NEXTN": (25.0, 24.8, 25.2),
        "DSPARK": (15.0, 14.8, 15.2)})
    measured[plan.hash_of(SPACE.complete({}))] = SimpleNamespace(
        config=SPACE.complete({}), feasible=True, tpot_ms=26.0, tpot_ci95=[25.5, 26.5],
        number=0)
    plan.explore_every = 0
    plan.combos, plan.probes = [], []
    best_cfg = SPACE.complete({"moe_backend": "humming", "lm_head": "fp8",
                               "speculative": "DSPARK"})
    best = SimpleNamespace(config=best_cfg, feasible=True, tpot_ms=13.0,
                           tpot_ci95=[12.8, 13.2], number=9)
    measured[plan.hash_of(best_cfg)] = best
    proposed = []
    while (got := plan.next(measured, best, baseline)) is not EXHAUSTED:
        cfg, why, _ = got  # type: ignore[misc]
        assert why == "neighbour"
        proposed.append(cfg)
        measured[plan.hash_of(cfg)] = SimpleNamespace(
            config=cfg, feasible=True, tpot_ms=14.0, tpot_ci95=[13.8, 14.2], number=10)
    from tuner.sweep._strategy import move_effects
    from tuner.sweep._strategy import move_of

    assert proposed and all(c["speculative"] == "DSPARK" for c in proposed)
    done = {plan.hash_of(c) for c in proposed}
    left = [c for c in neighbours(SPACE, best_cfg) if plan.hash_of(c) not in done]
    assert {c["speculative"] for c in left} == {"off", "NEXTN", "DSPARK"}
    # what is left is what the measured pairs price slower than HOPELESS (the FP32 and
    # BF16 heads too: 26 and 25.8 against the FP8 head's 23)
    effects = move_effects(SPACE, measured.values())
    assert all(effects[move_of(SPACE, best_cfg, c)] > plan.HOPELESS for c in left)
    assert sorted(c["lm_head"] for c in left if c["speculative"] == "DSPARK") == [
        "bf16", "fp32"]


def test_a_regimes_capacity_is_combined_at_its_best_goodput_not_its_batch1_reading() -> None:
    """Issue 33: max_running changes no batch-1 speed, so its screens' TPOT readings are
    noise; the combination takes the capacity whose screen served the regime best (8 here,
    its p95 a hair over the SLA on the slow baseline: the faster combination has the lower
    tail), then the runner-up (4), never the one that served nobody (16)."""
    from tuner.space import Regime
    from tuner.space import Workload

    loaded = SPACE.for_workload(Workload(regimes=[Regime(name="sixteen", concurrency=16)]))

    def hash_of(values: dict[str, object]) -> str:
        return ENGINE.canonicalize(loaded, ENGINE.repair(loaded, values)[0]).hash()

    plan = StagedPlan(loaded, hash_of, seed=0, first=SPACE.capacity_knobs)
    speed = {"humming": 24.0, "marlin": 25.0, "bf16": 25.8, "fp8": 23.0, "NEXTN": 25.0,
             "DSPARK": 15.0}
    # max_running -> (batch-1 TPOT, goodput, within the SLA)
    served = {16: (25.8, 0.01, False), 8: (26.6, 0.21, False), 4: (25.2, 0.15, True),
              2: (26.1, 0.10, True)}
    base = loaded.complete({})
    measured = {}
    for cfg in plan.screens:
        (value,) = [v for k, v in cfg.items() if not loaded.knob(k).when and base.get(k) != v]
        tpot, goodput, within = served.get(value, (speed.get(str(value)), 0.06, True))
        measured[hash_of(cfg)] = SimpleNamespace(
            feasible=True, tpot_ms=tpot, tpot_ci95=[tpot - 0.2, tpot + 0.2], config=cfg,
            number=0, regimes={"sixteen": SimpleNamespace(goodput_rps=goodput,
                                                          within_sla=within)})
    baseline = SimpleNamespace(tpot_ms=26.0, tpot_ci95=[25.5, 26.5], regimes={
        "sixteen": SimpleNamespace(goodput_rps=0.06, within_sla=True)})
    combos = []
    while (got := plan.next(measured, None, baseline)) is not None:
        combos.append((got[0]["moe_backend"], got[0]["lm_head"], got[0]["speculative"],
                       got[0]["max_running"]))
    assert combos == [("humming", "fp8", "DSPARK", 8), ("humming", "fp8", "DSPARK", 4)]
