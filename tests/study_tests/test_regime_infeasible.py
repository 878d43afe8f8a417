"""A regime nothing measured can meet (issue 33, item 3): the answer names the nearest
configuration, by how much it misses each bound, and what would help; the sweep's progress
says it once, within its first launches."""

from __future__ import annotations

from typing import Any

from tests.study_tests.test_regimes import _g
from tests.study_tests.test_regimes import _t
from tuner.study import Role
from tuner.study import answer_of
from tuner.study import regime_answers
from tuner.sweep._progress import Progress


def _missing(p95: float, goodput: float = 0.2) -> dict[str, Any]:
    return {**_g(goodput, within=False), "tpot_p95_ms": p95}


def test_nothing_within_the_sla_names_the_nearest_and_its_miss() -> None:
    rows = [_t(0, _missing(190.0), role=Role.BASELINE), _t(1, _missing(130.0)),
            _t(2, _missing(120.0), feasible=False),      # gated: never the nearest
            _t(3, _g(None, failed=True))]
    (g,) = regime_answers(answer_of(rows, with_accuracy=True), rows)
    near = g.nearest_miss()
    assert near is not None and near[0].number == 1
    assert near[1] == [("p95_tpot_ms", 130.0, 100.0)]
    line = g.infeasibility()
    assert line is not None
    assert "regime 'sixteen' (16 users): none of the 4 configurations measured meets " \
        "p95 TPOT <= 100 ms" in line
    assert "the nearest, #1 (k=1), misses: p95 TPOT 130 ms against 100 (30% over)" in line
    assert "fewer users or a looser SLA (e.g. --regime sixteen:16:p95_tpot_ms=136)" in line


def test_one_configuration_within_the_sla_says_nothing() -> None:
    rows = [_t(0, _missing(190.0), role=Role.BASELINE), _t(1, _g(0.3))]
    (g,) = regime_answers(answer_of(rows, with_accuracy=True), rows)
    assert g.nearest_miss() is None and g.infeasibility() is None


class _Sweep:
    def __init__(self, rows: list[Any]) -> None:
        self.rows = rows

    def trials(self) -> list[Any]:
        return self.rows

    def answer(self, rows: list[Any] | None = None) -> Any:
        return answer_of(rows if rows is not None else self.rows, with_accuracy=True)


def test_the_progress_says_it_once_after_three_configurations() -> None:
    rows = [_t(0, _missing(190.0), role=Role.BASELINE), _t(1, _missing(130.0))]
    p, sweep = Progress(), _Sweep(rows)
    p.refresh(sweep, first=True)                 # type: ignore[arg-type]
    assert p.notes == []                         # two configurations: too early to say
    sweep.rows = [*rows, _t(2, _missing(150.0))]
    p.refresh(sweep)                             # type: ignore[arg-type]
    assert len(p.notes) == 1 and "the nearest, #1" in p.notes[0]
    sweep.rows = [*sweep.rows, _t(3, _missing(125.0))]
    p.refresh(sweep)                             # type: ignore[arg-type]
    assert len(p.notes) == 1                     # once per regime


def test_the_progress_says_nothing_once_one_meets_it() -> None:
    rows = [_t(0, _missing(190.0), role=Role.BASELINE), _t(1, _missing(130.0)),
            _t(2, _g(0.4))]
    p = Progress()
    p.refresh(_Sweep(rows))                      # type: ignore[arg-type]
    assert p.notes == []


def test_a_nearest_that_ran_alone_is_not_helped_by_fewer_users() -> None:
    rows = [_t(0, {**_missing(130.0), "peak_running": 1}, role=Role.BASELINE),
            _t(1, {**_missing(150.0), "peak_running": 16})]
    (g,) = regime_answers(answer_of(rows, with_accuracy=True), rows)
    line = g.infeasibility()
    assert line is not None and "; a looser SLA (e.g. --regime sixteen:16:p95_tpot_ms=136) " \
        "would help; fewer users would not: it ran one request at a time" in line
