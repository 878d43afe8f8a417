"""The Workload contract, run against every registered kind, and the JSONL kind's input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import GSM8K_DIR
from tuner.errors import UserError
from tuner.space import Workload as Settings
from tuner.workloads import KINDS
from tuner.workloads import Context
from tuner.workloads import make_workload


def _settings(kind: str, tmp_path: Path) -> Settings:
    path = tmp_path / "prompts.jsonl"
    path.write_text("".join(json.dumps({"prompt": f"Tell me about {i}.", "id": f"p{i}"}) + "\n"
                            for i in range(12)))
    return Settings(kind=kind, questions=5, warmup_requests=2, input_len=64, output_len=32,
                    path=str(path), mix={"math": 1, "code": 2, "chat": 1} if kind == "mix"
                    else None)


CONTEXT = Context(gsm8k=str(GSM8K_DIR), vocab_size=4096)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kind_keeps_the_contract(kind: str, tmp_path: Path) -> None:
    w = make_workload(_settings(kind, tmp_path), CONTEXT)
    first, again = w.prepare(), w.prepare()
    assert first == again                                  # deterministic
    assert len(first.measured) == 5 and len(first.warmup) == 2
    ids = [p.id for p in first.measured]
    assert len(set(ids)) == len(ids)                       # distinct ids
    assert not {p.id for p in first.warmup} & set(ids)     # warm-up is never measured
    for p in first.warmup + first.measured:
        assert (p.text is None) != (p.token_ids is None)   # exactly one form
        assert p.sampling.max_new_tokens >= 1
    assert w.scores(w.settings) == any(p.answer is not None for p in first.measured)
    assert all(p.content for p in first.warmup + first.measured)   # every prompt has a class
    if not w.scores(w.settings):
        assert w.score(first.measured[0], "42") == (None, None)


def test_gsm8k_scores_the_final_number() -> None:
    w = make_workload(Settings(kind="gsm8k", questions=2), Context(gsm8k=str(GSM8K_DIR)))
    p = w.prepare().measured[0]
    assert w.score(p, f"so the answer is #### {p.answer}") == (True, p.answer)
    assert w.score(p, "no idea")[0] is False


def test_jsonl_takes_per_line_caps_and_refuses_bad_lines_with_their_place(tmp_path: Path
                                                                         ) -> None:
    f = tmp_path / "mine.jsonl"
    f.write_text('{"prompt": "a", "max_tokens": 7}\n\n{"prompt": "b"}\n')
    got = make_workload(Settings(kind="jsonl", path=str(f), questions=10,
                                 output_len=99)).prepare()
    assert [(p.id, p.text, p.sampling.max_new_tokens) for p in got.measured] == [
        ("line-1", "a", 7), ("line-3", "b", 99)]
    for text, where in [('{"prompt": 3}\n', ":1: expected an object"), ("nope\n", ":1: not JSON"),
                        ('{"prompt": "a", "max_tokens": 0}\n', ":1: max_tokens")]:
        f.write_text(text)
        with pytest.raises(UserError, match=where):
            make_workload(Settings(kind="jsonl", path=str(f))).prepare()
    with pytest.raises(UserError, match=r"workload\.path"):
        make_workload(Settings(kind="jsonl")).prepare()
    with pytest.raises(UserError, match="cannot read"):
        make_workload(Settings(kind="jsonl", path=str(tmp_path / "missing.jsonl"))).prepare()


# ---- content classes ---------------------------------------------------------------------------

def test_a_mix_splits_by_share_and_interleaves_so_any_first_part_is_mixed() -> None:
    w = make_workload(Settings(kind="mix", questions=20, mix={"code": 0.6, "chat": 0.4}),
                      CONTEXT)
    classes = [p.content for p in w.prepare().measured]
    assert classes.count("code") == 12 and classes.count("chat") == 8
    for n in (5, 10):                    # a search trial's first questions keep the mix
        assert abs(classes[:n].count("code") / n - 0.6) <= 0.2
    assert w.scores(w.settings)          # code: its tests score it
    chat_only = make_workload(Settings(kind="mix", questions=4, mix={"chat": 1}), CONTEXT)
    assert not chat_only.scores(chat_only.settings)


def test_a_mix_with_math_scores_only_its_gsm8k_prompts() -> None:
    w = make_workload(Settings(kind="mix", questions=6, mix={"math": 1, "chat": 1}), CONTEXT)
    measured = w.prepare().measured
    math = [p for p in measured if p.content == "math"]
    chat = [p for p in measured if p.content == "chat"]
    assert len(math) == len(chat) == 3
    assert w.score(chat[0], "42") == (None, None)
    assert w.score(math[0], f"The answer is {math[0].answer}.")[0] is True


def test_mix_settings_are_checked_with_a_clear_message() -> None:
    with pytest.raises(ValueError, match="needs 'mix'"):
        Settings(kind="mix")
    with pytest.raises(ValueError, match="add up to more than 0"):
        Settings(kind="mix", mix={"code": 0})
    with pytest.raises(ValueError, match="is for the 'mix' kind"):
        Settings(kind="code", mix={"code": 1})


def test_code_prompts_come_from_humaneval_and_chat_from_the_built_in_set() -> None:
    code = make_workload(Settings(kind="code", questions=200), CONTEXT).prepare().measured
    assert len(code) == 200 and "```python" in (code[0].text or "")
    assert len({p.text for p in code}) == 164            # cycled past the set's 164
    chat = make_workload(Settings(kind="chat", questions=3), CONTEXT).prepare().measured
    assert all(p.content == "chat" and "def " not in (p.text or "") for p in chat)


def test_a_jsonl_line_may_name_its_class(tmp_path: Path) -> None:
    f = tmp_path / "p.jsonl"
    f.write_text(json.dumps({"prompt": "fix this loop", "class": "code"}) + "\n"
                 + json.dumps({"prompt": "hello"}) + "\n")
    got = make_workload(Settings(kind="jsonl", path=str(f), content="chat")).prepare()
    assert [p.content for p in got.measured] == ["code", "chat"]
    f.write_text(json.dumps({"prompt": "x", "class": 7}) + "\n")
    with pytest.raises(UserError, match="'class' must be a short label"):
        make_workload(Settings(kind="jsonl", path=str(f))).prepare()


def test_a_jsonl_class_name_with_a_newline_is_refused_on_its_line(tmp_path: Path) -> None:
    """Finding 7 (issue 34 item 4): a class name held a newline, printed raw in every
    table that lists classes; ``workload.content`` likewise."""
    f = tmp_path / "p.jsonl"
    f.write_text(json.dumps({"prompt": "hello", "class": "chat"}) + "\n"
                 + json.dumps({"prompt": "x", "class": "co\nde"}) + "\n")
    with pytest.raises(UserError, match=r"p\.jsonl:2: 'class' must be a short label"):
        make_workload(Settings(kind="jsonl", path=str(f))).prepare()
    with pytest.raises(ValueError, match="one printed word"):
        Settings(kind="jsonl", path=str(f), content="co\nde")
