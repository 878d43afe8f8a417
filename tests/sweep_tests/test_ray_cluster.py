"""Trials on a Ray cluster of several nodes (Ray's own multi-node test cluster, on this
machine): placement is recorded per trial, and a node removed mid-trial loses only that
launch: the trial is ``worker_lost``, re-queued once and finished on the other node, and
the removed node's server is gone."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import psutil
import pytest

from tests.conftest import GSM8K_DIR
from tests.conftest import SPARK
from tests.sweep_tests import carries
from tests.sweep_tests import new_mark
from tuner.engines import make_engine
from tuner.space import load_space
from tuner.study._storage import locate
from tuner.sweep._base import Outcome
from tuner.sweep._driver import Driver
from tuner.sweep._driver import SweepSettings
from tuner.sweep._ray import SIM_RESOURCE
from tuner.sweep._ray import RayRunner
from tuner.trial import TrialOptions


pytestmark = pytest.mark.slow


def _marked(mark: str, besides: frozenset[int] = frozenset()) -> list[int]:
    """Live (non-zombie) processes whose environment carries ``mark``, other than
    ``besides`` (pids seen earlier: a process's start time is not compared with the wall
    clock, which a paused virtual machine sets apart from it)."""
    return [p.pid for p in psutil.process_iter(["status"])
            if p.info["status"] != psutil.STATUS_ZOMBIE and p.pid not in besides
            and carries(p.pid, mark)]


def test_trials_land_on_two_nodes_and_a_removed_node_loses_one_launch(tmp_path: Path) -> None:
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})  # no trial slot
    first = cluster.add_node(num_cpus=1, resources={SIM_RESOURCE: 1})
    cluster.wait_for_nodes()
    nodes = {"first": first.node_id}
    serving: list[int] = []
    removed = threading.Event()
    mark = new_mark()

    class MovingCluster(RayRunner):
        """On the third launch (on the first node, the only one with a slot): as soon as that
        trial's server exists (it takes 4 s of wall time to start here), the first node is
        removed; then a second node joins (from the driver's thread: Ray starts nodes only
        from the main thread). The cut waits for the server itself, not for a fixed time, so
        a loaded machine cannot make it miss the trial."""

        submitted = 0

        def submit(self, job: object) -> None:
            since = frozenset(_marked(mark))         # the earlier trials' servers
            super().submit(job)  # type: ignore[arg-type]
            MovingCluster.submitted += 1
            if MovingCluster.submitted == 3:
                threading.Thread(target=cut, args=(since,), daemon=True).start()

        def poll(self, timeout: float) -> list[Outcome]:
            if removed.is_set() and "second" not in nodes:
                nodes["second"] = cluster.add_node(num_cpus=1,
                                                   resources={SIM_RESOURCE: 1}).node_id
            return super().poll(timeout)

    def cut(since: frozenset[int]) -> None:
        deadline = time.monotonic() + 120
        while not serving and time.monotonic() < deadline:
            serving.extend(_marked(mark, since))   # the third trial's server, starting
            time.sleep(0.05)
        cluster.remove_node(first, allow_graceful=False)
        removed.set()

    space = load_space(SPARK)
    engine = make_engine("sim", sim_env={
        "TUNER_SIM_TIME_SCALE": "300", mark.split("=")[0]: mark.split("=")[1],
        "TUNER_SIM_FAULTS": json.dumps([{"kind": "slow_start", "seconds": 1200}])})
    opts = TrialOptions(workdir=tmp_path, workload=space.spec.workload.model_copy(
        update={"questions": 4}), gsm8k=str(GSM8K_DIR), startup_timeout_s=60)
    settings = SweepSettings(study_name="s", location=locate(str(tmp_path / "s.db"), "s"),
                             trials=6, seed=1, finals_share=0.0, deadline_s=300)
    try:
        study = Driver(space, engine, opts, settings, lambda: MovingCluster(
            address=cluster.address, gpu=False, slots=None)).run()
        time.sleep(3)
        orphans = _marked(mark)
    finally:
        cluster.shutdown()
    rows = study.summaries()
    lost = [r for r in rows if r.reason == "worker_lost"]
    assert len(lost) == 1 and lost[0].recovered and lost[0].number == 2
    retry = [r for r in rows if r.number != 2 and r.config_hash == lost[0].config_hash]
    assert len(retry) == 1 and retry[0].state == "COMPLETE"
    assert retry[0].worker == nodes["second"]                 # finished on the other node
    placed = {r.worker for r in rows if r.state == "COMPLETE"}
    assert placed == {nodes["first"], nodes["second"]}        # trials ran on both nodes
    assert sum(r.launched for r in rows) == 6                 # the lost launch not counted
    assert serving and orphans == []            # the removed node's server is gone too
