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
                    path=str(path))


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
    assert w.scored == any(p.answer is not None for p in first.measured)
    if not w.scored:
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
