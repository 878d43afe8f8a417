"""The study's answer (tuner.study.Answer) over generated studies: the pick is on the
front; the front is non-dominated under the figures it displays, and nothing outside it
dominates a front row except what beats the pick (a single reading or a finalist within
noise of it, left off); the pick is admissible and re-measured when anything was, refused
configurations are never on the front nor picked, and "tie" is said only between
re-measured configurations."""

from __future__ import annotations

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from tuner.errors import UserError
from tuner.study import Role
from tuner.study import TrialSummary
from tuner.study import answer_of


def _dominates(a: object, b: object) -> bool:
    ta, tb = a.tpot_ms, b.tpot_ms                       # type: ignore[attr-defined]
    aa, ab = a.accuracy or 0.0, b.accuracy or 0.0        # type: ignore[attr-defined]
    return ta <= tb and aa >= ab and (ta < tb or aa > ab)


@st.composite
def studies(draw: st.DrawFn) -> list[TrialSummary]:
    """A baseline, measured configurations (some gated, some failed), the finals'
    launches of a few (some confirmations), and at times a final-sample refusal."""
    n = draw(st.integers(1, 14))
    rows: list[TrialSummary] = []
    tpot = st.floats(10.0, 30.0, allow_nan=False)
    acc = st.sampled_from([0.7, 0.75, 0.8, 0.85, 0.9])
    for i in range(n):
        kind = draw(st.sampled_from(["ok", "ok", "ok", "gated", "failed"])) if i else "ok"
        lm = draw(st.sampled_from(["fp32", "fp8"]))
        t, a = draw(tpot), draw(acc)
        if kind == "failed":
            rows.append(TrialSummary(i, "FAIL", Role.BASELINE if i == 0 else Role.TRIAL,
                                     config={"k": i, "lm_head": lm}, reason="oom"))
            continue
        rows.append(TrialSummary(
            i, "COMPLETE", Role.BASELINE if i == 0 else Role.TRIAL, values=[t, a],
            feasible=kind == "ok", config={"k": i, "lm_head": lm}, tpot_ms=t,
            tpot_ci95=[t * 0.97, t * 1.03], accuracy=a, gate=[] if kind == "ok" else
            ["collapse"]))
    measured = [r.number for r in rows if r.state == "COMPLETE"]
    for _ in range(draw(st.integers(0, 8))):
        of = draw(st.sampled_from(measured))
        t = draw(tpot)
        rows.append(TrialSummary(len(rows), "COMPLETE", Role.REMEASURE, values=[t, 0.8],
                                 feasible=True, config=rows[of].config, tpot_ms=t,
                                 accuracy=0.8, remeasure_of=of,
                                 confirm=draw(st.booleans())))
    if draw(st.booleans()) and measured:
        of = draw(st.sampled_from(measured))
        rows.append(TrialSummary(len(rows), "COMPLETE", Role.REMEASURE, values=[20.0, 0.6],
                                 feasible=False, config=rows[of].config, tpot_ms=20.0,
                                 accuracy=0.6, remeasure_of=of, final_sample=True,
                                 numerics={"lm_head": rows[of].config["lm_head"]},
                                 gate=["accuracy_drop"]))
    return rows


@settings(max_examples=300, deadline=None)
@given(studies(), st.booleans())
def test_the_front_is_undominated_under_what_it_shows(rows: list[TrialSummary],
                                                      with_accuracy: bool) -> None:
    a = answer_of(rows, with_accuracy=with_accuracy)
    front = a.front
    admissible = [c for c in a.configurations if c.admissible]
    assert all(c.admissible for c in front)
    assert bool(front) == bool(admissible)
    p = a.pick

    def beats(c: object, f: object) -> bool:
        return _dominates(c, f) if with_accuracy else c.tpot_ms < f.tpot_ms  # type: ignore

    beat_pick = {c.number for c in admissible if p is not None and c.number != p.number
                 and beats(c, p)}
    if p is not None:
        assert p.on_front and p in front
    for c in admissible:
        assert not (c.number in beat_pick and c.on_front)
    others = [c for c in admissible if c.number not in beat_pick]
    for f in front:
        assert f.on_front
        assert not any(beats(c, f) for c in others if c.number != f.number)
    for c in others:            # nothing shown is beaten by a row left off but the pick
        if not c.on_front:
            assert any(beats(f, c) for f in front)
    for c in a.configurations:
        assert c.kind != "refused" or not (c.on_front or c.is_pick)
        if c.tie:
            assert c.confirmed and a.pick is not None and a.pick.confirmed
    if a.pick is not None:
        assert a.pick.admissible
        if any(c.confirmed for c in admissible) and a.pick.final_passed is not False:
            assert a.pick.confirmed         # never a single lucky draw once re-measured
        assert a.choose("fastest") is a.pick
        if with_accuracy:
            for how in ("most-accurate", "knee"):
                assert a.choose(how).admissible


def test_a_configuration_measured_once_is_not_a_tie_and_says_so() -> None:
    rows = [TrialSummary(0, "COMPLETE", Role.BASELINE, values=[25.0, 0.8], feasible=True,
                         config={"k": 0}, tpot_ms=25.0, tpot_ci95=[24, 26], accuracy=0.8),
            TrialSummary(1, "COMPLETE", Role.TRIAL, values=[18.0, 0.8], feasible=True,
                         config={"k": 1}, tpot_ms=18.0, tpot_ci95=[17, 19], accuracy=0.8),
            TrialSummary(2, "COMPLETE", Role.TRIAL, values=[17.0, 0.8], feasible=True,
                         config={"k": 2}, tpot_ms=17.0, tpot_ci95=[15, 19.5], accuracy=0.8),
            *(TrialSummary(3 + i, "COMPLETE", Role.REMEASURE, values=[v, 0.8],
                           feasible=True, config={"k": 1}, tpot_ms=v, remeasure_of=1,
                           confirm=True) for i, v in enumerate((18.5, 18.7, 18.6)))]
    a = answer_of(rows, with_accuracy=True)
    assert a.pick is not None and a.pick.number == 1 and a.pick.launches == 4
    two = a.get(2)
    assert two is not None and not two.tie
    assert two.status == "feasible, 1 launch, unconfirmed"
    assert [c.number for c in a.front] == [1]       # one reading does not displace the pick
    note = a.pick_note()
    assert note is not None and "#2" in note and "left off the front" in note
    try:
        a.choose("trial:99")
    except UserError as exc:
        assert "no measured configuration" in str(exc)
    else:
        raise AssertionError("trial:99 was accepted")
    assert a.choose("trial:4").number == 1          # a launch names its configuration
    gated = answer_of([*rows, TrialSummary(
        len(rows), "COMPLETE", Role.TRIAL, values=[12.0, 0.7], feasible=False,
        config={"k": 9}, tpot_ms=12.0, accuracy=0.7, gate=["accuracy_drop"])],
        with_accuracy=True)
    try:                                            # not by any --pick, trial:N included
        gated.choose(f"trial:{len(rows)}")
    except UserError as exc:
        assert "gated: accuracy_drop" in str(exc)
    else:
        raise AssertionError("a gated configuration was exported")
