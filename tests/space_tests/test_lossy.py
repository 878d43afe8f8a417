"""Which settings may cost accuracy (``lossy_values``): what the finals count against a
finalist within noise of a faster one (docs/search-spaces.md, "Lossy values")."""

from __future__ import annotations

import yaml

from tests.conftest import SPARK
from tuner.space import SearchSpace
from tuner.space import load_space
from tuner.space import parse_space


def lossy_of(space: SearchSpace, **values: object) -> tuple[str, ...]:
    """The lossy settings of the configuration ``values`` complete in ``space``."""
    return space.lossy_knobs(space.complete(values))


def test_only_listed_values_are_lossy_where_a_knob_lists_them() -> None:
    space = load_space(SPARK)
    assert lossy_of(space) == ()
    # another kernel at the same precision, the checkpoint's own BF16 head: nothing lost
    assert lossy_of(space, moe_backend="humming", lm_head="bf16") == ()
    assert lossy_of(space, moe_backend="marlin", speculative="DSPARK") == ()
    assert lossy_of(space, lm_head="fp8") == ("lm_head",)
    assert lossy_of(space, moe_backend="humming", humming_activation="fp8", lm_head="fp8") == (
        "humming_activation", "lm_head")
    # a lossless knob never counts, whatever its value
    assert lossy_of(space, speculative="NEXTN", spec_steps=5) == ()


def test_a_knob_that_lists_nothing_counts_every_change_from_the_baseline() -> None:
    data = yaml.safe_load(SPARK.read_text())
    for knob in data["knobs"].values():
        knob.pop("lossy_values", None)
    space = parse_space(yaml.safe_dump(data, sort_keys=False), file="unmarked.yaml")
    assert lossy_of(space) == ()
    assert lossy_of(space, moe_backend="humming", lm_head="bf16") == ("moe_backend", "lm_head")
    # the baseline has no Humming activation: compared with the knob's default (bf16)
    assert lossy_of(space, moe_backend="humming", humming_activation="bf16") == ("moe_backend",)
    assert lossy_of(space, moe_backend="humming", humming_activation="fp8") == (
        "moe_backend", "humming_activation")
