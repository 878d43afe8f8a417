"""The flag tables generated from SGLang's own parsers (tuner/engines/sglang_flags/) and the
validation that reads them: the flags and choices real SGLang has, per space version."""

from __future__ import annotations

import pytest
import yaml

from tests.conftest import SPARK
from tests.engines_tests import sglang_0_5_23_flags as oracle
from tuner.engines import make_engine
from tuner.engines._sglang_flags import flags_for
from tuner.engines._sglang_flags import table_version
from tuner.engines._sglang_flags import table_versions
from tuner.errors import UserError
from tuner.space import parse_space


ENGINE = make_engine("sglang")


def _space(version: str = "0.5.23", **fixed: object):  # type: ignore[no-untyped-def]
    doc = yaml.safe_load(SPARK.read_text())
    doc["engine"]["version"] = version
    if version == "0.5.17":   # its parsers predate Ling 3's (below)
        for flag in ("--reasoning-parser", "--tool-call-parser"):
            doc["fixed_flags"].pop(flag)
    doc["fixed_flags"].update(fixed)
    space = parse_space(yaml.safe_dump(doc), file="space.yaml")
    ENGINE.validate_space(space)
    return space


def test_both_supported_versions_have_a_generated_table() -> None:
    assert table_versions() == ("0.5.17", "0.5.23")
    assert table_version("0.5.20") == "0.5.17"      # the newest table at or below it
    assert table_version("0.6.0") == "0.5.23"
    assert table_version(None) == "0.5.23"


def test_the_real_flags_the_hand_written_table_lacked_are_known() -> None:
    flags = flags_for("0.5.23")
    for flag in ("--sampling-backend", "--grammar-backend", "--max-total-tokens",
                 "--mm-feature-transport"):
        assert flag in flags, flag


def test_the_oracles_choices_exist_in_the_real_parser() -> None:
    flags = flags_for("0.5.23")
    for flag, names in oracle.CHOICES.items():
        real = flags[flag].choices
        if real is None:      # an open flag (--speculative-algorithm): nothing to compare
            continue
        assert names <= set(real), (flag, names - set(real))


@pytest.mark.parametrize(("flag", "bad", "good"), [
    ("--reasoning-parser", "ling4", "ling3"),
    ("--tool-call-parser", "deepseek-r1", "deepseekv3"),
    ("--kv-cache-dtype", "fp9", "fp8_e4m3"),
])
def test_a_misspelt_choice_is_refused_with_the_real_choices(flag: str, bad: str,
                                                           good: str) -> None:
    _space(**{flag: good})
    with pytest.raises(UserError, match=rf"invalid choice '{bad}' for {flag}.*{good}"):
        _space(**{flag: bad})


def test_speculative_algorithm_is_open_as_in_the_parser() -> None:
    assert flags_for("0.5.23")["--speculative-algorithm"].choices is None
    _space(**{"--speculative-algorithm": "MY_FORKS_ALGO"})


def test_a_space_is_checked_against_its_own_versions_flags() -> None:
    # --cuda-graph-max-bs exists in 0.5.17 and is gone (ambiguous) in 0.5.23
    assert "--cuda-graph-max-bs" in flags_for("0.5.17")
    assert "--cuda-graph-max-bs" not in flags_for("0.5.23")
    _space("0.5.17", **{"--cuda-graph-max-bs": 1})
    with pytest.raises(UserError, match=r"does not exist in SGLang 0\.5\.23"):
        _space("0.5.23", **{"--cuda-graph-max-bs": 1})
    # choices too: 0.5.17 has no ling3 reasoning parser
    with pytest.raises(UserError, match=r"invalid choice 'ling3' for --reasoning-parser"):
        _space("0.5.17", **{"--reasoning-parser": "ling3"})
    # and a flag new in 0.5.23 is unknown to a 0.5.17 space
    assert "--attn-dp-size" not in flags_for("0.5.17")
    with pytest.raises(UserError, match=r"unknown SGLang 0\.5\.17 flag --attn-dp-size"):
        _space("0.5.17", **{"--attn-dp-size": 1})
