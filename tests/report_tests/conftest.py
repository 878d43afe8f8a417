from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import spark_searching_memory
from tests.sweep_tests.model_runner import ModelRunner
from tuner.engines import make_engine
from tuner.space import load_space
from tuner.study._storage import locate
from tuner.sweep._driver import Driver
from tuner.sweep._driver import SweepSettings
from tuner.trial import TrialOptions


STUDY = "ling-3.0-flash-dgx-spark"


@pytest.fixture(scope="session")
def mixed_study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A study with feasible, gated (MTP collapse: the LM-head module is not shared) and
    failed (too little memory: the memory fraction is searched) trials, made with the
    model-backed stand-in runner."""
    tmp = tmp_path_factory.mktemp("study")
    space = load_space(spark_searching_memory(tmp))
    settings = SweepSettings(study_name=STUDY, location=locate(str(tmp / "s.db"), STUDY),
                             trials=30, sampler="random", seed=12)
    runner = ModelRunner(seed=12, lm_head_module_shared=False)
    driver = Driver(space, make_engine("sim"), TrialOptions(workdir=tmp, workload=space.spec
                    .workload), settings, lambda: runner)
    driver.run()
    study = driver.sweep.study
    kinds = {("gated" if any(v > 0 for v in t.constraints.values()) else "feasible")
             for t in study.get_trials() if t.values}
    assert kinds == {"gated", "feasible"}
    assert any(not t.values for t in study.get_trials())
    return tmp / "s.db"


def chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed (.ci/run installs Debian's chromium)")
        pytest.skip("chromium is not installed here")
    return exe


def _headless(url: str, profile: Path, width: int, height: int, budget_ms: int,
              *action: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu",
                           "--disable-quic", "--no-first-run", "--disable-background-networking",
                           "--disable-component-update", "--disable-sync",
                           f"--user-data-dir={profile}", "--hide-scrollbars",
                           f"--window-size={width},{height}", f"--virtual-time-budget={budget_ms}",
                           *action, url], check=True, capture_output=True, text=True,
                          timeout=120)


def screenshot(url: str, out: Path, *, width: int = 1300, height: int = 1000,
               budget_ms: int = 8000) -> Path:
    _headless(url, out.parent / "chromium-profile", width, height, budget_ms,
              f"--screenshot={out}")
    return out


def rendered_dom(url: str, tmp: Path, *, width: int = 1400, height: int = 1400,
                 budget_ms: int = 15000) -> str:
    """The page's DOM after its scripts ran (plotly's SVG: ticks, points) in Chromium."""
    return _headless(url, tmp / "chromium-profile", width, height, budget_ms,
                     "--dump-dom").stdout


def colour_pixels(png: Path, rgb: tuple[int, int, int], tol: int = 12) -> int:
    from PIL import Image

    img = Image.open(png).convert("RGB")
    r0, g0, b0 = rgb
    return sum(1 for r, g, b in img.get_flattened_data()
               if abs(r - r0) <= tol and abs(g - g0) <= tol and abs(b - b0) <= tol)
