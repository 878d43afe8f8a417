"""The Engine contract (tuner.testing.EngineContract) against SGLang's adapter, for every
shipped space, and against the simulator with a live server."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import SPACES
from tests.conftest import SPARK
from tests.simulator import running_sim
from tuner.engines import make_engine
from tuner.space import load_space
from tuner.testing import EngineContract


@pytest.fixture(params=sorted(SPACES.glob("*.yaml")), ids=lambda p: p.stem)
def space(request: pytest.FixtureRequest):
    return load_space(request.param)


class TestSGLangEngine(EngineContract):
    @pytest.fixture
    def engine(self):
        return make_engine("sglang")


class TestSimulatorEngine(EngineContract):
    @pytest.fixture
    def engine(self):
        return make_engine("sim")

    @pytest.fixture
    def space(self):
        return load_space(SPARK)

    @pytest.fixture
    def live_server(self, tmp_path: Path):
        with running_sim(tmp_path, {}, scale=200.0) as server:
            yield server.base_url, server.headers()
