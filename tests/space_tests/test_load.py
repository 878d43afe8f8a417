from __future__ import annotations

import copy
import subprocess
from collections.abc import Callable
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from tests.conftest import H200
from tests.conftest import SPARK
from tests.conftest import tuner_argv
from tuner.engines import make_engine
from tuner.errors import SpaceError
from tuner.space import load_space
from tuner.space import parse_space


BASE = yaml.safe_load(SPARK.read_text())


def _check(text: str) -> None:
    space = parse_space(text, file="bad.yaml")
    make_engine("sglang").validate_space(space)


def mutate(fn: Callable[[dict[str, Any]], None]) -> str:
    data = copy.deepcopy(BASE)
    fn(data)
    return yaml.safe_dump(data, sort_keys=False)


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def f(d: dict[str, Any]) -> None:
        *parents, last = path.split("/")
        for p in parents:
            d = d[p]
        d[last] = value
    return f


def _rename_choice(d: dict[str, Any], old: str, new: str) -> None:
    k = d["knobs"]["moe_backend"]
    k["choices"] = [new if c == old else c for c in k["choices"]]
    k["evidence_by_value"][new] = k["evidence_by_value"].pop(old)


CASES = [
    ("unknown key", _set("knobs/moe_backend/colour", "red"),
     "knobs.moe_backend.colour", "unknown key"),
    ("unknown top-level key", _set("knbos", {}), "knbos", "unknown key"),
    ("wrong type", _set("knobs/spec_steps/low", "one"), "knobs.spec_steps.low", "number"),
    ("empty categorical domain", _set("knobs/spec_topk/choices", []),
     "knobs.spec_topk.choices", "empty domain"),
    ("empty int domain", _set("knobs/spec_steps/high", 0), "knobs.spec_steps.high",
     "empty domain"),
    ("condition on an unknown knob", _set("knobs/spec_steps/when", {"specul": "NEXTN"}),
     "knobs.spec_steps.when.specul", "unknown knob 'specul'"),
    ("condition on an impossible value", _set("knobs/spec_steps/when", {"speculative": "MTP"}),
     "knobs.spec_steps.when.speculative", "not a value"),
    ("baseline outside its domain", _set("baseline/moe_backend", "cutlass"),
     "baseline.moe_backend", "outside"),
    ("baseline below a float knob", _set("baseline/mem_fraction", 0.5),
     "baseline.mem_fraction", "outside"),
    ("baseline names an unknown knob", _set("baseline/colour", 1), "baseline.colour",
     "unknown knob"),
    ("baseline sets an inactive knob", _set("baseline/spec_steps", 3), "baseline.spec_steps",
     "inactive"),
    ("mem fraction above the machine cap", _set("knobs/mem_fraction/high", 0.75),
     "knobs.mem_fraction.high", "above this machine's cap 0.7"),
    ("misspelt flag", _set("knobs/moe_backend/flag", "--moe-runner-backnd"),
     "knobs.moe_backend.flag", "unknown SGLang 0.5.23 flag"),
    ("removed flag", _set("fixed_flags/--cuda-graph-max-bs", 1),
     "fixed_flags.--cuda-graph-max-bs", "does not exist"),
    ("invalid choice for a knob's flag", lambda d: _rename_choice(d, "marlin", "marlinn"),
     "knobs.moe_backend.choices[2]", "invalid choice 'marlinn'"),
    ("invalid choice for a fixed flag", _set("fixed_flags/--attention-backend", "flashinfr"),
     "fixed_flags.--attention-backend", "invalid choice 'flashinfr'"),
    ("store_true flag given a value", _set("fixed_flags/--disable-flashinfer-autotune", "yes"),
     "fixed_flags.--disable-flashinfer-autotune", "takes no value"),
    ("condition cycle", _set("knobs/speculative/when", {"spec_steps": 3}),
     "knobs.", "cycle"),
    ("missing evidence", lambda d: d["knobs"]["mem_fraction"].pop("evidence"),
     "knobs.mem_fraction", "evidence"),
    ("values do not cover choices", lambda d: d["knobs"]["lm_head"]["values"].pop("bf16"),
     "knobs.lm_head.values", "missing an entry for value 'bf16'"),
    ("wrong schema version", _set("schema_version", 2), "schema_version", "input should be 1"),
    ("unknown knob role", _set("knobs/mem_fraction/role", "size"), "knobs.mem_fraction.role",
     "'speed' or 'capacity'"),
    ("conditional capacity knob", _set("knobs/mem_fraction/when", {"speculative": "NEXTN"}),
     "knobs.mem_fraction.role", "cannot have a 'when'"),
    ("a knob depending on a capacity knob", _set("knobs/spec_steps/when", {"mem_fraction": 0.6}),
     "knobs.spec_steps.when.mem_fraction", "capacity knob"),
    ("a lossy value outside the knob's domain", _set("knobs/lm_head/lossy_values", ["fp4"]),
     "knobs.lm_head.lossy_values[0]", "'fp4' is not a value of knob 'lm_head'"),
    ("lossy values on a lossless knob", _set("knobs/dspark_block_size/lossy_values", [4]),
     "knobs.dspark_block_size.lossy_values", "a lossless or capacity knob"),
]


@pytest.mark.parametrize(("label", "fn", "path", "message"), CASES, ids=[c[0] for c in CASES])
def test_malformed_space_gives_located_error(label: str, fn: Any, path: str, message: str
                                             ) -> None:
    with pytest.raises(SpaceError) as info:
        _check(mutate(fn))
    err = info.value
    assert err.file == "bad.yaml"
    assert err.path.startswith(path), err
    assert message in err.detail, err
    assert err.line is not None and err.line > 0
    assert "\n" not in str(err)


def test_duplicate_knob_is_refused_with_both_lines(spark_text: str) -> None:
    dup = spark_text.replace("  spec_topk:\n", "  spec_steps:\n    type: int\n    low: 1\n"
                             "    high: 2\n    flag: --speculative-num-steps\n"
                             "    evidence: {none: x}\n  spec_topk:\n", 1)
    with pytest.raises(SpaceError) as info:
        parse_space(dup, file="dup.yaml")
    assert "duplicate key 'spec_steps'" in str(info.value)
    first = next(i for i, line in enumerate(dup.splitlines(), 1) if line == "  spec_steps:")
    assert f"first written on line {first}" in str(info.value)
    assert info.value.line is not None and info.value.line > first


def test_yaml_syntax_error_is_located() -> None:
    with pytest.raises(SpaceError) as info:
        parse_space("name: [unclosed\n", file="x.yaml")
    assert str(info.value).startswith("x.yaml:")
    assert "not valid YAML" in str(info.value)


def test_missing_file_is_a_user_error(tmp_path: Any) -> None:
    with pytest.raises(SpaceError, match="no such file"):
        load_space(tmp_path / "nope.yaml")


def test_line_numbers_point_into_the_real_file(spark_text: str, tmp_path: Any) -> None:
    bad = spark_text.replace("    high: 0.70\n", "    high: 0.74\n")
    f = tmp_path / "capped.yaml"
    f.write_text(bad)
    with pytest.raises(SpaceError) as info:
        _check_file(f)
    line = next(i for i, t in enumerate(bad.splitlines(), 1) if t == "    high: 0.74")
    assert info.value.line == line
    assert str(info.value).startswith(f"{f}:{line}: knobs.mem_fraction.high:")


def _check_file(f: Any) -> None:
    make_engine("sglang").validate_space(load_space(f))


@pytest.mark.parametrize("path", [SPARK, H200])
def test_shipped_spaces_are_valid(path: Any) -> None:
    _check_file(path)


@pytest.mark.parametrize(("label", "fn", "path", "message"), CASES[:6] + CASES[11:13],
                         ids=[c[0] for c in CASES[:6] + CASES[11:13]])
def test_cli_validate_exits_2_with_one_line(tmp_path: Any, label: str, fn: Any, path: str,
                                            message: str) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text(mutate(fn))
    proc = subprocess.run(tuner_argv("space", "validate", str(f)), capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"error: {f}:") and path in lines[0] and message in lines[0]


# ---- property: no mutation of the valid file ever produces anything but a SpaceError ------

def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*prefix, i))
    return out


ALL_PATHS = _paths(BASE)[1:]
junk = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 10), st.floats(-2, 2, allow_nan=False),
    st.text(max_size=8), st.lists(st.integers(0, 3), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
    st.sampled_from(["NEXTN", "humming", "{value}", "{nope}", "--x", "off", "-1"]),
)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(ALL_PATHS), st.sampled_from(["set", "del", "add"]),
                          junk), min_size=1, max_size=3))
def test_random_mutations_never_crash(mutations: list[Any]) -> None:
    data = copy.deepcopy(BASE)
    for path, op, value in mutations:
        parent: Any = data
        try:
            for p in path[:-1]:
                parent = parent[p]
            last = path[-1]
            if op == "set":
                parent[last] = value
            elif op == "del":
                del parent[last]
            elif isinstance(parent, dict):
                parent[f"extra_{last}"] = value
        except (KeyError, IndexError, TypeError):
            continue
    text = yaml.safe_dump(data, sort_keys=False)
    try:
        _check(text)
    except SpaceError as exc:
        assert "\n" not in str(exc)
