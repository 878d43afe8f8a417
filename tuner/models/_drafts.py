"""An external draft model named by ``tuner init --draft PATH``: which speculative
algorithm loads it, read from its own ``config.json`` (never from its name).

A DSpark draft declares ``*DSparkModel`` / ``DSparkDraftModel`` (SGLang 0.5.23
``models/dspark.py``) and its block size gamma (``dspark_block_size``, ``block_size``, or
``dspark_config.block_size``, as ``speculative/dspark_components/dspark_config.py`` reads
them); an EAGLE-3 draft an architecture ending in ``Eagle3`` (``LlamaForCausalLMEagle3``).
Anything else is refused: the tool would not know which algorithm to launch it with.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tuner.errors import UserError
from tuner.errors import printable
from tuner.models._config import _load_json
from tuner.models._config import config_path


@dataclass(frozen=True)
class Draft:
    algorithm: str              # DSPARK or EAGLE3
    path: str                   # the draft folder (--speculative-draft-model-path)
    architecture: str
    block_size: int | None
    facts: dict[str, Any]


def _block_size(data: dict[str, Any], source: Path) -> int | None:
    raw = data.get("dspark_config")
    nested: dict[str, Any] = raw if isinstance(raw, dict) else {}
    for key, value in (("dspark_block_size", data.get("dspark_block_size")),
                       ("block_size", data.get("block_size")),
                       ("dspark_config.block_size", nested.get("block_size"))):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1024:
            raise UserError(printable(f"{source}: {key}: expected an integer from 1 to "
                                      f"1024, got {value!r}"))
        return value
    return None


def read_draft(path: str | Path) -> Draft:
    """The draft at ``path`` (a folder or its config.json) and its algorithm."""
    source = config_path(path)
    data = _load_json(source)
    archs = data.get("architectures")
    arch = archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else None
    if arch is None:
        raise UserError(printable(f"{source}: architectures: missing; --draft needs a "
                                  "draft checkpoint's config.json"))
    facts: dict[str, Any] = {k: data[k] for k in ("num_hidden_layers", "hidden_size") if k in data}
    if arch.endswith("DSparkModel") or arch == "DSparkDraftModel":
        return Draft("DSPARK", str(source.parent.resolve()), arch,
                     _block_size(data, source), facts)
    if arch.endswith("Eagle3"):
        return Draft("EAGLE3", str(source.parent.resolve()), arch, None, facts)
    raise UserError(printable(f"{source}: architectures: {arch!r} is not a draft tuner init "
                              "understands (a DSpark draft, *DSparkModel, or an EAGLE-3 "
                              "draft, *Eagle3)"))
