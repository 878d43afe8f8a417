"""The Engine contract (:mod:`tuner.engines`' ``Engine``) as a test suite.

A subclass provides the fixtures ``engine`` (the adapter under test) and ``space`` (a
search space written for it; parametrise it to cover several), and optionally
``live_server``: a running server started from ``engine.plan(space, baseline)``, as a
``(base_url, headers)`` pair, for the protocol tests (skipped without it).
"""

from __future__ import annotations

import random
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import httpx
import pytest

from tuner.engines import ENGINES
from tuner.engines import Completion
from tuner.engines import Engine
from tuner.engines import LaunchPlan
from tuner.engines import ServerProtocol
from tuner.errors import ConfigError
from tuner.space import SearchSpace
from tuner.workloads import Prompt
from tuner.workloads import Sampling


def sampled_configs(space: SearchSpace, n: int = 60, seed: int = 0) -> list[dict[str, Any]]:
    """Up to ``n`` completed configurations of ``space`` (the baseline first)."""
    try:
        configs = list(space.iter_configs(limit=20_000))
    except ValueError:       # continuous knobs: sample their low ends only
        configs = []
    rng = random.Random(seed)
    return [space.complete({}), *rng.sample(configs, min(n, len(configs)))]


class EngineContract:
    """Shared tests; see the module docstring for the fixtures a subclass provides."""

    def test_the_space_validates(self, engine: Engine, space: SearchSpace) -> None:
        engine.validate_space(space)

    def test_the_engine_is_built_by_its_registration(self, engine: Engine,
                                                     space: SearchSpace) -> None:
        """One registration (``tuner.engines.register``) is the engine's only entry: its
        name's entry builds the same adapter, says whether it is simulated, and takes the
        flags of the spaces written for it."""
        entry = ENGINES[engine.name.partition(":")[0]]
        assert entry.speaks == space.spec.engine.name
        assert isinstance(engine.simulated, bool) and engine.simulated == entry.simulated
        variant = engine.name.partition(":")[2] or None
        assert variant is None or variant in entry.variants
        built = entry.build(variant, None, {})
        assert type(built) is type(engine) and built.name == engine.name
        assert built.simulated == engine.simulated

    def test_accept_length_is_tokens_per_verify_round(self) -> None:
        """The contract's accept length (what the gate's collapse rule reads): completion
        tokens per verify round of a speculative request, none for a plain one."""
        spec = Completion(text="", completion_tokens=12, prompt_tokens=3, first_s=0.1,
                          end_s=0.5, verify_rounds=5)
        assert spec.accept_length == pytest.approx(2.4)
        assert Completion(text="", completion_tokens=12, prompt_tokens=3, first_s=0.1,
                          end_s=0.5).accept_length is None

    def test_the_launch_host_reads_and_a_predicted_peak_is_positive_terms(
            self, engine: Engine, space: SearchSpace) -> None:
        """What the unified-memory guard asks before a launch: the host it will run on
        (its MemAvailable at most its MemTotal), the launch's peak (None, or terms >= 0)."""
        plan = engine.plan(space, engine.resolve(space, {}), port=31235)
        now = engine.launch_host(plan).read()
        assert now is not None and 0 < now.available_gib <= now.total_gib
        need = engine.memory_need(space, plan, available_gib=now.available_gib,
                                  visible_gib=space.spec.machine.memory_gib)
        assert need is None or (need.peak_gib > 0 and min(need.terms.values()) >= 0)

    def test_repaired_proposals_canonicalise_and_canonical_forms_are_fixed_points(
            self, engine: Engine, space: SearchSpace) -> None:
        for values in sampled_configs(space):
            repaired, _ = engine.repair(space, values)
            assert engine.repair(space, repaired) == (repaired, None)
            once = engine.canonicalize(space, repaired)
            assert engine.canonicalize(space, once.as_dict()) == once, values

    def test_plans_are_pure_argv_lists_with_evidence_for_every_knob(
            self, engine: Engine, space: SearchSpace) -> None:
        for values in sampled_configs(space, n=20):
            try:
                config = engine.canonicalize(space, values)
            except ConfigError:
                continue
            a = engine.plan(space, config, host="127.0.0.1", port=31234)
            b = engine.plan(space, config, host="127.0.0.1", port=31234)
            assert a == b and isinstance(a, LaunchPlan)
            assert all(isinstance(tok, str) for tok in a.argv)
            assert all(isinstance(k, str) and isinstance(v, str) for k, v in a.env.items())
            assert a.config == config.as_dict() and a.config_hash == config.hash()
            knobs = {ev.knob for ev in a.evidence}
            assert set(config.values) <= knobs
            assert "31234" in a.argv

    def test_the_api_key_never_enters_a_plan(self, engine: Engine, space: SearchSpace) -> None:
        plan = engine.plan(space, engine.resolve(space, {}))
        assert engine.secret_args(None) == []
        secret = engine.secret_args("k-contract-7")
        assert "k-contract-7" in secret and "k-contract-7" not in " ".join(plan.argv)

    def test_profile_files_serve_the_plan_and_are_valid_shell(
            self, engine: Engine, space: SearchSpace) -> None:
        plan = engine.plan(space, engine.resolve(space, {}))
        files = engine.profile_files(plan, entry=["serve-it"], model_path=space.spec.model.path,
                                     header="a header\nwith a newline; rm -rf /")
        assert "launch.sh" in files
        with tempfile.TemporaryDirectory() as tmp:
            for name, text in files.items():
                (Path(tmp) / name).write_text(text)
            assert subprocess.run(["bash", "-n", str(Path(tmp) / "launch.sh")]).returncode == 0
        assert "\nrm -rf" not in files["launch.sh"]       # the header stays a comment
        assert "serve-it" in files["launch.sh"]

    def test_the_protocol_names_a_health_path(self, engine: Engine) -> None:
        protocol = engine.protocol()
        assert isinstance(protocol, ServerProtocol) and protocol.health_path.startswith("/")
        assert protocol.classify_exit("") == "launch_error"
        assert protocol.classify_exit("torch.OutOfMemoryError: CUDA out of memory") == "oom"

    # -- against a running server (the subclass's ``live_server`` fixture) ---------------
    def test_a_live_server_answers_through_the_protocol(self, engine: Engine,
                                                        space: SearchSpace,
                                                        live_server: tuple[str, dict[str, str]]
                                                        ) -> None:
        url, headers = live_server
        plan = engine.plan(space, engine.resolve(space, {}))
        protocol = engine.protocol()
        with httpx.Client(base_url=url, headers=headers, timeout=60) as client:
            assert client.get(protocol.health_path).status_code == 200
            info = protocol.server_info(client)
            kept = protocol.kept_info(info)
            assert kept and set(kept) <= set(info)
            assert protocol.version(info)
            assert protocol.time_scale(info) > 0
            c = protocol.stream(client, Prompt("contract-1", Sampling(max_new_tokens=8),
                                               text="The capital of France is"))
        assert 1 <= c.completion_tokens <= 8 and c.prompt_tokens > 0
        assert 0 < c.first_s <= c.end_s
        # verify rounds (hence an accept length) come only from a speculative launch
        assert plan.speculative or (c.verify_rounds is None and c.accept_length is None)

    @pytest.fixture
    def live_server(self) -> Any:
        pytest.skip("no live server for this engine here")

