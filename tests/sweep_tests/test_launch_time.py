"""Start-up time is part of the night: the finals' time reservation counts it, and the report
states the launches' overhead."""

from __future__ import annotations

import dataclasses

from tuner.report._overhead import launch_overhead
from tuner.study import Role
from tuner.study import TrialSummary
from tuner.sweep._finals import Finals


def _run(n: int, state: str = "COMPLETE", role: Role = Role.TRIAL, *, tpot: float = 17.0,
         startup: float | None = 480.0, total: float | None = 600.0, **kw: object
         ) -> TrialSummary:
    done = state == "COMPLETE"
    return TrialSummary(number=n, state=state, role=role, values=[tpot, 0.9] if done else None,
                        feasible=done, tpot_ms=tpot if done else None,
                        tpot_ci95=[tpot - 0.3, tpot + 0.3] if done else None,
                        config_hash=f"h{n}", startup_s=startup, total_s=total,
                        **kw)  # type: ignore[arg-type]


def test_a_timed_sweep_keeps_time_for_its_finals_launches_start_up_included() -> None:
    """An hour on a Spark whose launches take 8 minutes to start and 2 to measure: the
    finals keep four 10-minute launches (three race launches, one confirmation), not a
    fifth of the hour (12 minutes, barely one launch), and confirm in the last one."""
    rows = [_run(0, role=Role.BASELINE, tpot=30.0), _run(1), _run(2, tpot=17.2)]
    f = Finals(trials=None, hours=1.0, share=0.2, questions=60)
    assert not f.due(trials=None, launched=0, elapsed_s=1190.0, rows=rows)
    assert f.due(trials=None, launched=0, elapsed_s=1210.0, rows=rows)
    assert f.choose(rows, elapsed_s=2990.0)[1] is False            # still racing
    assert f.choose(rows, elapsed_s=3010.0)[1] is True             # the last launch's time
    quick = [dataclasses.replace(r, startup_s=0.0, total_s=120.0) for r in rows]
    g = Finals(trials=None, hours=1.0, share=0.2, questions=60)    # were start-up free, the
    assert not g.due(trials=None, launched=0, elapsed_s=2870.0, rows=quick)   # share would
    assert g.due(trials=None, launched=0, elapsed_s=2890.0, rows=quick)       # decide


def test_the_launch_overhead_counts_every_launch_that_started_a_server() -> None:
    rows = [
        _run(0, role=Role.BASELINE, startup=480.0, total=900.0),
        _run(1, "FAIL", startup=300.0, total=310.0, reason="oom"),     # a failed start-up
        _run(2, "FAIL", startup=None, total=0.1, reason="would_exhaust_memory"),  # refused
        _run(3, role=Role.DUPLICATE, duplicate_of=0),                  # a copy, no launch
        _run(4, "FAIL", startup=600.0, total=601.0, retried=True),     # launched once more
        _run(5, role=Role.REMEASURE, remeasure_of=0, startup=180.0, total=889.0),
    ]
    o = launch_overhead(rows, simulated=False)
    assert o is not None and o.launches == 4
    assert o.startup_s == 1560.0 and o.total_s == 2700.0
    assert o.sentence() == ("launch overhead: 4 launches, 26.0 min of 45.0 min starting "
                            "servers (58%); start-up median 6.5 min, longest 10.0 min")
    assert o.as_dict()["clock"] == "wall-clock time"
    night = launch_overhead([_run(n, startup=265.0, total=840.0) for n in range(42)],
                            simulated=True)
    assert night is not None and night.sentence().startswith(
        "launch overhead: 42 launches, 3.1 h of 9.8 h starting servers (32%)")
    assert night.sentence().endswith("(simulated machine time)")
    assert launch_overhead([rows[2]], simulated=False) is None
