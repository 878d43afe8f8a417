"""Pooled estimates and the finals' pick (tuner/study/_pooled.py, tuner/sweep/_finals.py)."""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Callable
from pathlib import Path

from scipy.stats import t as student_t

from tests.sweep_tests import stand_ins
from tests.sweep_tests.model_runner import ModelRunner
from tests.sweep_tests.model_runner import model_sweep
from tuner.study import Role
from tuner.study import TrialSummary
from tuner.study import feasible_best
from tuner.study import summaries
from tuner.study.pooled import estimates
from tuner.study.pooled import feasible_estimates
from tuner.study.pooled import largest_capacity
from tuner.sweep._base import TrialJob
from tuner.sweep._finals import Finals


def _row(number: int, tpot: float, role: Role = Role.TRIAL, *, of: int | None = None,
         confirm: bool = False) -> TrialSummary:
    return TrialSummary(number=number, state="COMPLETE", role=role, values=[tpot, 0.97],
                        feasible=True, tpot_ms=tpot, tpot_ci95=[tpot * 0.95, tpot * 1.05],
                        remeasure_of=of, confirm=confirm)


def test_the_estimate_is_the_mean_of_every_launch_and_counts_them() -> None:
    rows = [_row(0, 30.0, Role.BASELINE), _row(1, 17.0),            # a lucky first reading
            _row(2, 18.4, Role.REMEASURE, of=1),                    # the race
            _row(3, 18.0, Role.REMEASURE, of=1, confirm=True),      # after the choice
            _row(4, 18.6, Role.REMEASURE, of=1, confirm=True)]
    e = estimates(None, rows)[1]
    every = [17.0, 18.4, 18.0, 18.6]
    assert e.tpot_ms == e.pooled_ms == statistics.fmean(every)      # "x4": these four
    assert e.launches == 4 and e.remeasured == 3 and e.confirmations == 2
    assert e.first_ms == 17.0 and e.readings == tuple(every)
    half = student_t.ppf(0.975, 3) * statistics.stdev(every) / 4 ** 0.5
    assert abs((e.high - e.low) / 2 - half) < 1e-9
    unmeasured = estimates(None, rows)[0]
    assert unmeasured.tpot_ms == 30.0 and not unmeasured.confirmations
    assert unmeasured.launches == 1 and (unmeasured.low, unmeasured.high) == (28.5, 31.5)


def test_finals_race_the_overlapping_configurations_then_confirm_the_leader() -> None:
    rows = [_row(0, 30.0, Role.BASELINE), _row(1, 17.0), _row(2, 17.5), _row(3, 25.0)]
    f = Finals(trials=30, hours=None, share=0.2)          # 6 launches: 4 race, 2 confirm
    assert f.reserve == 6
    assert not f.due(trials=30, launched=23, elapsed_s=0)
    assert f.due(trials=30, launched=24, elapsed_s=0)
    race = []
    for i in range(4):      # the race counts the launches in the study (running ones too),
        race.append(f.choose(rows))       # so asking twice before a launch counts nothing
        assert f.choose(rows) == race[-1]
        rows.append(dataclasses.replace(_row(20 + i, 0.0, Role.REMEASURE, of=race[-1][0]),
                                        state="RUNNING", values=None, tpot_ms=None))
    assert [n for n, _, _ in race] == [1, 2, 1, 2] and not any(c for _, c, _ in race)
    rows = rows[:4]                                   # the race, measured:
    # the race showed #2 is faster: it is confirmed, though #1 read faster first
    rows += [_row(10, 18.5, Role.REMEASURE, of=1), _row(11, 18.7, Role.REMEASURE, of=1),
             _row(12, 17.4, Role.REMEASURE, of=2), _row(13, 17.6, Role.REMEASURE, of=2)]
    assert f.choose(rows) == (2, True, None) == f.choose(rows)   # no capacity ladder here
    # a resumed sweep (a new driver, new Finals) reads the race from the study: it confirms
    resumed = Finals(trials=30, hours=None, share=0.2)
    assert resumed.choose(rows) == (2, True, None)


def test_a_default_sweep_picks_and_reports_the_confirmed_configuration_with_model_backed_runner(
        tmp_path: Path) -> None:
    runner = ModelRunner(seed=2, noise=0.03)
    study = model_sweep(tmp_path, runner, trials=20, seed=2)
    rows = summaries(study)
    confirms = [s for s in rows if s.role == Role.REMEASURE and s.confirm]
    assert confirms and len({s.remeasure_of for s in confirms}) == 1
    pick = feasible_best(study)
    assert pick.number == confirms[0].remeasure_of
    e = estimates(study)[pick.number]
    launches = [s for s in rows if s.number == pick.number or s.remeasure_of == pick.number]
    assert e.confirmations == len(confirms) and e.launches == len(launches)
    assert e.tpot_ms == statistics.fmean(s.tpot_ms for s in launches)
    # the confirmations ran at the cap (capacity changes no speed), with a larger KV pool
    assert {c.held["mem_fraction"] for c in confirms} == {0.7}
    larger = largest_capacity(study, pick.number)
    assert larger is not None and larger.user_attrs["config"]["mem_fraction"] == 0.7
    assert larger.user_attrs["kv_tokens"] > pick.user_attrs["kv_tokens"]


class _NoRoomAtTheCap(ModelRunner):
    """Out of memory at the space's cap (0.70), as a machine with less free memory."""

    def _run(self, job):  # type: ignore[no-untyped-def]
        res = super()._run(job)
        if job.config.as_dict()["mem_fraction"] == 0.7:
            res.status, res.reason, res.message = "failed", "oom", "CUDA out of memory"
            res.aggregates = res.gate = None
        return res


def test_confirmations_step_down_the_capacity_ladder_after_an_oom_with_model_backed_runner(
        tmp_path: Path) -> None:
    runner = _NoRoomAtTheCap(seed=4)
    study = model_sweep(tmp_path, runner, trials=30, seed=4)
    confirms = [s for s in summaries(study) if s.role == Role.REMEASURE and s.confirm]
    assert [(c.held["mem_fraction"], c.state) for c in confirms] == [
        (0.7, "FAIL"), (0.69, "COMPLETE")]
    pick = feasible_best(study)
    assert largest_capacity(study, pick.number).user_attrs["config"]["mem_fraction"] == 0.69
    e = estimates(study)[pick.number]                   # only what served is pooled
    assert confirms[1].tpot_ms in e.readings and e.launches == len(e.readings)
    assert e.confirmations == 1
    assert not stand_ins(study)


def test_finals_of_a_timed_sweep_start_at_the_last_fifth_of_its_hours() -> None:
    f = Finals(trials=None, hours=1.0, share=0.2)
    assert f.reserve == 0
    assert not f.due(trials=None, launched=100, elapsed_s=0.79 * 3600)
    assert f.due(trials=None, launched=0, elapsed_s=0.8 * 3600)
    off = Finals(trials=30, hours=None, share=0.0)       # finals off: never due
    assert off.reserve == 0 and not off.due(trials=30, launched=29, elapsed_s=1e9)


def test_ties_are_the_feasible_configurations_whose_interval_overlaps_with_model_backed_runner(
        tmp_path: Path) -> None:
    from tuner.study.pooled import ties_with

    runner = ModelRunner(seed=2, noise=0.03)
    study = model_sweep(tmp_path, runner, trials=20, seed=2)
    pick = feasible_best(study).number
    est = estimates(study)
    ties = ties_with(study, pick)
    assert pick not in ties
    for n, e in est.items():
        if n != pick and summaries(study)[n].feasible:
            assert (n in ties) == e.overlaps(est[pick])
    assert [est[n].tpot_ms for n in ties] == sorted(est[n].tpot_ms for n in ties)


def test_confirmations_bisect_a_long_capacity_ladder() -> None:
    ladder = [{"mem_fraction": v} for v in (0.92, 0.91, 0.90, 0.89, 0.88, 0.87, 0.86)]
    f = Finals(trials=30, hours=None, share=0.2, ladder=ladder)
    f.finalists, f.leader = [1], 1

    def run(n: int, held: float, state: str) -> TrialSummary:
        return TrialSummary(number=n, state=state, role=Role.REMEASURE, remeasure_of=1,
                            confirm=True, held={"mem_fraction": held})

    rows = [_row(0, 30.0, Role.BASELINE), _row(1, 17.0)]
    assert f.choose(rows)[2] == {"mem_fraction": 0.92}              # the cap first
    rows.append(run(2, 0.92, "FAIL"))
    assert f.choose(rows)[2] == {"mem_fraction": 0.88}              # the middle of 0.91-0.86
    rows.append(run(3, 0.88, "COMPLETE"))
    assert f.choose(rows)[2] == {"mem_fraction": 0.90}              # between 0.88 and 0.92
    rows.append(run(4, 0.90, "FAIL"))
    assert f.choose(rows)[2] == {"mem_fraction": 0.89}
    rows.append(run(5, 0.89, "COMPLETE"))
    assert f.choose(rows)[2] == {"mem_fraction": 0.89}              # nothing left between


class _LosesOneLaunch(ModelRunner):
    """The worker of the first launch ``lose(job)`` picks dies (a lost Ray node)."""

    def __init__(self, lose: Callable[[TrialJob], bool], **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.lose, self.lost = lose, False

    def submit(self, job: TrialJob) -> None:
        from tuner.sweep._base import Outcome

        if not self.lost and self.lose(job):
            self.lost = True
            self._inflight.append(job.key)
            self.done.append(Outcome(job.key, "worker_lost", detail="node gone"))
            return
        super().submit(job)


def test_a_lost_confirmation_is_queued_again_as_a_confirmation_with_model_backed_runner(
        tmp_path: Path) -> None:
    runner = _LosesOneLaunch(lambda job: job.config.as_dict()["mem_fraction"] == 0.7,
                             seed=2)     # the first launch at the capacity cap
    study = model_sweep(tmp_path, runner, trials=20, seed=2)
    lost = [t for t in study.get_trials() if t.user_attrs.get("reason") == "worker_lost"]
    assert len(lost) == 1
    again = [t for t in study.get_trials() if t.user_attrs.get("retry_of") == lost[0].number]
    assert len(again) == 1 and again[0].state.name == "COMPLETE"
    assert again[0].user_attrs["confirm"] is True
    assert again[0].user_attrs["held"] == {"mem_fraction": 0.7}
    assert estimates(study)[feasible_best(study).number].confirmations


def test_a_trial_whose_worker_died_runs_again_and_is_no_failure_with_model_backed_runner(
        tmp_path: Path) -> None:
    runner = _LosesOneLaunch(lambda job: job.key == 1, seed=2)     # the second launch
    study = model_sweep(tmp_path, runner, trials=10, seed=2)
    lost = study.trials[1]
    assert lost.user_attrs["reason"] == "worker_lost" and lost.user_attrs["recovered"]
    again = [t for t in study.get_trials() if t.user_attrs.get("retry_of") == 1]
    assert len(again) == 1 and again[0].state.name == "COMPLETE"          # measured, not
    assert "duplicate_of" not in again[0].user_attrs                      # a copy of the loss
    assert not stand_ins(study)
    assert sum(s.launched for s in summaries(study)) == 10                # the loss not counted


def test_a_timed_sweep_races_then_confirms_in_the_last_third_of_its_finals() -> None:
    rows = [_row(0, 30.0, Role.BASELINE), _row(1, 17.0), _row(2, 17.5)]
    f = Finals(trials=None, hours=1.0, share=0.3)          # finals from 70%, confirm from 90%
    assert f.due(trials=None, launched=0, elapsed_s=0.7 * 3600)
    assert f.choose(rows, elapsed_s=0.75 * 3600)[1] is False
    assert f.choose(rows, elapsed_s=0.89 * 3600)[1] is False
    assert f.choose(rows, elapsed_s=0.91 * 3600)[1] is True


def test_a_timed_sweep_keeps_time_for_launches_on_the_final_sample() -> None:
    """A 6-minute sweep whose launches take 100 s of start-up then 60 s on 60 questions
    (machine time, simulated 10x faster). On 400 questions a launch takes (100 + 400) / 10
    = 50 s of wall time: the finals keep 5 of them (250 s) where a fifth of the sweep
    (72 s) would hold fewer than 2, and confirm in the last 50 s, not the last 24."""
    timed = [dataclasses.replace(r, startup_s=100.0, total_s=160.0, time_scale=10.0)
             for r in (_row(0, 30.0, Role.BASELINE), _row(1, 17.0), _row(2, 17.5))]
    plain = Finals(trials=None, hours=0.1, share=0.2, questions=60)
    assert not plain.due(trials=None, launched=0, elapsed_s=280.0, rows=timed)
    assert plain.due(trials=None, launched=0, elapsed_s=290.0, rows=timed)
    sized = Finals(trials=None, hours=0.1, share=0.2, questions=60, final_questions=400)
    assert not sized.due(trials=None, launched=0, elapsed_s=200.0, rows=[])  # none measured
    assert not sized.due(trials=None, launched=0, elapsed_s=100.0, rows=timed)
    assert sized.due(trials=None, launched=0, elapsed_s=115.0, rows=timed)
    assert sized.choose(timed, elapsed_s=305.0)[1] is False
    assert sized.choose(timed, elapsed_s=311.0)[1] is True


def test_a_final_sample_verdict_holds_for_the_same_numerics() -> None:
    from tuner.study._pooled import final_verified

    def cfg(lm: str, steps: int) -> dict:
        return {"lm_head": lm, "speculative": "NEXTN", "spec_steps": steps}

    def final(number: int, of: int, lm: str, gate: list[str], state: str = "COMPLETE"
              ) -> TrialSummary:
        return TrialSummary(number=number, state=state, role=Role.REMEASURE,
                            values=[17.0, 0.9], feasible=not gate, tpot_ms=17.0,
                            remeasure_of=of, final_sample=True, numerics={"lm_head": lm},
                            gate=gate, config=cfg(lm, 2))

    rows = [_row(0, 26.0, Role.BASELINE), _row(1, 17.0), _row(2, 17.2), _row(3, 18.0)]
    rows = [dataclasses.replace(r, config=c) for r, c in zip(rows, [
        {"lm_head": "fp32"}, cfg("fp8", 2), cfg("fp8", 3), cfg("bf16", 2)], strict=True)]
    assert final_verified(rows) is None                      # no final sample: no say
    failed_base = [*rows, final(4, 0, "fp32", [], state="FAIL")]
    assert final_verified(failed_base) is None               # nothing measured on it
    judged = [*rows, final(4, 0, "fp32", []), final(5, 1, "fp8", ["accuracy_drop"]),
              final(6, 3, "bf16", [])]
    assert final_verified(judged) == {0, 3}
    est = feasible_estimates(None, judged)
    assert 1 not in est and 2 not in est                     # #2 shares #1's numerics
    assert 3 in est


def test_a_finalist_with_fewer_lossy_settings_leads_only_within_noise_and_2pct() -> None:
    from tests.conftest import SPARK
    from tuner.space import load_space
    from tuner.sweep._finals import numerics_changes

    space = load_space(SPARK)
    best = space.complete({"moe_backend": "humming", "lm_head": "fp8",
                           "speculative": "DSPARK", "dspark_block_size": 4})
    w4a8 = {**best, "humming_activation": "fp8"}
    fp32_head = {**best, "lm_head": "fp32"}
    count = numerics_changes(space)
    # Humming's kernel keeps the precision; the FP8 head and W4A8 activation lose some
    assert [count(c) for c in (space.complete({}), best, w4a8, fp32_head)] == [0, 1, 2, 0]

    def lead(mine: list[float], other: list[float], other_config: dict) -> str:
        rows = [_row(0, 30.0, Role.BASELINE), dataclasses.replace(_row(1, mine[0]), config=best),
                dataclasses.replace(_row(2, other[0]), config=other_config)]
        rows += [_row(10 + i, v, Role.REMEASURE, of=1) for i, v in enumerate(mine[1:])]
        rows += [_row(20 + i, v, Role.REMEASURE, of=2) for i, v in enumerate(other[1:])]
        f = Finals.for_space(space, trials=30, hours=None, share=0.1)   # race 2, confirm 1
        f.finalists = [1, 2]
        number, confirm, _ = f.choose(rows)  # type: ignore[misc]
        assert confirm
        return {1: "best", 2: "other"}[number]

    # W4A8 reads 1% faster, well under one standard error: the fewer changes lead
    assert lead([15.9, 16.4, 15.7], [15.5, 16.2, 15.8], w4a8) == "best"
    # ... but not when it is clearly faster
    assert lead([15.9, 16.4, 15.7], [12.0, 12.1, 11.9], w4a8) == "other"
    # the FP32 head (one change fewer) trails the FP8 head by 5% on two or three launches:
    # the intervals overlap, yet the lead is more than a standard error (seed 112)
    assert lead([15.2, 16.07, 14.93], [15.77, 16.7], fp32_head) == "best"
    # noisy launches: 3.4% behind is within one standard error, but more than the finals
    # give up for fewer changes (NUMERICS_MARGIN; seed 108 picked the FP32 head, truly 5%
    # slower, for a 0.05-point FP8 head)
    assert lead([13.9, 15.2, 14.1, 15.0], [14.3, 15.8], fp32_head) == "best"
    # ... 1.4% behind is within the margin: the FP32 head leads
    assert lead([13.9, 15.2, 14.1, 15.0], [14.2, 15.3], fp32_head) == "other"


def test_the_fastest_so_far_is_launched_again_before_the_search_moves_from_it() -> None:
    """One lucky reading took the search's center and the finals (search benchmark seed
    108): the fastest feasible configuration with one launch is launched again first."""
    f = Finals(trials=30, hours=None, share=0.2)
    rows = [_row(0, 30.0, Role.BASELINE), _row(1, 17.0), _row(2, 16.2)]
    assert f.contender(rows) == 2
    rows.append(dataclasses.replace(_row(3, 17.4, Role.REMEASURE, of=2), contender=True))
    # #2 now pools 16.2 and 17.4 (16.8): the fastest by pooled mean, twice launched
    assert f.contender(rows) is None
    rows.append(_row(4, 16.5))                     # a new, once-read leader
    assert f.contender(rows) == 4
    # the search's own re-measurements are pooled, never counted as the finals' race
    from tuner.sweep._finals import race_launches

    assert race_launches(rows) == {} and estimates(None, rows)[2].launches == 2


def test_finals_started_early_race_the_rest_of_the_budget_and_drop_the_clearly_slower(
        ) -> None:
    """The search has nothing left worth a launch at 20 of 30: the finals race 10 - 2
    launches (the confirmations stay a third of the 6 the budget reserved), and a finalist
    clearly behind the fastest (beyond two standard errors) gets none of them."""
    rows = [_row(0, 30.0, Role.BASELINE), _row(1, 17.0), _row(2, 17.3), _row(3, 17.9)]
    # two launches each so far: a spread of about 1% of a launch
    for n, again in ((1, 17.2), (2, 17.1), (3, 18.1)):
        rows.append(dataclasses.replace(_row(10 + n, again, Role.REMEASURE, of=n),
                                        contender=True))
    f = Finals(trials=30, hours=None, share=0.2)
    assert not f.due(trials=30, launched=20, elapsed_s=0)
    f.start_now(10)
    assert f.due(trials=30, launched=20, elapsed_s=0)
    readings = {1: iter([17.4, 16.8, 17.3, 16.9]), 2: iter([17.0, 17.6, 16.9, 17.5])}
    picked = []
    for i in range(8):
        number, confirm, _ = f.choose(rows)  # type: ignore[misc]
        assert not confirm
        picked.append(number)
        rows.append(_row(30 + i, next(readings[number]), Role.REMEASURE, of=number))
    assert sorted(picked) == [1] * 4 + [2] * 4       # #3 (18.0 against 17.1) is out
    number, confirm, _ = f.choose(rows)  # type: ignore[misc]
    assert confirm and number == 1                  # the race is over: confirm its leader


def test_the_race_ends_once_one_finalist_is_clearly_ahead() -> None:
    rows = [_row(0, 30.0, Role.BASELINE), _row(1, 17.0), _row(2, 17.3)]
    rows += [_row(5, 17.1, Role.REMEASURE, of=1), _row(6, 17.0, Role.REMEASURE, of=2)]
    f = Finals(trials=30, hours=None, share=0.2)
    f.start_now(10)
    race = [f.choose(rows)[:2]]              # 0.10 ms apart, two standard errors 0.32
    rows += [_row(7, 17.05, Role.REMEASURE, of=1), _row(8, 17.4, Role.REMEASURE, of=2)]
    race.append(f.choose(rows)[:2])          # 0.18 apart, 0.25
    rows += [_row(9, 17.0, Role.REMEASURE, of=1), _row(10, 17.35, Role.REMEASURE, of=2)]
    race.append(f.choose(rows)[:2])          # 0.22 apart, 0.19: #2 is out, #1 confirmed
    assert race == [(1, False), (1, False), (1, True)]
