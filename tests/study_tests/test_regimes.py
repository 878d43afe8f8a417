"""The answer per load regime (tuner.study.regime_answers): only admissible configurations
whose every launch measured the regime within its SLA are eligible; the pick is the one
with the most goodput; the figures pool every launch."""

from __future__ import annotations

from typing import Any

import pytest

from tuner.errors import UserError
from tuner.study import Role
from tuner.study import TrialSummary
from tuner.study import answer_of
from tuner.study import regime_answers
from tuner.study.regimes import RegimeRecord
from tuner.study.regimes import regime_named


SLA = {"p95_tpot_ms": 100.0}


def _g(goodput: float | None, *, within: bool | None = True, failed: bool = False
       ) -> dict[str, Any]:
    """One launch's figures in regime ``sixteen`` as the study stores them."""
    if failed:
        return {"status": "failed", "message": "server died", "concurrency": 16, "sla": SLA}
    return {"status": "ok", "concurrency": 16, "sla": SLA, "goodput_rps": goodput,
            "throughput_tok_s": (goodput or 0) * 500, "tpot_p95_ms": 80.0,
            "ttft_p95_s": 2.0, "sla_met": 1.0 if within else 0.5, "within_sla": within}


def _t(n: int, regime: dict[str, Any], *, role: Role = Role.TRIAL, feasible: bool = True,
       remeasure_of: int | None = None, tpot: float = 20.0) -> TrialSummary:
    return TrialSummary(n, "COMPLETE", role, values=[tpot, 0.9], feasible=feasible,
                        config={"k": n if remeasure_of is None else remeasure_of},
                        tpot_ms=tpot, tpot_ci95=[tpot * 0.98, tpot * 1.02], accuracy=0.9,
                        gate=[] if feasible else ["collapse"], remeasure_of=remeasure_of,
                        regimes={"sixteen": RegimeRecord.read("sixteen", regime)})


def test_the_pick_is_the_eligible_configuration_with_the_most_goodput() -> None:
    rows = [_t(0, _g(0.10), role=Role.BASELINE, tpot=30.0),
            _t(1, _g(0.90, within=False)),          # missed the SLA
            _t(2, _g(None, failed=True)),            # the regime failed on this launch
            _t(3, _g(0.95), feasible=False),         # gated at batch 1: accuracy matters
            _t(4, _g(0.40), tpot=25.0),
            _t(5, _g(0.20), tpot=10.0)]              # the workload's own pick
    answer = answer_of(rows, with_accuracy=True)
    (g,) = regime_answers(answer, rows)
    assert (g.name, g.concurrency, g.sla) == ("sixteen", 16, SLA)
    assert {r.number: r.eligible for r in g.rows} == {0: True, 1: False, 2: False, 3: False,
                                                      4: True, 5: True}
    assert g.pick is not None and g.pick.number == 4
    assert answer.pick is not None and answer.pick.number == 5   # batch 1 answers otherwise
    assert [r.number for r in g.front] == [4]       # same accuracy: goodput decides
    assert g.describe_sla() == "p95 TPOT <= 100 ms"


def test_every_launch_counts_one_missed_sla_makes_a_configuration_ineligible() -> None:
    rows = [_t(0, _g(0.10), role=Role.BASELINE),
            _t(1, _g(0.50)),
            _t(2, _g(0.30, within=False), role=Role.REMEASURE, remeasure_of=1),
            _t(3, _g(0.20)),
            _t(4, _g(0.40), role=Role.REMEASURE, remeasure_of=3)]
    (g,) = regime_answers(answer_of(rows, with_accuracy=True), rows)
    by = {r.number: r for r in g.rows}
    assert not by[1].eligible and by[1].launches == 2
    assert by[3].figures.goodput_rps == pytest.approx(0.30) and by[3].launches == 2
    assert g.pick is not None and g.pick.number == 3


def test_a_regime_nobody_measured_is_named_with_those_there_are() -> None:
    rows = [_t(0, _g(0.10), role=Role.BASELINE)]
    answers = regime_answers(answer_of(rows, with_accuracy=True), rows)
    with pytest.raises(UserError, match=r"no such regime .*'sixteen'"):
        regime_named(answers, "eight")
    assert regime_answers(answer_of([], with_accuracy=True), []) == []


def test_a_pick_within_its_sla_by_a_hair_on_one_launch_is_said_to_be() -> None:
    one = {**_g(0.5), "tpot_p95_ms": 97.0}
    rows = [_t(0, _g(0.1), role=Role.BASELINE), _t(1, one)]
    (g,) = regime_answers(answer_of(rows, with_accuracy=True), rows)
    assert g.pick is not None and g.pick.number == 1
    assert g.pick.near_bound(g.sla) == ["TPOT p95 97 ms against 100 ms"]
    again = [*rows, _t(2, one, role=Role.REMEASURE, remeasure_of=1)]
    (g,) = regime_answers(answer_of(again, with_accuracy=True), again)
    assert g.pick is not None and g.pick.launches == 2 and g.pick.near_bound(g.sla) == []
    assert g.rows[0].near_bound(g.sla) == []          # 80 ms: far from the bound


def test_a_configurations_load_is_the_most_any_launch_saw() -> None:
    a, b = _g(0.5), _g(0.6)
    a.update(peak_running=9, peak_queued=7)
    b.update(peak_running=11, peak_queued=5)
    rows = [_t(0, _g(0.1), role=Role.BASELINE), _t(1, a),
            _t(2, b, role=Role.REMEASURE, remeasure_of=1)]
    (g,) = regime_answers(answer_of(rows, with_accuracy=True), rows)
    (row,) = [r for r in g.rows if r.number == 1]
    assert (row.launches, row.figures.peak_running, row.figures.peak_queued) == (2, 11, 7)
    assert [r.figures.peak_running for r in g.rows if r.number == 0] == [None]


def test_the_centers_are_the_eligible_by_goodput_then_the_nearest_to_the_sla() -> None:
    def near(p95: float) -> dict[str, Any]:
        return {**_g(0.3, within=False), "tpot_p95_ms": p95}

    rows = [_t(0, near(90.0), role=Role.BASELINE), _t(1, near(66.0)), _t(2, near(66.3)),
            _t(3, near(70.0)), _t(4, _g(None, failed=True)), _t(5, near(50.0), feasible=False)]
    (g,) = regime_answers(answer_of(rows, with_accuracy=True), rows)
    assert g.pick is None
    # nothing eligible: nearest the SLA first; failed and gated ones are no center
    assert [r.number for r in g.centers()] == [1, 2, 3]
    assert g.centers(most=1)[0].number == 1
    rows += [_t(6, _g(0.2)), _t(7, _g(0.4))]
    (g,) = regime_answers(answer_of(rows, with_accuracy=True), rows)
    assert [r.number for r in g.centers(most=4)] == [7, 6, 1, 2]    # the pick leads
