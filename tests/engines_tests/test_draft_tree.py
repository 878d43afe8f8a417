"""The speculative-tree rule: configurations whose draft tree SGLang cannot build.

SGLang accepts ``--speculative-num-draft-tokens`` larger than the EAGLE tree of (steps,
top-k) holds, then fails at the first decode ("selected index k out of range" in
``organize_draft_results``). The engine adapter refuses them, a sweep repairs a sampled one,
and the simulator fails them at start-up as SGLang does.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import H200
from tests.conftest import SPARK
from tests.conftest import tuner_argv
from tests.simulator import sim_env
from tuner.engines import make_engine
from tuner.engines._sglang_rules import DRAFT_TOKENS
from tuner.engines._sglang_rules import STEPS
from tuner.engines._sglang_rules import TOPK
from tuner.engines._sglang_rules import draft_tree_capacity
from tuner.errors import ConfigError
from tuner.space import Config
from tuner.space import load_space
from tuner.trial._server import ServerProcess
from tuner.trial._server import StartupFailure
from tuner.trial._server import free_port
from tuner_sim.args import build_parser
from tuner_sim.args import resolve
from tuner_sim.perf import draft_tree_fits
from tuner_sim.perf import settings_from


ENGINE = make_engine("sglang")
SPEC = {"speculative": "NEXTN"}


def test_capacity_follows_the_draft_loop() -> None:
    # step 0 scores topk candidates, every later step topk * topk
    assert draft_tree_capacity(1, 2) == 2 and draft_tree_capacity(2, 2) == 6
    assert draft_tree_capacity(1, 4) == 4 and draft_tree_capacity(3, 4) == 36


@pytest.mark.parametrize(("steps", "topk", "draft"), [(1, 2, 4), (1, 2, 8), (1, 4, 6),
                                                      (1, 4, 8), (2, 2, 8)])
def test_the_examples_sglang_crashes_on_are_refused(steps: int, topk: int, draft: int) -> None:
    space = load_space(SPARK)
    with pytest.raises(ConfigError, match="draft tree"):
        ENGINE.resolve(space, {**SPEC, "spec_steps": steps, "spec_topk": topk,
                               "spec_draft_tokens": draft})


@pytest.mark.parametrize(("steps", "topk", "draft"), [(1, 2, 3), (1, 4, 5), (2, 2, 7),
                                                      (3, 2, 8), (2, 4, 8)])
def test_the_largest_trees_that_fit_are_kept(steps: int, topk: int, draft: int) -> None:
    cfg = ENGINE.resolve(load_space(SPARK), {**SPEC, "spec_steps": steps, "spec_topk": topk,
                                             "spec_draft_tokens": draft})
    assert cfg["spec_draft_tokens"] == draft


def test_a_sampled_overflow_is_repaired_to_the_largest_tree() -> None:
    space = load_space(SPARK)
    values = space.complete({**SPEC, "spec_steps": 1, "spec_topk": 4, "spec_draft_tokens": 8})
    repaired, why = ENGINE.repair(space, values)
    assert repaired["spec_draft_tokens"] == 5 and why and "8 -> 5" in why
    ENGINE.canonicalize(space, repaired)                       # now valid
    same, none = ENGINE.repair(space, repaired)
    assert same == repaired and none is None


def _sim_fits(argv: list[str]) -> bool:
    """The simulator's own verdict on a launch, from its parser and resolution rules."""
    ns = build_parser().parse_args(argv[argv.index("--model-path"):])
    res = resolve(ns, architecture="BailingMoeV3ForCausalLM", capability=(12, 1),
                  model_context=262144, env={}, memory_gb=128.0)
    return draft_tree_fits(settings_from(res.args, lambda _: None, True))


@pytest.mark.parametrize("path", [SPARK, H200], ids=["spark", "h200"])
def test_every_speculative_shape_of_both_spaces_agrees_with_the_simulator(path: Path) -> None:
    # Every configuration of the space, through the rule and through the simulator's own
    # start-up check; only (steps, topk, draft) decide either, so one launch per shape.
    space = load_space(path)
    shapes: dict[tuple, bool] = {}
    for values in space.iter_configs():
        if values.get("speculative") != "NEXTN":
            continue
        try:
            ENGINE.canonicalize(space, values)
            valid = True
        except ConfigError:
            valid = False
        shape = (values["spec_steps"], values["spec_topk"], values["spec_draft_tokens"])
        assert shapes.setdefault(shape, valid) == valid     # the rule sees only the shape
    assert sum(not v for v in shapes.values()) >= 9
    for (steps, topk, draft), valid in shapes.items():
        raw = space.complete({**SPEC, "spec_steps": steps, "spec_topk": topk,
                              "spec_draft_tokens": draft})
        argv = ENGINE.plan(space, Config(raw)).argv    # planned as sampled, not resolved
        assert {STEPS, TOPK, DRAFT_TOKENS} <= set(argv)
        assert _sim_fits(argv) == valid, (steps, topk, draft)


@pytest.mark.slow
def test_the_simulator_fails_a_refused_tree_at_start_up(tmp_path: Path) -> None:
    space = load_space(SPARK)
    engine = make_engine("sim:fork", sim_env=sim_env(tmp_path, 200.0))
    raw = space.complete({"moe_backend": "humming", **SPEC, "spec_steps": 1, "spec_topk": 4,
                          "spec_draft_tokens": 6})
    plan = engine.plan(space, Config(raw), port=free_port())
    server = ServerProcess(plan, tmp_path / "bad.log", engine.protocol())
    server.start()
    try:
        with pytest.raises(StartupFailure) as failure:
            server.wait_ready(60)
    finally:
        server.stop()
    assert failure.value.reason == "launch_error"
    assert "selected index k out of range" in failure.value.message
    good = engine.resolve(space, {**raw, "spec_draft_tokens": 5})
    server = ServerProcess(engine.plan(space, good, port=free_port()), tmp_path / "ok.log",
                           engine.protocol())
    server.start()
    try:
        server.wait_ready(60)
    finally:
        server.stop()


def test_plan_refuses_with_one_line_and_exit_2() -> None:
    out = subprocess.run(tuner_argv("plan", str(SPARK), "--set", "speculative=NEXTN",
                                    "--set", "spec_steps=1", "--set", "spec_topk=4",
                                    "--set", "spec_draft_tokens=8"),
                         capture_output=True, text=True)
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "draft tree" in out.stderr
    assert "Traceback" not in out.stderr


def test_space_show_counts_the_valid_configurations() -> None:
    out = subprocess.run(tuner_argv("space", "show", str(SPARK)), capture_output=True,
                         text=True)
    assert out.returncode == 0
    text = " ".join(out.stdout.split())          # rich wraps at the terminal width
    # NEXTN and off: 12,864; DSPARK adds 4 MoE kernels x 3 heads x 11 gammas x 16 fractions;
    # x 5 maxima of running requests (the capacity knob)
    assert "74,880 valid and distinct" in text and "8,640 refused" in text

