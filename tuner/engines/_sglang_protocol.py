"""SGLang's HTTP API as the trial pipeline uses it: ``/health``, ``/server_info``,
``/metrics`` and streamed native ``/generate`` with per-request ``meta_info``.

Field names and behaviour: docs/trials.md (from SGLang 0.5.23's ``http_server.py``;
checked against 0.5.17 on an H200, docs/real-sglang-h200.md). The simulator answers the
same API.
"""

from __future__ import annotations

import json
import re
import time
from typing import TYPE_CHECKING
from typing import Any

import httpx

from tuner.engines._base import Completion
from tuner.engines._base import RequestFailed
from tuner.engines._base import ServerProtocol


if TYPE_CHECKING:
    from tuner.workloads import Prompt


#: /server_info fields kept in a TrialResult (the full dict is large).
KEPT_FIELDS = (
    "version", "moe_runner_backend", "speculative_moe_runner_backend", "speculative_algorithm",
    "speculative_num_steps", "speculative_eagle_topk", "speculative_num_draft_tokens",
    "enable_fp32_lm_head", "mem_fraction_static", "max_running_requests",
    "max_total_num_tokens", "context_length", "attention_backend", "quantization",
    "cuda_graph_config", "page_size", "chunked_prefill_size", "time_scale", "startup_time",
    "flashinfer_mxfp4_moe_precision", "twin",
)
_OOM = re.compile(r"OutOfMemoryError|CUDA out of memory|Not enough memory|"
                  r"leave no GPU memory for the KV cache|out of memory", re.I)
_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit)\b[^:]*: ")
_UNSUPPORTED = re.compile(r"invalid choice|unrecognized arguments|ambiguous option")
#: the scheduler's batch lines (``Prefill batch, ...`` / ``Decode batch, ...``, every
#: ``--decode-log-interval`` steps): requests running and queued at that moment
_BATCH = re.compile(r"(?:Prefill|Decode) batch[,.].*?#running-req: (\d+).*?#queue-req: (\d+)")
_METRIC = re.compile(r"^([a-zA-Z_:][\w:]*)(\{[^}]*\})?\s+([-+0-9.eEinfa]+)$")


def body(prompt: Prompt) -> dict[str, Any]:
    """The native ``/generate`` request of ``prompt`` (streamed)."""
    s = prompt.sampling
    sp: dict[str, Any] = {"max_new_tokens": s.max_new_tokens, "temperature": s.temperature}
    if s.top_p != 1.0:
        sp["top_p"] = s.top_p
    if s.top_k != -1:
        sp["top_k"] = s.top_k
    if s.stop:
        sp["stop"] = list(s.stop)
    if s.ignore_eos:
        sp["ignore_eos"] = True
    out: dict[str, Any] = {"sampling_params": sp, "stream": True}
    if prompt.token_ids is not None:
        out["input_ids"] = list(prompt.token_ids)
    else:
        out["text"] = prompt.text
    return out


class SGLangProtocol(ServerProtocol):
    health_path = "/health"

    def server_info(self, client: httpx.Client) -> dict[str, Any]:
        resp = client.get("/server_info")
        resp.raise_for_status()
        info = resp.json()
        if not isinstance(info, dict):
            raise RequestFailed("/server_info did not answer a JSON object")
        return info

    def kept_info(self, info: dict[str, Any]) -> dict[str, Any]:
        return {k: info[k] for k in KEPT_FIELDS if k in info}

    def kv_tokens(self, info: dict[str, Any]) -> int | None:
        v = info.get("max_total_num_tokens")      # ServerArgs' resolved pool size
        return int(v) if isinstance(v, int | float) and not isinstance(v, bool) else None

    def version(self, info: dict[str, Any]) -> str | None:
        v = info.get("version")
        return str(v) if v is not None else None

    def time_scale(self, info: dict[str, Any]) -> float:
        """The simulator reports ``time_scale``; a real server has none (1)."""
        return float(info.get("time_scale", 1.0) or 1.0)

    def twin(self, info: dict[str, Any]) -> str | None:
        """The simulator reports ``twin`` beside ``time_scale``; a real server has none."""
        v = info.get("twin")
        return str(v) if v else None

    def metrics(self, client: httpx.Client) -> dict[str, float]:
        out: dict[str, float] = {}
        for line in client.get("/metrics").text.splitlines():
            if line.startswith("#") or not line.strip():
                continue
            m = _METRIC.match(line.strip())
            if m:
                out[m.group(1)] = out.get(m.group(1), 0.0) + float(m.group(3))
        return out

    def batch_load(self, log_text: str) -> tuple[int, int] | None:
        seen = [(int(m.group(1)), int(m.group(2))) for m in _BATCH.finditer(log_text)]
        if not seen:
            return None
        return max(r for r, _ in seen), max(q for _, q in seen)

    def stream(self, client: httpx.Client, prompt: Prompt) -> Completion:
        t0 = time.perf_counter()
        first: float | None = None
        end = t0
        last: dict[str, Any] | None = None
        rid = prompt.id
        try:
            with client.stream("POST", "/generate", json=body(prompt)) as resp:
                if resp.status_code != 200:
                    resp.read()
                    raise RequestFailed(f"{rid}: HTTP {resp.status_code}: {resp.text[:200]}")
                for line in resp.iter_lines():
                    if not line.startswith("data:"):
                        continue
                    data = line[5:].strip()
                    if data == "[DONE]":
                        break
                    end = time.perf_counter()      # arrival of the latest chunk
                    if first is None:
                        first = end
                    last = json.loads(data)
        except httpx.HTTPError as exc:
            raise RequestFailed(f"{rid}: {exc.__class__.__name__}: {exc}") from None
        except json.JSONDecodeError as exc:
            raise RequestFailed(f"{rid}: malformed stream chunk ({exc})") from None
        if last is None or first is None:
            raise RequestFailed(f"{rid}: the stream ended without output")
        meta = last.get("meta_info") or {}
        verify = meta.get("spec_verify_ct")
        reason = meta.get("finish_reason")
        return Completion(
            text=last.get("text", ""), completion_tokens=int(meta.get("completion_tokens", 0)),
            prompt_tokens=int(meta.get("prompt_tokens", 0)), first_s=first - t0,
            end_s=end - t0, cached_tokens=meta.get("cached_tokens"),
            verify_rounds=int(verify) if verify else None,
            finish_reason=reason.get("type") if isinstance(reason, dict) else reason)

    def classify_exit(self, log_tail: str) -> str:
        if _OOM.search(log_tail):
            return "oom"
        if _UNSUPPORTED.search(log_tail):
            return "unsupported_knob"
        return "launch_error"

    def last_error_line(self, log_tail: str) -> str:
        lines = [re.sub(r"^\[[\d\- :]+\]\s*", "", ln.strip())
                 for ln in log_tail.splitlines() if ln.strip()]
        # a Python exception line first ("torch.AcceleratorError: CUDA error: out of memory"),
        # not CUDA's advice after it ("Search for `cudaErrorMemoryAllocation' ...")
        for ln in reversed(lines):
            if _EXCEPTION_LINE.match(ln):
                return ln[:300]
        for ln in reversed(lines):
            if re.search(r"(Error|error:|Exception)", ln) and "Traceback" not in ln:
                return ln[:300]
        return (lines[-1] if lines else "no output")[:300]
