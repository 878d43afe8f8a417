"""The code workload's pass@1: HumanEval's tests run on each completion in the sandbox."""

from __future__ import annotations

from tests.conftest import GSM8K_DIR
from tuner.space import Workload as Settings
from tuner.workloads import Context
from tuner.workloads import Prompt
from tuner.workloads import humaneval
from tuner.workloads import make_workload


PROBLEMS = humaneval.problems()


def _prompts() -> dict[str, Prompt]:
    w = make_workload(Settings(kind="code", questions=164))
    return {p.answer: p for p in w.prepare().measured if p.answer}


def test_every_canonical_solution_passes_and_a_stub_returning_none_fails() -> None:
    """The scorer's reference check, as GSM8K's (every reference solution right): each of
    the 164 problems' own solution, replied as asked (the whole function in a python
    block), passes its tests; a reply whose body returns None fails them."""
    w = make_workload(Settings(kind="code", questions=164))
    prompts = _prompts()
    assert len(prompts) == 164 and w.scores(w.settings)
    good = [(prompts[k], f"Here it is:\n```python\n{p.prompt}{p.canonical_solution}```\nDone.")
            for k, p in PROBLEMS.items()]
    bad = [(prompts[k], f"```python\n{p.prompt}    return None\n```") for k, p in
           list(PROBLEMS.items())[:12]]
    got = w.score_all(good + bad)
    assert [c for c, _ in got[:164]] == [True] * 164, [a for c, a in got if not c][:3]
    assert [c for c, _ in got[164:]] == [False] * 12
    assert all(a is not None and a.startswith("failed") for _, a in got[164:])


def test_a_completion_may_be_the_body_alone_or_a_bare_function_and_one_cut_short_fails() -> None:
    p = PROBLEMS["HumanEval/0"]
    prompt = _prompts()["HumanEval/0"]
    w = make_workload(Settings(kind="code", questions=1))
    body_only = p.canonical_solution                       # HumanEval's own convention
    whole = f"def has_close_elements(numbers, threshold):\n{body_only}"   # no imports
    cut = f"```python\n{p.prompt}{body_only[:40]}"          # max_tokens ended it mid-body
    verdicts = [w.score(prompt, t)[0] for t in (body_only, whole, cut)]
    assert verdicts == [True, True, False]
    syntax = w.score(prompt, "```python\ndef has_close_elements(:\n```")
    assert syntax[0] is False and "SyntaxError" in (syntax[1] or "")


def test_a_mix_scores_its_code_by_the_tests_and_its_math_by_the_number() -> None:
    w = make_workload(Settings(kind="mix", questions=6, mix={"math": 1, "code": 1, "chat": 1}),
                      Context(gsm8k=str(GSM8K_DIR)))
    measured = w.prepare().measured
    code = next(p for p in measured if p.content == "code")
    math = next(p for p in measured if p.content == "math")
    chat = next(p for p in measured if p.content == "chat")
    problem = PROBLEMS[code.answer or ""]
    right = f"```python\n{problem.prompt}{problem.canonical_solution}```"
    got = w.score_all([(code, right), (math, f"#### {math.answer}"), (chat, "hello"),
                       (code, "```python\nraise SystemExit\n```")])
    assert [c for c, _ in got] == [True, True, None, False]
