"""Aggregates of a trial, per the definitions in README.md ("Definitions").

* TPOT of a request = (end-to-end - TTFT) / (completion tokens - 1), client-measured.
* The objective is the token-weighted mean: sum of decode time / sum of decode tokens, with a
  95% interval from the ratio estimator's variance (delta method, Student t).
* Accept length = sum of completion tokens / sum of verify rounds over measured requests
  (never the server's cumulative average, which includes warm-up).
* Accuracy with a Wilson 95% interval (GSM8K's exact match, HumanEval's pass@1: the share
  of completions whose tests passed); the per-question correctness vector is kept, over
  every scored class, and each class's own accuracy in its figures.
* Per content class (a prompt's ``content``): the same TPOT and accept length over that
  class's requests. A mix's objective is the classes' TPOTs weighted by their shares, with
  an interval from the classes' standard errors (independent samples).
"""

from __future__ import annotations

import math
import statistics

from pydantic import BaseModel

from tuner.trial._requests import RequestRecord


class Interval(BaseModel):
    low: float
    high: float


class ClassFigures(BaseModel):
    """One content class's figures within a trial."""

    requests: int
    tpot_ms: float | None = None
    tpot_ci95: Interval | None = None
    accept_length: float | None = None
    #: its weight in the objective (a mix's share; None when the objective is plain)
    share: float | None = None
    #: its scored requests (GSM8K's final number, HumanEval's tests): right / scored,
    #: with the Wilson 95% interval; None when the class is not scored
    accuracy: float | None = None
    accuracy_ci95: Interval | None = None
    correct: int | None = None
    scored: int | None = None


class Aggregates(BaseModel):
    requests: int
    tpot_ms: float | None = None
    tpot_ci95: Interval | None = None
    tpot_median_ms: float | None = None
    tpot_p95_ms: float | None = None
    decode_tok_s: float | None = None
    ttft_mean_s: float | None = None
    ttft_median_s: float | None = None
    e2e_mean_s: float | None = None
    e2e_p50_s: float | None = None
    e2e_p95_s: float | None = None
    output_tokens_mean: float | None = None
    accept_length: float | None = None
    accuracy: float | None = None
    accuracy_ci95: Interval | None = None
    correct: int | None = None
    scored: int | None = None
    per_question: dict[str, bool] | None = None
    #: figures per content class (present when the requests name their class)
    per_class: dict[str, ClassFigures] | None = None
    #: "mix": ``tpot_ms`` is the share-weighted TPOT of the classes; None: token-weighted
    tpot_basis: str | None = None
    #: the GSM8K accuracy sample answered beside the workload (its questions are in
    #: ``per_question``, ``correct``, ``scored`` and ``accuracy``; none of its figures is in
    #: TPOT); None: the launch had none
    sample: ClassFigures | None = None

    def shown_classes(self) -> dict[str, ClassFigures]:
        """The per-class figures worth showing beside the trial's own: those of a mix, or
        of several classes (empty for one class measured plainly)."""
        if self.per_class and (len(self.per_class) > 1 or self.tpot_basis == "mix"):
            return self.per_class
        return {}


def percentile(values: list[float], q: float) -> float:
    """Linear-interpolated percentile, q in [0, 100]."""
    xs = sorted(values)
    if len(xs) == 1:
        return xs[0]
    pos = (len(xs) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def _ratio(records: list[RequestRecord]) -> tuple[float, float | None, int] | None:
    """(sum of decode ms / sum of decode tokens, its standard error, requests) or None."""
    pairs = [((r.e2e_s - r.ttft_s) * 1000, r.completion_tokens - 1) for r in records
             if r.completion_tokens > 1]
    if not pairs:
        return None
    x = [p[0] for p in pairs]
    y = [p[1] for p in pairs]
    ratio = sum(x) / sum(y)
    n = len(pairs)
    if n < 2:
        return ratio, None, n
    ybar = sum(y) / n
    resid = sum((xi - ratio * yi) ** 2 for xi, yi in zip(x, y, strict=True))
    return ratio, math.sqrt(resid / (n * (n - 1))) / ybar, n


def _interval(value: float, se: float | None, df: int) -> Interval | None:
    if se is None or df < 1:
        return None
    from scipy import stats

    t = float(stats.t.ppf(0.975, df))
    return Interval(low=value - t * se, high=value + t * se)


def token_weighted_tpot(records: list[RequestRecord]) -> tuple[float, Interval | None] | None:
    """Sum of decode time / sum of decode tokens (ms), with its 95% interval."""
    got = _ratio(records)
    if got is None:
        return None
    ratio, se, n = got
    return ratio, _interval(ratio, se, n - 1)


def accept_length(records: list[RequestRecord]) -> float | None:
    """Sum of completion tokens / sum of verify rounds over the speculative requests."""
    spec = [r for r in records if r.verify_rounds]
    if not spec:
        return None
    return sum(r.completion_tokens for r in spec) / sum(r.verify_rounds or 0 for r in spec)


def per_class(records: list[RequestRecord], shares: dict[str, float] | None = None
              ) -> dict[str, ClassFigures]:
    """Each content class's TPOT and accept length (classes in order of appearance)."""
    out: dict[str, ClassFigures] = {}
    for c in dict.fromkeys(r.content for r in records if r.content):
        assert c is not None
        mine = [r for r in records if r.content == c]
        fig = ClassFigures(requests=len(mine), share=(shares or {}).get(c))
        tw = token_weighted_tpot(mine)
        if tw is not None:
            fig.tpot_ms, fig.tpot_ci95 = tw
        fig.accept_length = accept_length(mine)
        scored = [r for r in mine if r.correct is not None]
        if scored:
            fig.correct, fig.scored = sum(1 for r in scored if r.correct), len(scored)
            fig.accuracy = fig.correct / fig.scored
            fig.accuracy_ci95 = wilson(fig.correct, fig.scored)
        out[c] = fig
    return out


def weighted_tpot(records: list[RequestRecord], shares: dict[str, float]
                  ) -> tuple[float, Interval | None] | None:
    """The mix objective: each class's token-weighted TPOT times its share, the shares of
    the classes measured renormalised to 1; the interval from the classes' standard
    errors (t with the requests' degrees of freedom less one per class)."""
    parts = []
    for c, w in shares.items():
        got = _ratio([r for r in records if r.content == c])
        if got is not None and w > 0:
            parts.append((w, *got))
    if not parts:
        return None
    total = sum(p[0] for p in parts)
    value = sum(w / total * ratio for w, ratio, _, _ in parts)
    if any(se is None for _, _, se, _ in parts):
        return value, None
    se = math.sqrt(sum((w / total * (se or 0.0)) ** 2 for w, _, se, _ in parts))
    return value, _interval(value, se, sum(n for *_, n in parts) - len(parts))


def wilson(correct: int, n: int) -> Interval:
    from scipy import stats

    ci = stats.binomtest(correct, n).proportion_ci(confidence_level=0.95, method="wilson")
    return Interval(low=float(ci.low), high=float(ci.high))


def aggregate(records: list[RequestRecord], shares: dict[str, float] | None = None
              ) -> Aggregates:
    """The trial's figures; with ``shares`` (a mix's), TPOT is the share-weighted one."""
    agg = Aggregates(requests=len(records))
    if not records:
        return agg
    tw = weighted_tpot(records, shares) if shares else token_weighted_tpot(records)
    agg.tpot_basis = "mix" if shares else None
    classes = per_class(records, shares)
    agg.per_class = classes or None
    if tw is not None:
        agg.tpot_ms, agg.tpot_ci95 = tw
        agg.decode_tok_s = 1000.0 / agg.tpot_ms if agg.tpot_ms > 0 else None
        per = [r.tpot_ms for r in records if r.tpot_ms is not None]
        agg.tpot_median_ms = statistics.median(per)
        agg.tpot_p95_ms = percentile(per, 95)
    agg.ttft_mean_s = statistics.fmean(r.ttft_s for r in records)
    agg.ttft_median_s = statistics.median(r.ttft_s for r in records)
    e2e = [r.e2e_s for r in records]
    agg.e2e_mean_s = statistics.fmean(e2e)
    agg.e2e_p50_s = percentile(e2e, 50)
    agg.e2e_p95_s = percentile(e2e, 95)
    agg.output_tokens_mean = statistics.fmean(r.completion_tokens for r in records)
    agg.accept_length = accept_length(records)
    scored = [r for r in records if r.correct is not None]
    if scored:
        k = sum(1 for r in scored if r.correct)
        agg.correct, agg.scored = k, len(scored)
        agg.accuracy = k / len(scored)
        agg.accuracy_ci95 = wilson(k, len(scored))
        agg.per_question = {r.prompt_id: bool(r.correct) for r in scored}
    return agg


#: prompt ids of the accuracy sample beside a workload start so (a mix's own math
#: questions may be the same GSM8K questions: answered again, kept apart)
SAMPLE_PREFIX = "sample:"


def with_accuracy_sample(agg: Aggregates, records: list[RequestRecord]) -> Aggregates:
    """``agg`` with the scored ``records`` of the GSM8K accuracy sample answered after the
    workload: its figures as ``sample``, its answers in the accuracy (one accuracy over
    every scored request of the launch, as a mix's) and ``per_question``."""
    scored = [r for r in records if r.correct is not None]
    if not scored:
        return agg
    fig = per_class([r.model_copy(update={"content": "sample"}) for r in records])["sample"]
    fig.tpot_ms = fig.tpot_ci95 = None          # no speed figure: not the workload's
    fig.accept_length = None
    per_q = {**(agg.per_question or {}), **{r.prompt_id: bool(r.correct) for r in scored}}
    k = sum(per_q.values())
    return agg.model_copy(update={
        "sample": fig, "per_question": per_q, "correct": k, "scored": len(per_q),
        "accuracy": k / len(per_q), "accuracy_ci95": wilson(k, len(per_q))})


def question_groups(records: list[RequestRecord], sample: list[RequestRecord]
                    ) -> dict[str, set[str]]:
    """The scored questions of a launch by what they measure: each content class of the
    workload's (``code``, ``math``...) and ``GSM8K final sample`` (the accuracy sample),
    so the gate can test each apart."""
    out: dict[str, set[str]] = {}
    for r in records:
        if r.correct is not None:
            out.setdefault(r.content or "workload", set()).add(r.prompt_id)
    for r in sample:
        if r.correct is not None:
            out.setdefault("GSM8K final sample", set()).add(r.prompt_id)
    return out
