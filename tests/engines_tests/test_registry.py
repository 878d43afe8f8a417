"""The engine registry: one registration is all a new engine needs to be built by name and
accepted by the space check."""

from __future__ import annotations

import pytest

from tests.conftest import SPARK
from tuner.cli._common import load_checked_space
from tuner.engines import ENGINES
from tuner.engines import EngineEntry
from tuner.engines import SGLangEngine
from tuner.engines import make_engine
from tuner.engines import register
from tuner.engines import space_engines
from tuner.errors import UserError


def test_the_shipped_engines_and_the_dialect_they_speak() -> None:
    assert set(ENGINES) == {"sglang", "sim"}
    assert space_engines() == ["sglang"]
    assert not make_engine("sglang").simulated
    sim = make_engine("sim")
    assert sim.simulated and sim.name == "sim:fork"       # the first variant is the default


@pytest.mark.parametrize("spec, message", [
    ("vllm", "unknown engine 'vllm'; expected sglang, sim or sim:VARIANT"),
    ("sglang:fork", "unknown engine 'sglang:fork'"),
    ("sim:nope", "unknown simulator variant 'nope'; expected one of fork, stock"),
])
def test_unknown_names_are_one_line_errors(spec: str, message: str) -> None:
    with pytest.raises(UserError, match=message):
        make_engine(spec)


def test_a_name_registers_once() -> None:
    with pytest.raises(ValueError, match="registered twice"):
        register(ENGINES["sglang"])


def test_one_registration_adds_an_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[tuple[str | None, list[str] | None, dict[str, str]]] = []

    def toy(variant: str | None, command: list[str] | None, env: dict[str, str]
            ) -> SGLangEngine:
        built.append((variant, command, env))
        return SGLangEngine(command, name=f"toy:{variant}")

    monkeypatch.setitem(ENGINES, "toy", EngineEntry("toy", toy, speaks="toyflags",
                                                    variants={"a": "x", "b": "y"}))
    engine = make_engine("toy:b", command=["serve-toy"], sim_env={"K": "1"})
    assert engine.name == "toy:b" and built == [("b", ["serve-toy"], {"K": "1"})]
    assert make_engine("toy").name == "toy:a"
    assert space_engines() == ["sglang", "toyflags"]


def test_a_space_naming_an_unregistered_engine_is_a_located_error(tmp_path) -> None:
    text = SPARK.read_text()
    assert "name: sglang" in text
    path = tmp_path / "space.yaml"
    path.write_text(text.replace("name: sglang", "name: toyflags", 1))
    with pytest.raises(Exception, match="unknown engine 'toyflags'; expected one of sglang"):
        load_checked_space(path)
