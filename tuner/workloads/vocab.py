"""The model's vocabulary size, which bounds the token ids a synthetic workload may send.

A real server fed an id outside its vocabulary does not answer with an error: the embedding
hits a device-side assert and the server dies (seen on an H200 with SGLang 0.5.17 and a
4,096-token model, ``docs/real-sglang-h200.md``). So the synthetic workload never guesses.

Order of authority: the model folder's ``config.json`` (``vocab_size``, or
``text_config.vocab_size``), narrowed to the tokenizer's size when a ``tokenizer.json`` sits
beside it; else the space's ``model.vocab_size``; else a :class:`UserError`.
"""

from __future__ import annotations

import json
from pathlib import Path

from tuner.errors import UserError


def _from_config(folder: Path) -> int | None:
    try:
        cfg = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(cfg, dict):
        return None
    value = cfg.get("vocab_size")
    if value is None and isinstance(cfg.get("text_config"), dict):
        value = cfg["text_config"].get("vocab_size")
    return value if isinstance(value, int) and value > 0 else None


def _from_tokenizer(folder: Path) -> int | None:
    """Ids the tokenizer can decode: its vocabulary plus added tokens (largest id + 1)."""
    try:
        tok = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    ids: list[int] = []
    vocab = (tok.get("model") or {}).get("vocab") if isinstance(tok, dict) else None
    if isinstance(vocab, dict):
        ids += [v for v in vocab.values() if isinstance(v, int)]
    for added in (tok.get("added_tokens") or []) if isinstance(tok, dict) else []:
        if isinstance(added, dict) and isinstance(added.get("id"), int):
            ids.append(added["id"])
    return max(ids) + 1 if ids else None


def vocab_size(model_path: str, declared: int | None) -> int:
    """Token ids ``[0, result)`` are safe to send to the model at ``model_path``."""
    folder = Path(model_path).expanduser()
    if folder.is_dir():
        from_cfg = _from_config(folder)
        if from_cfg is not None:
            from_tok = _from_tokenizer(folder)
            return min(from_cfg, from_tok) if from_tok else from_cfg
    if declared is not None:
        return declared
    raise UserError(
        f"the synthetic workload needs the model's vocabulary size: {model_path} is not a "
        "local model folder with a config.json here; set model.vocab_size in the space file")


def synthetic_id_range(vocab: int) -> tuple[int, int]:
    """The ``[low, high)`` range synthetic prompt ids are drawn from.

    Ids below 1,000 (special and byte tokens in most vocabularies) and above 100,000 are
    avoided where the vocabulary allows; a small vocabulary is used from its first quarter.
    """
    high = min(100_000, vocab)
    low = min(1_000, high // 4)
    return low, high
