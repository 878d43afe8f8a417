"""The capacity knob (issue 33, item 1): the maximum of running requests, with the decode
CUDA graphs SGLang needs derived from it by the adapter, each proven by /server_info."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import SPARK
from tuner.engines import make_engine
from tuner.errors import SpaceError
from tuner.space import load_space
from tuner.space import parse_space
from tuner.trial._evidence import effect_check
from tuner_sim import args as sim_args
from tuner_sim.load import core_for
from tuner_sim.profiles import load_machine
from tuner_sim.profiles import load_model_for_path


ENGINE = make_engine("sglang")
SPACE = load_space(SPARK)
MACHINE = load_machine("dgx-spark")
MODEL = load_model_for_path(SPACE.spec.model.path)


def _flag(argv: list[str], flag: str) -> list[str]:
    i = argv.index(flag) + 1
    j = i
    while j < len(argv) and not argv[j].startswith("--"):
        j += 1
    return argv[i:j]


@pytest.mark.parametrize(("most", "sizes"), [(1, ["1"]), (2, ["1", "2"]),
                                             (8, ["1", "2", "4", "8"]),
                                             (16, ["1", "2", "4", "8", "16"])])
def test_the_decode_graphs_follow_the_maximum_of_running_requests(most: int,
                                                                  sizes: list[str]) -> None:
    plan = ENGINE.plan(SPACE, ENGINE.resolve(SPACE, {"max_running": most}))
    assert _flag(plan.argv, "--max-running-requests") == [str(most)]
    assert _flag(plan.argv, "--cuda-graph-max-bs-decode") == [str(most)]
    assert _flag(plan.argv, "--cuda-graph-bs-decode") == sizes
    assert plan.max_running == most
    assert any("derived from --max-running-requests" in n for n in plan.notes)


def _server_info(argv: list[str], env: dict[str, str]) -> dict[str, Any]:
    """The resolved settings a simulated 0.5.23 server reports for ``argv``."""
    ns = sim_args.build_parser().parse_args(argv[argv.index("--model-path"):])
    return sim_args.resolve(ns, architecture=MODEL.architecture,
                            capability=MACHINE.compute_capability,
                            model_context=MODEL.context_length, env=env,
                            memory_gb=MACHINE.memory_gib).args


def test_the_knob_and_its_graphs_are_proven_by_the_server_info() -> None:
    plan = ENGINE.plan(SPACE, ENGINE.resolve(SPACE, {"max_running": 8}))
    info = _server_info(plan.argv, plan.env)
    verdicts = {c.knob: c.verdict for c in effect_check(plan.evidence, info, "")}
    assert verdicts["max_running"] == "confirmed"
    derived = "(derived) --cuda-graph-max-bs-decode, --cuda-graph-bs-decode"
    assert verdicts[derived] == "confirmed"
    # a server that kept the cookbook's batch-1 graphs (a wrapper dropping the flags)
    kept = {**info, "cuda_graph_config": {**info["cuda_graph_config"], "decode": {
        **info["cuda_graph_config"]["decode"], "max_bs": 1, "bs": [1]}}}
    again = {c.knob: c.verdict for c in effect_check(plan.evidence, kept, "")}
    assert again[derived] == "mismatched"


@pytest.mark.parametrize("flag", ["--cuda-graph-max-bs-decode", "--cuda-graph-bs-decode"])
def test_a_space_fixing_the_graphs_beside_the_knob_is_refused_where_it_says_so(
        flag: str) -> None:
    text = SPARK.read_text().replace("  --cuda-graph-backend-decode: full\n",
                                     f"  --cuda-graph-backend-decode: full\n  {flag}: 1\n")
    space = parse_space(text, file="spark.yaml")
    with pytest.raises(SpaceError) as err:
        ENGINE.validate_space(space)
    line = text.splitlines().index(f"  {flag}: 1") + 1
    assert str(err.value).startswith(f"spark.yaml:{line}: fixed_flags.{flag}: {flag} is "
                                     "derived from knob 'max_running'")


def test_the_simulator_pads_a_batch_to_the_graph_that_holds_it() -> None:
    plan = ENGINE.plan(SPACE, ENGINE.resolve(SPACE, {"max_running": 16}))
    core = core_for(plan.argv[plan.argv.index("--model-path"):], MACHINE, MODEL)
    assert core.limits.graph_bs == (1, 2, 4, 8, 16)
    assert [core.limits.padded(b) for b in (1, 3, 5, 9, 16, 17)] == [1, 4, 8, 16, 16, 17]
    perf = core.perf
    from tests.sim_tests.test_schedule import _req

    batch = [_req(i) for i in range(5)]
    for r in batch:
        r.emitted = 10
    ctx = sum(r.prompt_tokens + r.emitted for r in batch)
    assert core.decode_ms(batch) == pytest.approx(perf.decode_ms(ctx / 8, "greedy", batch=8))
    assert core.decode_ms(batch) > perf.decode_ms(ctx / 5, "greedy", batch=5)  # padded costs


def test_a_launch_leaving_the_graph_sizes_to_sglang_is_not_padded() -> None:
    core = core_for(["--model-path", SPACE.spec.model.path, "--max-running-requests", "16"],
                    MACHINE, MODEL)
    assert core.limits.graph_bs == () and core.limits.padded(5) == 5
