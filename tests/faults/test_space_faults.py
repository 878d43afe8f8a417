"""Space validation gaps (issue 24, items 8 and 10): plainly invalid values (a top-k of
``four``, ``-1e308``, ``.nan`` or 10**30, no GPUs, no memory, an empty model path or
command, ``schema_version: true``, inf/nan flag values) are refused at validation with one
located line naming the key, not accepted to crash ``plan``, ``trial`` or ``space show``
later; thousands of conditions written child-first resolve (a recursion stopped at 1,000);
and an error never echoes a key's control or bidirectional characters raw."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from benchmarks.fuzz_spaces import MUST_REFUSE
from benchmarks.fuzz_spaces import chain_space
from benchmarks.fuzz_spaces import must_refuse_text
from tests.conftest import SPARK
from tests.conftest import tuner_argv
from tuner.engines import make_engine
from tuner.errors import UserError
from tuner.space import parse_space


ENGINE = make_engine("sglang")


def _validate(text: str) -> None:
    ENGINE.validate_space(parse_space(text, file="mutant.yaml"))


@pytest.mark.parametrize(("prefix", "line", "key"), MUST_REFUSE,
                         ids=[f"{k}={ln.split(':', 1)[1].strip()[:24]}"
                              for _, ln, k in MUST_REFUSE])
def test_a_plainly_invalid_value_is_refused_naming_its_key(prefix: str, line: str,
                                                           key: str) -> None:
    with pytest.raises(UserError) as err:
        _validate(must_refuse_text(SPARK.read_text(), prefix, line))
    message = str(err.value)
    assert message.startswith("mutant.yaml:") and f": {key}" in message, message
    assert "\n" not in message


@pytest.mark.parametrize(("choice", "expected"), [
    ("four", "takes an integer"), ("-1e308", "takes an integer"),
    (".nan", "finite number"), ("1" + "0" * 30, "out of range")])
def test_a_non_integer_top_k_is_refused_before_plan_can_crash_on_it(
        tmp_path: Path, choice: str, expected: str) -> None:
    space = tmp_path / "space.yaml"
    space.write_text(SPARK.read_text().replace("    choices: [1, 2, 4]",
                                               f"    choices: [1, 2, {choice}]", 1))
    for argv in (["space", "validate", str(space)], ["space", "show", str(space)],
                 ["plan", str(space), "--set", "speculative=NEXTN", "--set",
                  f"spec_topk={choice}"]):
        proc = subprocess.run(tuner_argv(*argv), capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2, (argv, proc.stdout + proc.stderr)
        assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1
        assert f"{space}:" in proc.stderr and "knobs.spec_topk.choices[2]" in proc.stderr
        assert expected in proc.stderr


def test_five_thousand_conditions_written_child_first_resolve() -> None:
    space = parse_space(chain_space(5000), file="chain.yaml")
    ENGINE.validate_space(space)
    assert space.order[0] == "c4999" and space.order[-1] == "c0"    # parents first
    assert space.complete({}) == {"c4999": False}
    every = dict.fromkeys(space.order, True)
    assert space.complete(every) == every
    first = next(space.iter_configs())
    assert first == {"c4999": False}


def test_a_cycle_of_five_thousand_conditions_is_one_short_located_line() -> None:
    with pytest.raises(UserError, match="conditions form a cycle") as err:
        parse_space(chain_space(5000, cycle=True), file="chain.yaml")
    message = str(err.value)
    assert message.startswith("chain.yaml:10: knobs.c0.when:") and len(message) < 300
    assert "(5000 knobs)" in message and message.endswith("c4999 -> c0")


def test_space_show_counts_a_chain_of_1500_conditions(tmp_path: Path) -> None:
    path = tmp_path / "chain.yaml"
    path.write_text(chain_space(1500))
    proc = subprocess.run(tuner_argv("space", "show", str(path)), capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "1,501 configurations" in proc.stdout          # c1499 off, or on with a tail


@pytest.mark.parametrize("key", ["evil\u202ekey", "bell\x07\x1b[31mred", "two\nlines"])
def test_an_error_escapes_control_and_bidirectional_characters_of_a_key(
        tmp_path: Path, key: str) -> None:
    path = tmp_path / "space.yaml"
    quoted = key.encode("unicode_escape").decode().replace('"', '\\"')
    path.write_text(SPARK.read_text() + f'"{quoted}": 1\n')
    proc = subprocess.run(tuner_argv("space", "validate", str(path)), capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2 and "unknown key" in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.isascii()
    assert quoted in proc.stderr                     # shown escaped, readable
    with pytest.raises(UserError) as err:
        parse_space(path.read_text(), file="space.yaml")
    assert str(err.value).isprintable()


@pytest.mark.parametrize(("old", "new", "located"), [
    ("  top_k: 29", "  top_k: 1" + "0" * 30, "workload.top_k: input should be less than"),
    ("  top_k: 29", "  top_k: 0", "workload.top_k: value error, top_k 0 samples nothing"),
    ("    low: 0.55", "    low: -0.5",
     "knobs.mem_fraction.low: --mem-fraction-static -0.5 is out of range: a share of the "
     "GPU's memory, in (0, 1]"),
    ("    choices: [1, 2, 4]", "    choices: [0, 1, 2, 4]",
     "knobs.spec_topk.choices[0]: --speculative-eagle-topk 0 is out of range"),
])
def test_an_absurd_top_k_a_negative_memory_fraction_and_a_top_k_choice_of_0_are_refused(
        tmp_path: Path, old: str, new: str, located: str) -> None:
    """Issue 34 item 4, finding 7: these space values were accepted (a top-k of 10**30 sent
    to the server, a memory fraction below 0, a draft tree of 0 branches)."""
    text = SPARK.read_text()
    assert old in text
    space = tmp_path / "space.yaml"
    space.write_text(text.replace(old, new, 1))
    proc = subprocess.run(tuner_argv("space", "validate", str(space)), capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if ln.startswith(old))
    assert f"{space}:{line}: {located}" in proc.stderr, proc.stderr
