from __future__ import annotations

import json
from pathlib import Path

import pytest

from tuner.errors import UserError
from tuner.space._schema import Workload
from tuner.workloads import Context
from tuner.workloads import make_workload
from tuner.workloads.vocab import synthetic_id_range
from tuner.workloads.vocab import vocab_size


def _model_folder(tmp_path: Path, vocab: int, tokenizer_ids: int | None = None) -> Path:
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"vocab_size": vocab}))
    if tokenizer_ids is not None:
        tok = {"model": {"vocab": {f"t{i}": i for i in range(tokenizer_ids - 2)}},
               "added_tokens": [{"id": tokenizer_ids - 2}, {"id": tokenizer_ids - 1}]}
        (folder / "tokenizer.json").write_text(json.dumps(tok))
    return folder


def test_the_model_folder_is_the_authority(tmp_path: Path) -> None:
    folder = _model_folder(tmp_path, 4096)
    assert vocab_size(str(folder), declared=157184) == 4096


def test_a_smaller_tokenizer_narrows_the_bound(tmp_path: Path) -> None:
    folder = _model_folder(tmp_path, 4096, tokenizer_ids=4000)
    assert vocab_size(str(folder), declared=None) == 4000


def test_nested_text_config(tmp_path: Path) -> None:
    folder = tmp_path / "vl"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"text_config": {"vocab_size": 32000}}))
    assert vocab_size(str(folder), declared=None) == 32000


def test_a_hub_id_uses_the_declared_size_or_refuses(tmp_path: Path) -> None:
    assert vocab_size("inclusionAI/Ling-3.0-flash-fp4", declared=157184) == 157184
    with pytest.raises(UserError, match=r"model\.vocab_size"):
        vocab_size("inclusionAI/Ling-3.0-flash-fp4", declared=None)


@pytest.mark.parametrize("vocab", [300, 4096, 32000, 157184])
def test_synthetic_ids_stay_inside_the_vocabulary(vocab: int) -> None:
    w = Workload(kind="synthetic", questions=20, warmup_requests=2, input_len=256)
    prepared = make_workload(w, Context(vocab_size=vocab)).prepare()
    ids = [i for p in prepared.warmup + prepared.measured for i in p.token_ids or ()]
    assert len(ids) == 22 * 256
    low, high = synthetic_id_range(vocab)
    assert 0 <= low < high <= vocab
    assert min(ids) >= low and max(ids) < high
    # the ids use the range, not a corner of it
    assert max(ids) - min(ids) > (high - low) * 0.9


def test_large_vocabularies_keep_the_historic_range() -> None:
    # 1,000-100,000 for every vocabulary of 100,000 or more: earlier studies stay comparable
    assert synthetic_id_range(157184) == (1000, 100000)
    assert synthetic_id_range(100000) == (1000, 100000)


def test_synthetic_without_a_vocabulary_is_an_error() -> None:
    with pytest.raises(ValueError, match="vocabulary"):
        make_workload(Workload(kind="synthetic")).prepare()
