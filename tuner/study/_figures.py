"""The figures one configuration is shown with, computed once from all its launches.

A configuration has several launches (the search's, the finals' race and confirmations,
some on the larger final accuracy sample, some at a larger capacity). Every output shows
the same figure for each of them (:class:`tuner.study.Answer`):

* **accuracy** - the one on the most questions: the latest complete launch of the
  configuration on its largest sample (the final accuracy sample when it ran one, else its
  screening), with that sample's size, its Wilson interval, and the paired comparison with
  the baseline's answers to the same questions (the baseline's launch on that sample): the
  drop in points, the baseline's own accuracy there, and the one-sided McNemar p. The
  screening figure is kept beside it, labelled as such (:attr:`Accuracy.screening`).
* **accept length** - the mean over its complete launches that reported one.
* **capacity** - the finals' confirmation launch that served at the largest capacity
  setting (the memory fraction): the configuration is shown, and exported, at that setting.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from tuner.study._summary import Role
from tuner.study._summary import TrialSummary


@dataclass(frozen=True)
class Accuracy:
    """A configuration's one accuracy (module docstring)."""

    value: float
    ci95: tuple[float, float] | None
    #: questions scored on the launch it comes from
    questions: int
    #: that launch's trial number
    launch: int
    #: ``final sample`` (the finals' larger sample), ``screening`` (its first launch) or
    #: ``a finals launch`` (a re-measurement on all the space's questions)
    sample: str
    #: the first launch's figure and question count (the screening's)
    screening: float | None = None
    screening_questions: int = 0
    #: the baseline's accuracy on the same questions, the paired drop (points, > 0: fewer
    #: right than the baseline), the paired questions and the one-sided McNemar p
    baseline: float | None = None
    drop_pp: float | None = None
    pairs: int = 0
    p_drop: float | None = None
    #: each scored kind of question of that launch (``code`` pass@1, ``GSM8K sample``...)
    #: -> (accuracy, scored, Wilson low, high); empty for one kind alone
    by_kind: dict[str, tuple[float, int, float, float]] = field(default_factory=dict)

    @property
    def paired(self) -> bool:
        return self.drop_pp is not None

    def text(self) -> str:
        """``90.0% on 300 questions (final sample; the baseline 90.3% on them, -0.33 pp
        paired, p = 0.62)``: every output's words for it."""
        out = f"{self.value:.1%} on {self.questions} questions ({self.sample}"
        if self.by_kind:
            out += ": " + ", ".join(self.kind_text(k) for k in self.by_kind)
        if self.paired:
            assert self.drop_pp is not None and self.baseline is not None
            out += (f"; the baseline {self.baseline:.1%} on them, {-self.drop_pp:+.2f} pp "
                    f"paired, p = {self.p_drop:.2g}")
        return out + ")"

    def kind_text(self, kind: str) -> str:
        """``code 82.3% [75.8%, 87.4%] on 164``: one kind's figure (HumanEval's pass@1)."""
        acc, n, lo, hi = self.by_kind[kind]
        return f"{kind} {acc:.1%} [{lo:.1%}, {hi:.1%}] on {n}"

    def as_dict(self) -> dict[str, Any]:
        return {"accuracy": self.value, "accuracy_ci95": list(self.ci95) if self.ci95
                else None, "questions": self.questions, "launch": self.launch,
                "sample": self.sample, "screening_accuracy": self.screening,
                "screening_questions": self.screening_questions,
                "baseline_accuracy": self.baseline, "paired_drop_pp": self.drop_pp,
                "paired_questions": self.pairs, "p_drop": self.p_drop,
                "accuracy_by_kind": {k: {"accuracy": v[0], "scored": v[1],
                                         "ci95": [v[2], v[3]]}
                                     for k, v in self.by_kind.items()} or None}


def _scored(s: TrialSummary) -> bool:
    return s.state == "COMPLETE" and bool(s.per_question) and s.accuracy is not None


def _largest(launches: list[TrialSummary]) -> TrialSummary | None:
    """The latest of the launches on the most questions."""
    scored = [s for s in launches if _scored(s)]
    if not scored:
        return None
    return max(scored, key=lambda s: (len(s.per_question or {}), s.number))


def accuracy_of(launches: list[TrialSummary], baseline: list[TrialSummary]
                ) -> Accuracy | None:
    """The one accuracy of a configuration whose launches are ``launches`` (its first
    launch first); ``baseline``: the baseline's launches (empty for the baseline itself)."""
    from tuner.trial import paired_accuracy

    best = _largest(launches)
    if best is None or best.per_question is None or best.accuracy is None:
        return None
    first = launches[0]
    ci = tuple(best.accuracy_ci95[:2]) if best.accuracy_ci95 else None
    out = Accuracy(
        value=best.accuracy, ci95=(ci[0], ci[1]) if ci else None,
        questions=len(best.per_question), launch=best.number,
        sample=("final sample" if best.final_sample else "screening"
                if best.number == launches[0].number else "a finals launch"),
        screening=first.accuracy, screening_questions=len(first.per_question or {}),
        by_kind={k: (float(v[0]), int(v[1]), float(v[2]), float(v[3]))
                 for k, v in best.class_accuracy.items()})
    mine = set(best.per_question)
    # what the gate compared it with: the baseline's launches on the same kind of sample
    refs = [s for s in baseline if _scored(s) and s.number != best.number
            and s.final_sample == best.final_sample]
    if not refs:
        return out
    # the baseline's launch that answered the most of these questions (the latest of them)
    ref = max(refs, key=lambda s: (len(mine & set(s.per_question or {})), s.number))
    assert ref.per_question is not None
    pa = paired_accuracy(ref.per_question, best.per_question)
    if not pa.pairs:
        return out
    base_right = sum(ref.per_question[q] for q in mine & set(ref.per_question))
    from dataclasses import replace

    return replace(out, baseline=base_right / pa.pairs, drop_pp=pa.drop_pp, pairs=pa.pairs,
                   p_drop=pa.p_drop)


def accept_length_of(launches: list[TrialSummary]) -> float | None:
    """The mean accept length over the complete launches that reported one."""
    values = [s.accept_length for s in launches if s.state == "COMPLETE"
              and s.accept_length is not None]
    return statistics.fmean(values) if values else None


def served_capacity(launches: list[TrialSummary]) -> TrialSummary | None:
    """The finals' confirmation launch that served at the largest capacity setting, or None
    when none raised it (:func:`tuner.study.largest_capacity` finds its trial)."""
    rows = [s for s in launches if s.role == Role.REMEASURE and s.confirm
            and s.state == "COMPLETE" and s.feasible and s.held]
    if not rows:
        return None
    return max(rows, key=lambda s: tuple(sorted((k, float(v)) for k, v in s.held.items())))
