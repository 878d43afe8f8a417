"""The simulated machine's unified host memory: powered on by ``python -m tuner_sim host``,
taken step by step by a real simulator server, given back when it stops, wedging past its
last GiB."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.simulator import running_sim
from tuner.engines import read_meminfo
from tuner_sim.profiles import load_machine


GB_PER_GIB = 1024**3 / 1e9


def power_on(path: Path, **env: str) -> None:
    subprocess.run([sys.executable, "-m", "tuner_sim", "host", str(path)], check=True,
                   env={"PATH": "/usr/bin:/bin", **env}, timeout=60)


def test_powering_on_writes_the_idle_spark_and_an_h200_has_no_host(tmp_path: Path) -> None:
    spark = load_machine("dgx-spark").host
    assert spark is not None
    path = tmp_path / "host.meminfo"
    power_on(path, TUNER_SIM_MACHINE="dgx-spark", TUNER_SIM_HOST_BUSY_GIB="20")
    now = read_meminfo(path)
    assert now is not None and now.total_gib == pytest.approx(spark.memory_gib)
    assert now.available_gib == pytest.approx(spark.memory_gib - spark.idle_used_gib - 20)
    power_on(path, TUNER_SIM_MACHINE="h200")            # memory of its own: no host file
    assert not path.exists()


@pytest.mark.slow
def test_the_server_takes_host_memory_as_it_starts_and_powers_off_at_the_stop(
        tmp_path: Path) -> None:
    host = load_machine("dgx-spark").host
    assert host is not None
    idle = host.memory_gib - host.idle_used_gib
    hosts = tmp_path / "hosts"               # no client powered it on: the server does
    with running_sim(tmp_path, {"mem_fraction": 0.68}, TUNER_SIM_HOST_DIR=str(hosts)) as s:
        path = hosts / f"host-{s.plan.port}.meminfo"
        info = httpx.get(f"{s.base_url}/server_info").json()
        usage = info["internal_states"][0]["memory_usage"]
        now = read_meminfo(path)
        assert now is not None
        # its processes and CUDA context, then the fraction's whole budget (weights, KV
        # pool, state, graphs), then the activation workspace of the warm-up's prefill
        budget = 0.68 * usage["startup_available"] / GB_PER_GIB
        took = host.process_gib + load_machine("dgx-spark").runtime_reserved_gib + (
            budget + host.workspace_gib)
        assert now.available_gib == pytest.approx(idle - took, abs=0.05)
        assert usage["weight"] / GB_PER_GIB < budget
    assert not path.exists()                 # SIGTERM: its machine is powered off


@pytest.mark.slow
def test_past_its_last_gib_the_simulated_spark_wedges_instead_of_failing(tmp_path: Path
                                                                         ) -> None:
    grow = json.dumps([{"kind": "memory_growth", "after": 1, "gib": 40}])
    hosts = tmp_path / "hosts"
    with running_sim(tmp_path, {"mem_fraction": 0.68}, TUNER_SIM_HOST_DIR=str(hosts),
                     TUNER_SIM_FAULTS=grow) as s:
        path = hosts / f"host-{s.plan.port}.meminfo"
        body = {"text": "Hello", "sampling_params": {"max_new_tokens": 4, "temperature": 0}}

        def send() -> None:          # never answered: it ends when the server is stopped
            with contextlib.suppress(httpx.HTTPError):
                httpx.post(f"{s.base_url}/generate", json=body, timeout=None)

        threading.Thread(target=send, daemon=True).start()
        deadline = time.monotonic() + 120           # a safety net: the request forces it
        while "NV_ERR_NO_MEMORY" not in s.log_path.read_text():
            assert time.monotonic() < deadline and s.alive()
            time.sleep(0.1)
        now = read_meminfo(path)
        assert now is not None and now.available_gib < 0.5   # no out-of-memory error:
        assert s.alive()                                      # the machine hangs
        assert "Traceback" not in s.log_path.read_text()
