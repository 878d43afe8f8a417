"""An external draft model named by ``tuner init --draft PATH``: which speculative
algorithm loads it, read from its own ``config.json`` (never from its name).

The engine adapter's table of algorithms (``tuner.engines.SPEC_ALGORITHMS``) says which
architectures each algorithm's draft declares (a DSpark draft ``*DSparkModel`` /
``DSparkDraftModel``, SGLang 0.5.23 ``models/dspark.py``; an EAGLE-3 draft ``*Eagle3``,
``LlamaForCausalLMEagle3``) and where a block draft's config gives its block size (DSPARK's
gamma: ``dspark_block_size``, ``block_size`` or ``dspark_config.block_size``, as
``speculative/dspark_components/dspark_config.py`` reads them). Anything else is refused:
the tool would not know which algorithm to launch it with.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tuner.engines import SPEC_ALGORITHMS
from tuner.errors import UserError
from tuner.errors import printable
from tuner.models._config import _load_json
from tuner.models._config import config_path


@dataclass(frozen=True)
class Draft:
    algorithm: str              # its row of SPEC_ALGORITHMS: DSPARK, EAGLE3
    path: str                   # the draft folder (--speculative-draft-model-path)
    architecture: str
    block_size: int | None
    facts: dict[str, Any]


def _block_size(data: dict[str, Any], source: Path, keys: tuple[str, ...]) -> int | None:
    """The block size the draft's config declares under the first of ``keys`` present
    (dotted: a nested key)."""
    for key in keys:
        value: object = data
        for part in key.split("."):
            value = value.get(part) if isinstance(value, dict) else None
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
    named = [a for a in SPEC_ALGORITHMS.values() if a.draft_architectures]
    for algo in named:
        if algo.drafts_with(arch):
            return Draft(algo.name, str(source.parent.resolve()), arch,
                         _block_size(data, source, algo.block_keys), facts)
    known = ", or ".join(f"{a.label}, {' / '.join(a.draft_architectures)}" for a in named)
    raise UserError(printable(f"{source}: architectures: {arch!r} is not a draft tuner init "
                              f"understands ({known})"))
