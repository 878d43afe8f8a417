"""Engine variants: stock 0.5.23 ignores the FP8 LM head; the unshared fork collapses MTP."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.conftest import SPARK
from tests.conftest import tuner_argv
from tests.simulator import running_sim


pytestmark = pytest.mark.slow
TRAP = {"moe_backend": "humming", "lm_head": "fp8", "speculative": "NEXTN"}


def doctor(engine: str) -> tuple[int, dict]:
    proc = subprocess.run(tuner_argv("doctor", str(SPARK), "--engine", engine, "--json"),
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "COLUMNS": "200"})
    return proc.returncode, json.loads(proc.stdout)


def test_doctor_on_stock_marks_fp8_lm_head_unsupported() -> None:
    rc, out = doctor("sim:stock")
    assert rc == 1 and out["found"] and out["version"] == "0.5.23"
    knobs = {k["knob"]: k for k in out["knobs"]}
    assert knobs["lm_head"]["status"] == "unsupported"
    assert "SGLANG_ENABLE_FP8_LM_HEAD" in knobs["lm_head"]["detail"]
    assert knobs["moe_backend"]["status"] == "supported"
    assert knobs["(fixed flags and env)"]["status"] == "supported"


def test_doctor_on_fork_supports_every_knob() -> None:
    rc, out = doctor("sim:fork")
    assert rc == 0
    assert {k["status"] for k in out["knobs"]} == {"supported"}


def _generate(base: str, n: int) -> list[dict]:
    metas = []
    with httpx.Client(base_url=base, timeout=60) as c:
        for i in range(n):
            r = c.post("/generate", json={"text": f"Tell me a story number {i}",
                                          "sampling_params": {"max_new_tokens": 64,
                                                              "temperature": 0.6}})
            metas.append(r.json()["meta_info"])
    return metas


def test_unshared_fork_collapses_to_accept_length_exactly_one(tmp_path: Path) -> None:
    with running_sim(tmp_path, TRAP, variant="fork-unshared") as s:
        metas = _generate(s.base_url, 5)
        log = s.log_path.read_text()
    # Every verify round yields only its bonus token: verify rounds = tokens - 1 (the first
    # token comes from prefill), so the per-request figure is n / (n - 1), 1.00 in the log.
    assert all(m["spec_verify_ct"] == m["completion_tokens"] - 1 for m in metas)
    assert all(m["spec_num_correct_drafts"] == 0 for m in metas)
    assert "Online FP8 quantization enabled for lm_head." in log   # nothing errors
    assert "accept len: 1.00," in log


def test_shared_fork_accepts_drafts(tmp_path: Path) -> None:
    with running_sim(tmp_path, TRAP, variant="fork") as s:
        metas = _generate(s.base_url, 5)
    assert sum(m["completion_tokens"] for m in metas) / sum(
        m["spec_verify_ct"] for m in metas) > 1.8


def test_stock_ignores_the_fp8_variable_silently(tmp_path: Path) -> None:
    with running_sim(tmp_path, {"lm_head": "fp8"}, variant="stock") as s:
        log = s.log_path.read_text()
        info = httpx.get(s.base_url + "/server_info", timeout=30).json()
    assert "Online FP8 quantization" not in log
    assert info["enable_fp32_lm_head"] is False
