"""End-to-end: the simulator as a real process, checked against SGLang 0.5.23's API."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import GSM8K_DIR
from tests.simulator import running_sim
from tests.simulator import sim_plan
from tuner.engines import make_engine
from tuner.trial._server import ServerProcess
from tuner.trial._server import StartupFailure
from tuner.workloads.gsm8k import load_split


pytestmark = pytest.mark.slow
OPTIMISED = {"moe_backend": "humming", "lm_head": "fp8", "speculative": "NEXTN"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    tmp = tmp_path_factory.mktemp("sim")
    with running_sim(tmp, OPTIMISED, extra_args=["--enable-metrics", "--api-key", "k3y"]) as s:
        s.api_key = "k3y"
        yield s


def _client(server: ServerProcess) -> httpx.Client:
    return httpx.Client(base_url=server.base_url, headers=server.headers(), timeout=60)


def stream_generate(client: httpx.Client, body: dict) -> list[dict]:
    chunks = []
    with client.stream("POST", "/generate", json={**body, "stream": True}) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        for line in r.iter_lines():
            if not line.startswith("data: "):
                continue
            if line == "data: [DONE]":
                break
            chunks.append(json.loads(line[6:]))
    return chunks


def test_server_info_reports_resolved_args(server: ServerProcess) -> None:
    with _client(server) as c:
        info = c.get("/server_info").json()
    assert info["moe_runner_backend"] == "humming"
    assert info["speculative_algorithm"] == "EAGLE"            # NEXTN is reported as EAGLE
    assert (info["speculative_num_steps"], info["speculative_eagle_topk"],
            info["speculative_num_draft_tokens"]) == (3, 1, 4)
    assert info["enable_fp32_lm_head"] is False
    assert info["mem_fraction_static"] == 0.68
    assert info["max_running_requests"] == 1                   # explicit: no reset to 48
    assert info["version"] == "0.5.23"
    assert info["launch_command"].startswith("sglang serve --model-path")
    assert info["max_total_num_tokens"] > 100_000
    assert info["time_scale"] == 200.0
    assert isinstance(info["cuda_graph_config"]["decode"]["bs"], list)
    state = info["internal_states"][0]
    assert "avg_spec_accept_length" in state and "memory_usage" in state


def test_stream_generate_meta_info(server: ServerProcess) -> None:
    test = load_split(GSM8K_DIR, "test")[:1]
    prompt = f"Question: {test[0].question}\nAnswer:"
    with _client(server) as c:
        chunks = stream_generate(c, {"text": prompt, "sampling_params": {
            "max_new_tokens": 64, "temperature": 0.6, "top_p": 0.95, "top_k": 29}})
    assert len(chunks) >= 2
    first, last = chunks[0], chunks[-1]
    assert first["meta_info"]["finish_reason"] is None
    m = last["meta_info"]
    assert m["finish_reason"]["type"] in ("length", "stop")
    for key in ("id", "prompt_tokens", "completion_tokens", "cached_tokens", "e2e_latency",
                "spec_verify_ct", "spec_accept_length", "spec_accept_rate",
                "spec_num_correct_drafts", "spec_num_proposed_drafts",
                "spec_correct_drafts_histogram"):
        assert key in m, key
    assert m["spec_accept_length"] == pytest.approx(m["completion_tokens"] / m["spec_verify_ct"])
    assert 1.0 <= m["spec_accept_length"] <= 4.0
    assert last["text"].startswith(first["text"])              # cumulative text


def test_openai_routes_and_model_info(server: ServerProcess) -> None:
    with _client(server) as c:
        models = c.get("/v1/models").json()
        assert models["data"][0]["id"] == "inclusionAI/Ling-3.0-flash-fp4"
        assert c.get("/model_info").json()["architectures"] == ["BailingMoeV3ForCausalLM"]
        comp = c.post("/v1/completions", json={"prompt": "Hello", "max_tokens": 5,
                                               "temperature": 0}).json()
        assert comp["object"] == "text_completion" and comp["usage"]["completion_tokens"] <= 5
        chat = c.post("/v1/chat/completions", json={
            "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 5,
            "return_meta_info": True}).json()
        assert chat["choices"][0]["message"]["role"] == "assistant"
        assert "spec_verify_ct" in chat["choices"][0]["meta_info"]
        bad = c.post("/v1/chat/completions", json={
            "messages": [{"role": "user", "content": "Hi"}], "stream": True,
            "return_meta_info": True})
        assert bad.status_code == 400


def test_api_key_is_enforced_except_health(server: ServerProcess) -> None:
    with httpx.Client(base_url=server.base_url, timeout=30) as c:
        assert c.get("/server_info").status_code == 401
        assert c.get("/health").status_code == 200
        assert c.get("/metrics").status_code == 200
        assert c.post("/generate", json={"text": "x"}).status_code == 401


def test_metrics_counters(server: ServerProcess) -> None:
    with _client(server) as c:
        before = c.get("/metrics").text
        c.post("/generate", json={"text": "Count", "sampling_params": {"max_new_tokens": 10}})
        after = c.get("/metrics").text

    def value(text: str, name: str) -> float:
        line = next(ln for ln in text.splitlines() if ln.startswith(name + "{"))
        return float(line.rsplit(" ", 1)[1])

    assert value(after, "sglang:generation_tokens_total") - value(
        before, "sglang:generation_tokens_total") == 10
    assert value(after, "sglang:spec_verify_calls_total") > value(
        before, "sglang:spec_verify_calls_total")
    assert "# TYPE sglang:spec_accept_length gauge" in after


def test_log_lines_match_sglang(server: ServerProcess) -> None:
    log = server.log_path.read_text()
    for needle in ["server_args={'model_path': 'inclusionAI/Ling-3.0-flash-fp4'",
                   "Preparing DeepSeekV4 MXFP4 experts for Humming backend (layer: ",
                   "Using indexed gemm for humming moe",
                   "Online FP8 quantization enabled for lm_head.",
                   "Load weight end. elapsed=", "KV Cache is allocated.",
                   "max_total_num_tokens=",
                   "Capture target verify CUDA graph begin. backend=full, num_tokens_per_req=4",
                   "The server is fired up and ready to roll!"]:
        assert needle in log, needle


def test_bad_choice_is_an_argparse_error(tmp_path: Path) -> None:
    plan = sim_plan(tmp_path)
    argv = [*plan.argv, "--moe-runner-backend", "hummingbird"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2
    assert "invalid choice: 'hummingbird'" in proc.stderr
    proc = subprocess.run([*plan.argv, "--cuda-graph-max-bs", "4"], capture_output=True,
                          text=True, timeout=30)
    assert proc.returncode == 2 and "ambiguous option" in proc.stderr


# ---- memory ----------------------------------------------------------------------------------

def test_cookbook_config_at_068_starts(tmp_path: Path) -> None:
    with running_sim(tmp_path, {"mem_fraction": 0.68}) as s, _client(s) as c:
        assert c.get("/server_info").json()["mem_fraction_static"] == 0.68


def _started_with_mem_fraction(tmp_path: Path, value: str) -> ServerProcess:
    """A simulator launched from the baseline plan with ``--mem-fraction-static value``."""
    plan = sim_plan(tmp_path)
    argv = [a if a != "0.68" else value for a in plan.argv]
    server = ServerProcess(plan.model_copy(update={"argv": argv}), tmp_path / f"{value}.log",
                           make_engine("sglang").protocol())
    server.start()
    return server


def test_mem_fraction_030_fails_with_sglang_text(tmp_path: Path) -> None:
    server = _started_with_mem_fraction(tmp_path, "0.3")
    with pytest.raises(StartupFailure) as info:
        server.wait_ready(30)
    server.stop()
    assert info.value.reason == "oom"
    assert ("Loaded weights leave no GPU memory for the KV cache under "
            "--mem-fraction-static=0.3") in info.value.log_tail


def test_above_gb10_cap_never_becomes_ready(tmp_path: Path) -> None:
    server = _started_with_mem_fraction(tmp_path, "0.75")
    with pytest.raises(StartupFailure) as info:
        server.wait_ready(4)      # start-up takes well under 1 s at this time scale
    assert info.value.reason == "startup_timeout"
    assert server.alive()
    server.stop()
    assert server.leftovers() == []
    assert "Memory pool end" in server.log_path.read_text()
    assert "fired up" not in server.log_path.read_text()


def test_sim_help_lists_flags_for_doctor() -> None:
    out = subprocess.run([sys.executable, "-m", "tuner_sim.stock", "serve", "--help"],
                         capture_output=True, text=True, timeout=30).stdout
    assert "--moe-runner-backend {auto," in out and "--enable-fp32-lm-head" in out


def test_each_launch_draws_its_own_speed_factor(tmp_path: Path) -> None:
    from tests.simulator import running_sim

    def factor(s: ServerProcess) -> float:
        return float(httpx.get(f"{s.base_url}/server_info").json()["launch_speed_factor"])

    factors = []
    for _ in range(2):
        with running_sim(tmp_path, TUNER_SIM_NOISE="0.02", TUNER_SIM_LAUNCH_CV="0.05") as s:
            factors.append(factor(s))
    assert factors[0] != factors[1] and all(0.7 < f < 1.3 for f in factors)
    with running_sim(tmp_path) as s:               # timing noise off: no launch factor either
        assert factor(s) == 1.0
