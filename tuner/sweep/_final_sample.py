"""The final accuracy sample (``tuner sweep --final-questions N``).

The search screens accuracy on a small GSM8K subset, where a drop of a few points goes
unseen (McNemar's test on 30-60 paired questions rarely fires on 3 points). With a final
sample, every finals launch (race and confirmation) runs ``N`` questions, and so does one
more launch of the baseline, before them, so that each finalist is gated against the
baseline on the same ``N`` questions. A finals launch that the gate refuses takes its
configuration out of the feasible set (:func:`tuner.study.feasible_estimates`): the finals
move on to the next finalist. Once a sweep has a final sample, only configurations that
passed it (and the baseline) can be the pick (:func:`tuner.study.feasible_best`): when
the budget ends before any did, the pick is the baseline, and the report says so.

Every workload has one by default. On GSM8K the finals launches answer ``N`` of its own
questions; beside any other workload (code, chat, JSONL, a mix) they run the workload as
usual (its TPOT is the objective) and then answer ``N`` GSM8K questions
(``TrialOptions.accuracy_sample``, in no speed figure), gated with the workload's own
scored requests, each kind of question also tested apart: numerics changes are gated
whatever the traffic. Beside a workload the sample is answered by the first finals launch
of each configuration only (the policy's ``sample_beside``): its verdict holds for that
configuration, whose later launches measure speed alone. ``--final-questions 0`` opts
out, and every output says "accuracy not checked" beside a pick nothing scored.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from tuner.study import Proposal
from tuner.study import Role
from tuner.study import TrialSummary
from tuner.study.pooled import final_baseline_runs
from tuner.trial import EarlyStop
from tuner.trial import TrialOptions


if TYPE_CHECKING:
    from tuner.space import Gate


#: finals launches a timed sweep keeps time for at least: the baseline's on the final
#: sample (a sweep with one), one race launch of each of 3 finalists, one confirmation
MIN_FINAL_LAUNCHES = 5

PENDING = "pending"
FAILED = "failed"


#: GSM8K's test split: the largest final sample
GSM8K_TEST = 1319


#: the GSM8K sample answered beside a workload that is not GSM8K, when not given: at the
#: default gate (1 pp, p < 0.05) a 3-point drop is refused with 80% probability at 5%
#: discordance (4.1 pp at 10%); it runs once per finalist, not on every finals launch
BESIDE_SIZE = 400


def beside_size(gate: Gate, workload: str) -> tuple[int, str]:
    """The GSM8K final sample a sweep of a workload that is not GSM8K (code, chat, JSONL,
    a mix) runs beside it when ``--final-questions`` is not given (:data:`BESIDE_SIZE`),
    and the sentence that states it. Numerics changes (kernels, activations, LM head) are
    gated on it; the workload's own scored requests (HumanEval's tests) are gated too."""
    from tuner.trial import detectable_drop

    size = BESIDE_SIZE
    power = detectable_drop(size, 0.10, gate, 0.8)
    low = detectable_drop(size, 0.05, gate, 0.8)
    return size, (f"final accuracy sample: the baseline and each finalist also answer "
                  f"{size} GSM8K questions after the {workload} workload, once each (in no "
                  f"speed figure; a true drop of {power or 0:.1f} pp is refused with 80% "
                  f"probability when 10% of answers differ, {low or 0:.1f} pp at 5%), so a "
                  "numerics change that costs accuracy is not exported; --final-questions "
                  "N to change it, 0 for none (accuracy not checked)")


def default_size(gate: Gate, questions: int) -> tuple[int | None, str]:
    """The final sample a scored sweep runs when ``--final-questions`` is not given, and the
    sentence that states it. Sized from the gate: the smallest of 200, 400, 800 and 1,319
    questions at which a drop of 3 x ``max_accuracy_drop_pp`` is refused with 80%
    probability (answers differing on 10% of questions); capped at 5 x the screening
    ``questions`` (at least 200) so a finals launch measures for at most about five search
    launches (a timed sweep keeps the finals' time for them: :mod:`tuner.sweep._finals`).
    None when that is not more than the screening sample."""
    from tuner.trial import detectable_drop

    target = next((n for n in (200, 400, 800) if (detectable_drop(
        n, 0.10, gate, 0.8) or 100.0) <= 3 * gate.max_accuracy_drop_pp), GSM8K_TEST)
    size = min(target, max(200, 5 * questions), GSM8K_TEST)
    if size <= questions:
        return None, (f"no final accuracy sample: the screening's {questions} questions are "
                      "as many as the time allows")
    power = detectable_drop(size, 0.10, gate, 0.8)
    return size, (f"final accuracy sample: the finalists and the baseline on {size} GSM8K "
                  f"questions each (a true drop of {power or 0:.1f} pp is refused with 80% "
                  f"probability there; the screening's {questions} see "
                  f"{detectable_drop(questions, 0.10, gate, 0.8) or 100:.1f} pp); only what "
                  "passes can be exported. --final-questions N to change it, 0 for none")


def final_baseline(rows: list[TrialSummary], baseline: int) -> TrialSummary | str | None:
    """The baseline's launch on the final sample: its summary once measured, ``pending``
    while queued or running, ``failed`` when it failed, None when there is none."""
    runs = final_baseline_runs(rows, baseline)
    done = [s for s in runs if s.state == "COMPLETE"]
    if done:
        return done[-1]
    if any(s.state in ("WAITING", "RUNNING") for s in runs):
        return PENDING
    return FAILED if runs else None


def options_for(options: TrialOptions, prop: Proposal, baseline: TrialSummary | None,
                trials: Callable[[], list[TrialSummary]], final_questions: int | None,
                early_stop: EarlyStop | None, search_questions: int | None = None
                ) -> TrialOptions:
    """The options of ``prop``'s launch: judged against the baseline's answers to the same
    questions; a search trial with ``search_questions`` measures only the first that many
    of them (``TrialOptions.measure_first``); on the final sample, ``final_questions`` of
    them and the baseline's final-sample launch's answers (none for that launch itself)."""
    base_pq = baseline.per_question if baseline is not None else None
    workload, sample = options.workload, None
    measure_first = search_questions if prop.role == Role.TRIAL else None
    if prop.final_sample and baseline is not None and final_questions:
        if workload.kind == "gsm8k":
            workload = workload.model_copy(update={"questions": final_questions})
        else:                   # GSM8K answered after the workload (TrialOptions)
            sample = final_questions
        first = final_baseline(trials(), baseline.number)
        base_pq = (None if prop.remeasure_of == baseline.number
                   else first.per_question if isinstance(first, TrialSummary) else None)
    return TrialOptions(**{**options.__dict__, "workload": workload,
                           "measure_first": measure_first, "baseline_per_question": base_pq,
                           "early_stop": early_stop, "accuracy_sample": sample})


def final_launch_s(rows: list[TrialSummary], questions: int, final_questions: int | None
                   ) -> float | None:
    """Expected wall seconds of one finals launch, start-up included (a cold start on a
    Spark is minutes of the night): the median measured launch, its part after start-up
    scaled from its own questions (``questions`` when it recorded none) to
    ``final_questions`` when the finals run a final sample; None before a launch measured."""
    import statistics

    spans = [_span(s, questions, final_questions) for s in rows
             if s.measured and s.state == "COMPLETE" and s.total_s and s.startup_s is not None
             and s.total_s >= s.startup_s]
    return statistics.median(spans) if spans else None


def _span(s: TrialSummary, questions: int, final_questions: int | None) -> float:
    assert s.total_s is not None and s.startup_s is not None
    work = s.total_s - s.startup_s
    if final_questions and questions > 0:
        work *= final_questions / (len(s.per_question or ()) or questions)
    return (s.startup_s + work) / (s.time_scale or 1.0)
