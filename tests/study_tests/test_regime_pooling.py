"""A load regime's figures are declared once, on :class:`tuner.trial.RegimeResult`: each
field says how it pools over a configuration's launches (:class:`tuner.trial.Pool`), the
study stores each launch's record as the tool always has, reads it back typed, and the
answer per regime pools every declared figure (tuner/study/_regimes.py ``pooled``)."""

from __future__ import annotations

import types
from typing import Annotated
from typing import Literal
from typing import Union
from typing import get_args
from typing import get_origin

import optuna
import pytest
from pydantic.fields import FieldInfo

from tuner.space import Workload
from tuner.study import Role
from tuner.study import TrialSummary
from tuner.study import answer_of
from tuner.study import regime_answers
from tuner.study import summaries
from tuner.study._record import regime_attrs
from tuner.study._record import regime_records
from tuner.study._regimes import RULES
from tuner.study.regimes import RegimeRecord
from tuner.study.regimes import pooled
from tuner.trial import Pool
from tuner.trial import RegimeResult
from tuner.trial import TrialResult
from tuner.trial import pools


#: one launch's record of regime ``sixteen`` as the study has stored it since load regimes
#: came (issue 25): RegimeResult's fields but the name, then the regime's SLA
TODAYS = {"concurrency": 16, "status": "ok", "message": None, "requests": 64,
          "duration_s": 200.0, "tpot_mean_ms": 40.0, "tpot_p95_ms": 55.0, "ttft_mean_s": 1.5,
          "ttft_p95_s": 3.0, "throughput_tok_s": 900.0, "goodput_rps": 0.3, "sla_met": 0.95,
          "within_sla": True, "peak_running": 9, "peak_queued": 7,
          "sla": {"p95_tpot_ms": 60.0}}
#: the first slice's (no server load figures yet)
FIRST_SLICE = {k: v for k, v in TODAYS.items() if not k.startswith("peak_")}


def test_the_study_stores_each_launchs_record_in_todays_shape() -> None:
    sixteen = RegimeResult(name="sixteen", **{k: v for k, v in TODAYS.items() if k != "sla"})
    workload = Workload.model_validate({"regimes": [
        {"name": "sixteen", "concurrency": 16, "requests": 64, "sla": {"p95_tpot_ms": 60.0}}]})
    result = TrialResult.model_construct(workload=workload.model_dump(), regimes=[sixteen])
    (name, stored), = regime_attrs(result).items()
    today = {k: v for k, v in stored.items() if k in TODAYS}   # a figure added since: more
    assert name == "sixteen" and today == TODAYS
    assert list(today) == list(TODAYS)                     # the same keys, in the same order


@pytest.mark.parametrize("stored", [TODAYS, FIRST_SLICE], ids=["today", "first slice"])
def test_a_stored_record_reads_back_typed(stored: dict[str, object]) -> None:
    study = optuna.create_study(directions=["minimize", "maximize"])
    trial = study.ask()
    trial.set_user_attr("tuner:role", "baseline")
    trial.set_user_attr("regimes", {"sixteen": stored})
    study.tell(trial, [20.0, 0.9])
    (s,) = summaries(study)
    g = s.regimes["sixteen"]
    assert isinstance(g, RegimeRecord)
    assert (g.name, g.concurrency, g.sla) == ("sixteen", 16, {"p95_tpot_ms": 60.0})
    assert (g.goodput_rps, g.tpot_p95_ms, g.within_sla) == (0.3, 55.0, True)
    assert (g.peak_running, g.peak_queued) == ((9, 7) if "peak_running" in stored else
                                               (None, None))
    again = {k: v for k, v in g.stored().items() if k in TODAYS}
    assert again == {**TODAYS, **{k: None for k in TODAYS if k not in stored}}


def _record(**figures: object) -> RegimeRecord:
    return RegimeRecord.model_validate({"name": "sixteen", "concurrency": 16, **figures})


@pytest.mark.parametrize(("field", "values", "pooled_value"), [
    ("goodput_rps", [0.2, None, 0.4], pytest.approx(0.3)),        # MEAN: of those measured
    ("goodput_rps", [None, None], None),
    ("peak_running", [9, 11, None], 11),                          # MOST
    ("peak_queued", [None, None], None),
    ("requests", [64, 32], 96),                                    # SUM
    ("duration_s", [None, 2.5, 1.5], pytest.approx(4.0)),
    ("duration_s", [None, None], None),
    ("within_sla", [True, True], True),                            # ALL
    ("within_sla", [True, None], False),                           # one launch did not say
    ("within_sla", [True, False], False),
    ("within_sla", [None, None], None),                            # no SLA
    ("sla", [{"p95_tpot_ms": 60.0}, {"p95_tpot_ms": 70.0}], {"p95_tpot_ms": 60.0}),  # SAME
])
def test_each_figure_pools_as_its_field_declares(field: str, values: list[object],
                                                 pooled_value: object) -> None:
    launches = [_record(**{field: v}) for v in values]
    assert getattr(pooled(launches), field) == pooled_value


def test_a_failed_launch_fails_the_pool_with_the_first_failures_message() -> None:
    ok, died, oom = (_record(goodput_rps=0.5), _record(status="failed", message="died"),
                     _record(status="failed", message="oom"))
    assert (pooled([ok, died, oom]).status, pooled([ok, died, oom]).message) == (
        "failed", "died")
    assert (pooled([ok, ok]).status, pooled([ok, ok]).message) == ("ok", None)
    unsaid = _record(status="failed")
    assert pooled([unsaid, oom]).message is None        # the first failure said nothing
    assert pooled([ok]) == ok                           # one launch pools to itself


def test_every_way_to_pool_has_a_rule_and_every_field_a_way() -> None:
    assert set(RULES) == set(Pool)

    class Undeclared(RegimeResult):
        extra_ms: float | None = None

    class Twice(RegimeResult):
        extra_ms: Annotated[float | None, Pool.MEAN, Pool.MOST] = None

    for kind in (Undeclared, Twice):
        with pytest.raises(TypeError, match=rf"{kind.__name__}.extra_ms must declare one way"):
            pools(kind)


#: what two launches (a, then b, which failed) pool to, per way: an independent statement
#: of the rules, so a new way must be taught here too
EXPECTED = {Pool.SAME: lambda a, b: a, Pool.MEAN: lambda a, b: (a + b) / 2,
            Pool.MOST: lambda a, b: max(a, b), Pool.SUM: lambda a, b: a + b,
            Pool.ALL: lambda a, b: a is True and b is True,
            Pool.ANY_FAILED: lambda a, b: "failed", Pool.FIRST_FAILURE: lambda a, b: b}


def _sample(name: str, info: FieldInfo, i: int) -> object:
    """Launch ``i``'s (0 or 1) value of a field, from its type, never its default; launch
    1 is the failed one (the last value of a ``Literal``)."""
    kind = info.annotation
    if get_origin(kind) in (Union, types.UnionType):
        kind = next(a for a in get_args(kind) if a is not type(None))
    if name == "name":
        return "sixteen"                           # the regime's name: the stored key
    if get_origin(kind) is Literal:
        return get_args(kind)[-1 if i else 0]
    samples = {bool: True, int: 3 + 4 * i, float: 1.5 + 2.0 * i, str: f"{name} {i}",
               dict: {"p95_tpot_ms": 50.0 + i}}
    base = get_origin(kind) or kind
    assert base in samples, f"RegimeRecord.{name}: no sample for {kind}; teach _sample one"
    return samples[base]


def test_every_declared_figure_reaches_the_pooled_answer() -> None:
    """A figure added to RegimeResult (or the stored record) reaches the answer per regime:
    stored, read back, pooled over the configuration's two launches as it declares."""
    fields = RegimeRecord.model_fields
    a, b = ({n: _sample(n, f, i) for n, f in fields.items()} for i in (0, 1))
    assert b["status"] == "failed" and a["status"] != "failed"
    stored = [RegimeRecord.model_validate(x).stored() for x in (a, b)]

    def launch(n: int, record: dict[str, object], role: Role) -> TrialSummary:
        return TrialSummary(n, "COMPLETE", role, values=[20.0, 0.9], feasible=True,
                            config={"k": 0}, tpot_ms=20.0, tpot_ci95=[19.6, 20.4],
                            accuracy=0.9, remeasure_of=0 if n else None,
                            regimes=regime_records({"sixteen": record}))

    rows = [launch(0, stored[0], Role.BASELINE), launch(1, stored[1], Role.REMEASURE)]
    (g,) = regime_answers(answer_of(rows, with_accuracy=True), rows)
    (row,) = g.rows
    assert row.launches == 2
    assert set(pools(RegimeRecord)) == set(fields) and "sla" in fields
    for name, how in pools(RegimeRecord).items():
        got = getattr(row.figures, name)
        assert got != fields[name].default, f"{name} did not reach the pooled answer"
        assert got == pytest.approx(EXPECTED[how](a[name], b[name])), name


def test_a_figure_declared_with_annotated_is_pooled_without_more_code() -> None:
    """The declaration is the whole of it: a record with one more figure pools it."""
    class WithEnergy(RegimeRecord):
        joules: Annotated[float | None, Pool.MEAN] = None

    one = WithEnergy(name="sixteen", concurrency=16, joules=3.0)
    two = WithEnergy(name="sixteen", concurrency=16, joules=5.0)
    assert pooled([one, two]).joules == pytest.approx(4.0)
