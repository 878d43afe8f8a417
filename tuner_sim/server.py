"""The simulator's server process: SGLang 0.5.23's start-up, log lines and HTTP API.

Settings that are not SGLang's come from ``TUNER_SIM_*`` env vars (documented in
``docs/simulator.md``): machine profile, time scale, noise, seed, GSM8K data, faults.
Figures the server reports over HTTP (latencies) are wall-clock seconds, as a real server's;
``/server_info`` carries ``time_scale`` so a client can convert them to machine time. Log
lines show machine time, as the simulated machine would print them.
"""

from __future__ import annotations

import atexit
import gc
import json
import math
import os
import random
import sys
import threading
import time
import uuid
from datetime import datetime
from http.server import BaseHTTPRequestHandler
from http.server import ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any

from tuner_sim import args as sim_args
from tuner_sim import host as sim_host
from tuner_sim import speculative as sim_speculative
from tuner_sim.args import LaunchError
from tuner_sim.config_file import merge_or_exit
from tuner_sim.content import classify
from tuner_sim.derive import block_declared
from tuner_sim.derive import config_path
from tuner_sim.derive import derive_draft
from tuner_sim.derive import describe
from tuner_sim.engine import Engine
from tuner_sim.engine import SimRequest
from tuner_sim.engine import crash_now
from tuner_sim.gsm8k import FILLER
from tuner_sim.gsm8k import Gsm8kOracle
from tuner_sim.gsm8k import answer_tokens
from tuner_sim.gsm8k import count_tokens
from tuner_sim.gsm8k import is_correct
from tuner_sim.gsm8k import output_length
from tuner_sim.gsm8k import uniform
from tuner_sim.humaneval import HumanEvalOracle
from tuner_sim.humaneval import reply_tokens
from tuner_sim.memory import launch_weights_gb
from tuner_sim.memory import plan_memory
from tuner_sim.parallel import describe_tp
from tuner_sim.parallel import per_rank
from tuner_sim.perf import PerfModel
from tuner_sim.perf import Settings
from tuner_sim.perf import draft_tree_fits
from tuner_sim.perf import settings_from
from tuner_sim.profiles import DERIVED
from tuner_sim.profiles import DenseDraft
from tuner_sim.profiles import load_machine
from tuner_sim.profiles import load_model_for_path
from tuner_sim.schedule import Limits


def _common_prefix_len(a: str, b: str) -> int:
    """Length of the common prefix, by binary search over slice comparisons (C speed)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def log(msg: str) -> None:
    stamp = datetime.now().strftime("%Y-%m-%d %H:%M:%S")
    sys.stderr.write(f"[{stamp}] {msg}\n")
    sys.stderr.flush()


class Faults:
    """Injected faults: ``TUNER_SIM_FAULTS`` (a JSON list of ``{"kind", "when", ...}``) or
    ``TUNER_SIM_FAULT`` (``kind[:arg]``). ``when`` maps resolved server-arg names (or the
    server's environment variables) to a value or list of values; all must match for the
    fault to apply."""

    KINDS = ("crash_at_start", "oom_at_start", "crash_after", "hang", "ignore_flag",
             "slow_start", "accuracy_drop", "memory_growth")

    def __init__(self, env: dict[str, str]) -> None:
        items: list[dict[str, Any]] = []
        if env.get("TUNER_SIM_FAULTS"):
            items = json.loads(env["TUNER_SIM_FAULTS"])
        if env.get("TUNER_SIM_FAULT"):
            kind, _, arg = env["TUNER_SIM_FAULT"].partition(":")
            items.append({"kind": kind, "arg": arg})
        for f in items:
            if f.get("kind") not in self.KINDS:
                raise SystemExit(f"TUNER_SIM_FAULTS: unknown fault {f.get('kind')!r}; "
                                 f"expected one of {', '.join(self.KINDS)}")
            bad = set(self._classes(f)) - set(self.SCORED)
            if f["kind"] == "accuracy_drop" and bad:
                raise SystemExit(f"TUNER_SIM_FAULTS: accuracy_drop content {sorted(bad)}: "
                                 f"expected {' or '.join(self.SCORED)}")
        self.items = items
        self.env = env

    #: the content classes whose answers are right or wrong (an accuracy_drop's ``content``)
    SCORED = ("math", "code")

    @staticmethod
    def _classes(f: dict[str, Any]) -> list[str]:
        c = f.get("content", "math")
        return [str(x) for x in c] if isinstance(c, list) else [str(c)]

    def _applies(self, f: dict[str, Any], resolved: dict[str, Any]) -> bool:
        for k, v in (f.get("when") or {}).items():
            allowed = v if isinstance(v, list) else [v]
            if (resolved[k] if k in resolved else self.env.get(k)) not in allowed:
                return False
        return True

    def active(self, resolved: dict[str, Any]) -> dict[str, dict[str, Any]]:
        return {f["kind"]: f for f in self.items if self._applies(f, resolved)}

    def accuracy_drops(self, resolved: dict[str, Any]) -> dict[str, float]:
        """Points taken off each class's accuracy by the ``accuracy_drop`` faults that
        apply (their sum: one per class and condition can be given)."""
        out: dict[str, float] = {}
        for f in self.items:
            if f["kind"] == "accuracy_drop" and self._applies(f, resolved):
                for c in self._classes(f):
                    out[c] = out.get(c, 0.0) + float(f.get("arg") or 0.0)
        return out


class SimServer:
    def __init__(self, variant: ModuleType, argv: list[str], env: dict[str, str]) -> None:
        self.variant = variant
        self.env = env
        self.known_env = set(variant.environ.ENV_VARS)
        self.parser = sim_args.build_parser()
        argv = merge_or_exit(self.parser, list(argv))
        self.ns = self.parser.parse_args(argv)
        self.launch_command = "sglang serve " + " ".join(argv)
        self.scale = float(env.get("TUNER_SIM_TIME_SCALE", "1") or 1)
        self.noise = float(env.get("TUNER_SIM_NOISE", "0.02") or 0)
        self.seed = int(env.get("TUNER_SIM_SEED", "0") or 0)
        # launch-to-launch variation (docs/simulator.md): one mean-1 lognormal factor per
        # launch, drawn afresh every time (the same configuration launched twice differs,
        # as on a real machine); none when timing noise is off
        cv = float(env.get("TUNER_SIM_LAUNCH_CV", "0.02" if self.noise > 0 else "0") or 0)
        sigma = math.sqrt(math.log(1 + cv * cv))
        self.launch_factor = (math.exp(random.SystemRandom().gauss(-sigma * sigma / 2, sigma))
                              if cv > 0 else 1.0)
        self.faults = Faults(env)
        self.ready = False
        self.startup_wall = time.monotonic()
        self.prefixes: list[str] = []
        self.finished_user_requests = 0
        self.lock = threading.Lock()
        #: the simulated machine's host memory (unified memory; tuner_sim/host.py)
        self.host: sim_host.SimHost | None = None
        self.wedged = False
        self.growth: dict[str, Any] | None = None
        self.answered = 0

    def sim_env(self, name: str) -> str | None:
        """An SGLang env var, as the emulated engine sees it (unknown ones are ignored)."""
        return self.env.get(name) if name in self.known_env else None

    def sleep(self, machine_s: float) -> None:
        time.sleep(max(0.0, machine_s) / self.scale)

    # -- start-up --------------------------------------------------------------------------
    def start(self) -> None:
        try:
            self.machine = load_machine(self.env.get("TUNER_SIM_MACHINE", "dgx-spark"))
        except LookupError as exc:
            raise SystemExit(f"tuner_sim: {exc}") from None
        self.host = sim_host.attach(self.env, self.machine.host)
        if self.host is not None and self.machine.host is not None:
            atexit.register(self.host.release)
            self._take("processes", self.machine.host.process_gib
                       + self.machine.runtime_reserved_gib)
        try:
            self.model = load_model_for_path(self.ns.model_path)
        except LookupError:
            self._die("OSError", f"{self.ns.model_path} is not a local folder and is not a "
                                 "valid model identifier listed on 'https://huggingface.co/"
                                 "models' (simulator: no model profile matches it)")
        except ValueError as exc:           # a config.json the derived twin cannot read
            self._die("ValueError", f"simulator: cannot derive a twin of "
                                    f"{self.ns.model_path}: {exc}")
        if self.model.twin == DERIVED:
            log(f"simulator: DERIVED twin of {self.ns.model_path} (no calibrated profile "
                f"matches it): {describe(self.model)}")
        try:
            res = sim_args.resolve(self.ns, architecture=self.model.architecture,
                                   capability=self.machine.compute_capability,
                                   model_context=self.model.context_length, env=self.env,
                                   memory_gb=self.machine.memory_gib,
                                   draft_block=self._draft_block())
        except LaunchError as exc:
            self._die(exc.exc_type, exc.message)
        a = res.args
        self._check_draft(a)
        faults = self.faults.active(a)
        #: ``accuracy_drop`` (arg: points; ``content``: the class, math by default, or a
        #: list): that class's accuracy that much lower, the same questions every launch
        #: (docs/simulator.md); several add up
        self.accuracy_drop_pp = self.faults.accuracy_drops(a)
        self.growth = faults.get("memory_growth")
        if "ignore_flag" in faults:
            self._ignore_flag(a, str(faults["ignore_flag"].get("arg", "")))
        self.args = a
        if int(a["tp_size"] or 1) > 1:       # rank 0's share; the all-reduces' cost
            self.model, self.machine = per_rank(self.model, self.machine, int(a["tp_size"]))
            log(describe_tp(self.model, int(a["tp_size"])))
        for w in res.warnings:
            log(f"WARNING {w}")
        log(f"server_args={a!r}")
        for line in res.logs:
            log(line)
        self.gsm8k = Gsm8kOracle(self.env.get("TUNER_SIM_GSM8K"))
        self.humaneval = HumanEvalOracle(self.env.get("TUNER_SIM_HUMANEVAL") or None)
        settings = self._settings(a)
        self.settings = settings
        self.perf = PerfModel(self.machine, self.model, settings)
        q = self.model.quantization
        if q.get("experts") == "mxfp4" and q.get("dense") == "fp8":
            log("Detected mixed checkpoint layout: routed experts are MXFP4.")
        if settings.lm_head == "fp8":
            log("Online FP8 quantization enabled for lm_head.")
        if "oom_at_start" in faults:
            log("Load weight begin. avail mem=126.70 GB")
            self.sleep(5)
            self._die("torch.OutOfMemoryError", "CUDA out of memory. Tried to allocate 2.00 "
                      "GiB. GPU 0 has a total capacity of "
                      f"{self.machine.memory_gib:.2f} GiB of which 1.12 GiB is free.")
        if "crash_at_start" in faults:
            log("Load weight begin. avail mem=126.70 GB")
            self.sleep(3)
            self._die("RuntimeError", "simulated crash during start-up (TUNER_SIM_FAULTS)")
        st = self.machine.startup
        extra = float(faults.get("slow_start", {}).get("seconds", 0.0) or faults.get(
            "slow_start", {}).get("arg", 0.0) or 0.0)
        self.sleep(st.process_s + extra)
        try:
            mem = plan_memory(self.machine, self.model, a)
        except LaunchError as exc:
            mem = None
            err = exc
        free0 = self.machine.memory_gib * 1.073741824 - self.machine.runtime_reserved_gib
        log(f"Load weight begin. avail mem={free0:.2f} GB")
        weights = launch_weights_gb(self.machine, self.model, a)
        load_s = weights / st.weight_load_gbs
        if mem is None and err.exc_type == "torch.OutOfMemoryError":
            self.sleep(min(weights, free0) / st.weight_load_gbs)   # the shard that fails
            self._die(err.exc_type, err.message)
        self.sleep(load_s)
        if a["moe_runner_backend"] == "humming":
            for i in range(self.model.layers - self.model.moe_layers, self.model.layers):
                log("Preparing DeepSeekV4 MXFP4 experts for Humming backend "
                    f"(layer: model.layers.{i}.mlp.experts)...")
            gemm = "grouped_contiguous" if (self.sim_env("SGLANG_HUMMING_MOE_GEMM_TYPE") or
                                            "") == "grouped" else "indexed"
            log(f"Using {gemm} gemm for humming moe")
        quant = ("quant=fp8, fmt=e4m3" if q.get("dense") == "fp8" else
                 f"quant={q.get('method', 'none')}")
        log(f"Load weight end. elapsed={load_s:.2f} s, type={self.model.architecture}, "
            f"{quant}, avail mem={free0 - weights:.2f} GB, "
            f"mem usage={weights:.2f} GB.")
        self._take("weights", weights / sim_host.GB_PER_GIB)
        if mem is None:
            self._die(err.exc_type, err.message)
        assert mem is not None
        self._check_ring(a)
        self.mem = mem
        log(f"KV Cache is allocated. dtype: torch.bfloat16, #tokens: {mem.max_total_num_tokens}"
            f", KV size: {mem.kv_gb:.2f} GB")
        log(f"Mamba Cache is allocated. max_mamba_cache_size: "
            f"{a['max_mamba_cache_size'] or 'auto'}, ssm_state size: {mem.mamba_gb:.2f} GB")
        log(f"Memory pool end. avail mem={mem.avail_after_pool_gb:.2f} GB")
        self._take("pool", (max(mem.kv_gb, 0.0) + mem.mamba_gb + mem.graph_gb)
                   / sim_host.GB_PER_GIB)
        if mem.hangs or "hang" in faults:
            self._hang()
        log(f"max_total_num_tokens={mem.max_total_num_tokens}, chunked_prefill_size="
            f"{a['chunked_prefill_size']}, max_prefill_tokens={a['max_prefill_tokens']}, "
            f"max_running_requests={a['max_running_requests']}, context_len="
            f"{a['context_length']}, available_gpu_mem={mem.avail_after_pool_gb:.2f} GB")
        self._capture_graphs(a, mem.avail_after_pool_gb)
        started = settings.algo.startup_log if settings.speculative else None
        if started is not None:
            log(started(a, settings, self.model))
        self.engine = Engine(
            self.perf, limits=Limits.of(a, mem.max_total_num_tokens), time_scale=self.scale,
            noise=self.noise, seed=self.seed, decode_log_interval=a["decode_log_interval"],
            log=log, on_finish=self._on_finish, launch_factor=self.launch_factor,
            prefill_slowdown=self.machine.prefill_slowdown_per_running)
        self.crash_after = faults.get("crash_after")
        self.startup_machine_s = st.process_s + extra + load_s
        self._serve(a)

    def _draft_block(self) -> int | None:
        """The block size an external draft at ``--speculative-draft-model-path``
        declares (tuner_sim.speculative: DSPARK's, EAGLE3's none): a local folder's
        ``config.json`` (DSPARK's ``dspark_block_size`` or ``block_size``, as 0.5.23 reads
        it; its draft DERIVED when no profile holds one), else the model profile's draft;
        a path that is neither cannot be loaded (SGLang's OSError)."""
        path = self.ns.speculative_draft_model_path
        algo = sim_speculative.launched(self.ns.speculative_algorithm)
        if algo is None or not algo.external or path is None:
            return None
        try:
            cfg = json.loads((Path(path) / "config.json").read_text())
        except (OSError, ValueError):
            cfg = None
        if isinstance(cfg, dict):
            block = block_declared(cfg, algo)
            found = config_path(path)
            if algo.draft_of(self.model) is None and found is not None:  # no profile's
                self.model = self.model.model_copy(update={"drafts": {
                    **self.model.drafts, algo.key: derive_draft(found, algo)}})
            return int(block) if isinstance(block, int) else None
        d = algo.draft_of(self.model)
        stem = path.rstrip("/").split("/")[-1].lower()
        if not isinstance(d, DenseDraft) or stem not in [x.lower() for x in d.aliases]:
            self._die("OSError", f"{path} is not a local folder and is not a valid model "
                                 "identifier listed on 'https://huggingface.co/models' "
                                 f"(simulator: no {algo.key} draft profile matches it)")
        assert isinstance(d, DenseDraft)
        return d.block_size

    def _check_draft(self, a: dict[str, Any]) -> None:
        """The launch's algorithm needs its profile data: the model's draft (NEXTN: the
        checkpoint's own MTP layer), the model's acceptance table and the machine's fixed
        costs (tuner_sim.speculative); a launch without them is refused."""
        name = a["speculative_algorithm"]
        algo = sim_speculative.resolved(name) if name is not None else None
        if algo is None:
            return
        path = a["speculative_draft_model_path"]
        if algo.draft_of(self.model) is None:
            self._die("ValueError", "simulator: " + algo.missing.format(
                arch=self.model.architecture, path=path))
        if algo.key not in self.model.acceptance.algorithms:
            self._die("ValueError", f"simulator: the model profile of {self.model.id} has no "
                      f"{algo.key} acceptance (acceptance.algorithms.{algo.key}): how often "
                      "its drafts are accepted is unknown")
        if algo.key not in self.machine.drafts:
            self._die("ValueError", f"simulator: the machine profile {self.machine.id} has "
                      f"no {algo.key} costs (drafts.{algo.key}: forward_ms, round_ms)")

    def _check_ring(self, a: dict[str, Any]) -> None:
        """The KDA pool's ReplaySSM ring check, where 0.5.23 makes it: building the memory
        pool, after the weights loaded (sglang/srt/mem_cache/memory_pool.py)."""
        if not a["enable_linear_replayssm_spec"]:
            return
        ring = int(a["linear_replayssm_cache_len"])
        window = a["speculative_num_draft_tokens"]
        if ring & (ring - 1) != 0:
            self._die("ValueError", f"spec-verify ring length must be a power of two, got "
                                    f"{ring}")
        if window is not None and ring < 2 * int(window):
            self._die("ValueError", f"spec-verify ring too small: {ring} < 2 * {window} "
                                    "(early-flush margin)")

    def _settings(self, a: dict[str, Any]) -> Settings:
        try:
            return settings_from(a, self.sim_env, self.variant.LM_HEAD_MODULE_SHARED)
        except LaunchError as exc:
            self._die(exc.exc_type, exc.message)
            raise

    def _ignore_flag(self, a: dict[str, Any], flag: str) -> None:
        """Drop a flag as if the server never read it (the resolved default shows)."""
        dest = flag.lstrip("-").replace("-", "_")
        if dest not in a:
            return
        default = self.parser.get_default(dest)
        a[dest] = default
        if dest == "moe_runner_backend" and default == "auto":
            a[dest] = "flashinfer_mxfp4"

    def _capture_graphs(self, a: dict[str, Any], avail: float) -> None:
        st = self.machine.startup
        jit_s = 0.0
        if a["moe_runner_backend"] == "humming":
            cache = os.path.expanduser(self.env.get("HUMMING_CACHE_DIR",
                                                    "~/.humming/cache"))
            marker = os.path.join(cache, f"tuner_sim-{self.machine.id}-{self.model.id}-"
                                         f"{'w4a8' if self.settings.humming_w4a8 else 'w4a16'}")
            build = st.jit.get("humming")
            if build is not None and not os.path.exists(marker):
                jit_s = build.s_per_kernel * build.kernels
                try:
                    os.makedirs(cache, exist_ok=True)
                    with open(marker, "w") as fh:
                        fh.write("compiled\n")
                except OSError:
                    pass
        graph = a["cuda_graph_config"]["decode"]
        if graph["backend"] == "disabled":
            self.sleep(jit_s)
            self.graph_s = jit_s
            return
        spec = self.settings.speculative
        name = "target verify" if spec else "target decode"
        per_req = a["speculative_num_draft_tokens"] if spec else 1
        phases = [(name, per_req)]
        if spec:
            phases += self.settings.algo.shape.graph_phases(self.settings.algo, self.settings,
                                                            a)
        total = jit_s
        for i, (phase, n) in enumerate(phases):
            log(f"Capture {phase} CUDA graph begin. backend={graph['backend']}, "
                f"num_tokens_per_req={n}, avail mem={avail:.2f} GB")
            t = st.graph_capture_s + (jit_s if i == 0 else 0.0)
            self.sleep(t)
            total += st.graph_capture_s
            log(f"Capture {phase} CUDA graph end. bs={graph['bs']}, elapsed={t:.2f} s, "
                f"mem usage=0.12 GB, avail mem={avail - 0.12 * (i + 1):.2f} GB.")
        self.graph_s = total

    def _take(self, what: str, gib: float) -> None:
        """Hold ``gib`` more of the simulated host's memory; past its last free GiB the
        machine wedges as a GB10 does: no out-of-memory error, nothing answers again."""
        if self.host is None:
            return
        self.host.take(what, gib)
        if self.host.wedged:
            log("NVRM: nvCheckOkFailedNoLog: Check failed: Out of memory [NV_ERR_NO_MEMORY] "
                "(0x00000051) returned from _memdescAllocInternal(pMemDesc) "
                f"(simulator: {self.host.available_gib:.2f} GiB of host memory left)")
            self.wedged = True
            self._hang()

    def request_done(self) -> None:
        """A client's request is answered (before its last chunk leaves): the
        ``memory_growth`` fault takes ``gib`` more host memory after ``after`` of them."""
        f = self.growth
        if f is None:
            return
        with self.lock:
            self.answered += 1
            n = self.answered
        if n == int(f.get("after") or f.get("arg") or 1):
            log(f"simulated host memory growth: {f.get('gib', 0)} GiB (TUNER_SIM_FAULTS)")
            self._take("growth", float(f.get("gib") or 0.0))

    def _hang(self) -> None:
        """What a GB10 does past its safe memory fraction: nothing, ever again."""
        while True:
            time.sleep(3600)

    def _die(self, exc_type: str, message: str) -> None:
        log("Traceback (most recent call last):")
        log('  File "sglang/srt/managers/scheduler.py", line 2840, in run_scheduler_process')
        log(f"{exc_type}: {message}")
        log("Received sigquit from a child process. It usually means the child failed.")
        sys.exit(1)

    # -- serving ---------------------------------------------------------------------------
    def _serve(self, a: dict[str, Any]) -> None:
        handler = type("Handler", (_Handler,), {"sim": self})
        try:
            httpd = ThreadingHTTPServer((a["host"], a["port"]), handler)
        except OSError as exc:
            log(f"ERROR:    [Errno {exc.errno}] error while attempting to bind on address "
                f"('{a['host']}', {a['port']}): {exc.strerror}")
            sys.exit(1)
        httpd.daemon_threads = True
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        log(f"Uvicorn running on http://{a['host']}:{a['port']} (Press CTRL+C to quit)")
        if self.draft_tree_broken() and not a["skip_server_warmup"]:
            self._die("RuntimeError", "selected index k out of range (organize_draft_results: "
                      "torch.topk over the draft tree's scores)")
        if self.host is not None and self.machine.host is not None:
            self._take("workspace", self.machine.host.workspace_gib)
        if not a["skip_server_warmup"]:
            req = self.make_request("The capital city of France is", None,
                                    {"max_new_tokens": 8, "temperature": 0}, warmup=True)
            self.engine.submit(req)
            while not req.finished:
                self.engine.wait(req, req.emitted)
        self.startup_time = time.monotonic() - self.startup_wall
        # Start-up objects (profiles, the GSM8K index) never become garbage: out of the
        # collector's sight, a collection that lands on a decode round stays short.
        gc.collect()
        gc.freeze()
        self.ready = True
        log("The server is fired up and ready to roll!")
        threading.Event().wait()

    def _on_finish(self, req: SimRequest) -> None:
        if req.rid.startswith("warmup-") or req.rid.startswith("health-"):
            return
        with self.lock:
            self.finished_user_requests += 1
            n = self.finished_user_requests
        if self.crash_after is not None:
            limit = int(self.crash_after.get("after") or self.crash_after.get("arg") or 1)
            if n >= limit:
                threading.Thread(target=crash_now, args=(log, "simulated crash after "
                                 f"{n} requests (TUNER_SIM_FAULTS)"), daemon=True).start()

    # -- requests --------------------------------------------------------------------------
    def numerics(self) -> str:
        s = self.settings
        return (f"{s.moe_backend}|{'w4a8' if s.humming_w4a8 else 'a16'}|{s.lm_head}|"
                f"{'spec' if s.speculative else 'plain'}")

    def accuracy(self, content: str = "math") -> float:
        """The chance a ``math`` (GSM8K) or ``code`` (HumanEval) answer is right under this
        launch's numerics, less any injected drop for that class."""
        g = self.model.gsm8k if content == "math" else self.model.humaneval
        acc = g.accuracy
        if self.settings.humming_w4a8:
            acc += g.accuracy_delta_pp.get("humming_w4a8", 0.0) / 100
        if self.settings.lm_head == "fp8":
            acc += g.accuracy_delta_pp.get("lm_head_fp8", 0.0) / 100
        return acc - getattr(self, "accuracy_drop_pp", {}).get(content, 0.0) / 100

    def _cached(self, text: str) -> int:
        best = 0
        with self.lock:
            for p in self.prefixes:
                n = _common_prefix_len(p, text)
                best = max(best, n)
            self.prefixes.append(text)
            del self.prefixes[:-32]
        if best == 0:
            return 0
        page = max(1, int(self.args["page_size"]))
        return count_tokens(text[:best]) // page * page

    def draft_tree_broken(self) -> bool:
        """More draft tokens than the EAGLE tree holds: SGLang takes the flags, and its
        ``organize_draft_results`` fails at the first decode (``torch.topk`` of k =
        draft tokens - 1 over ``topk + (steps - 1) * topk**2`` scores)."""
        return not draft_tree_fits(self.settings)

    def check_vocab(self, input_ids: list[Any]) -> None:
        """Ids outside ``[0, vocab_size)`` take the server down, as on a real GPU.

        Real SGLang does not answer such a request with an error: the embedding lookup
        hits a device-side assert in the scheduler and the whole server exits (seen with
        SGLang 0.5.17 on an H200, ``docs/real-sglang-h200.md``).
        """
        vocab = self.model.vocab_size
        bad = [i for i in input_ids if not isinstance(i, int) or not 0 <= i < vocab]
        if bad:
            log("../aten/src/ATen/native/cuda/Indexing.cu: indexSelectLargeIndex: Assertion "
                "`srcIndex < srcSelectDimSize` failed.")
            crash_now(log, "RuntimeError: CUDA error: device-side assert triggered "
                      f"(simulator: input id {bad[0]!r} outside the vocabulary of {vocab})")

    def make_request(self, text: str | None, input_ids: list[int] | None,
                     sp: dict[str, Any], *, warmup: bool = False, rid: str | None = None
                     ) -> SimRequest:
        temperature = float(sp.get("temperature", 1.0))
        greedy = temperature == 0.0 or int(sp.get("top_k", -1)) == 1
        kind = "greedy" if greedy else "sampled"
        seed = int(sp.get("sampling_seed", self.args["random_seed"]))
        ignore_eos = bool(sp.get("ignore_eos", False))
        if input_ids is not None:
            prompt = " ".join(map(str, input_ids))
            n_prompt = len(input_ids)
        else:
            prompt = text or ""
            n_prompt = count_tokens(prompt)
        cached = min(self._cached(prompt), max(0, n_prompt - 1))
        tokens, joiner, hit = self._answer(prompt, seed, text=bool(text))
        content = classify(text, token_ids=input_ids is not None, gsm8k_hit=hit)
        c = self.perf.acceptance_class(kind, content)
        rng = random.Random(f"{self.seed}|{prompt[-256:]}|{seed}|{n_prompt}")
        a, b = c.first * c.concentration, (1 - c.first) * c.concentration
        first = rng.betavariate(a, b)
        max_new = int(sp.get("max_new_tokens", 128))
        return SimRequest(
            rid=rid or (("warmup-" if warmup else "") + uuid.uuid4().hex),
            prompt_tokens=n_prompt, cached_tokens=cached, max_new_tokens=max(1, max_new),
            kind=kind, tokens=tokens, ignore_eos=ignore_eos, first_rate=first, rng=rng,
            content=content, joiner=joiner)

    def _answer(self, prompt: str, seed: int, *, text: bool) -> tuple[list[str], str, bool]:
        """What the model says to ``prompt`` (tokens, how they join, whether it was a GSM8K
        question): a GSM8K question and a HumanEval stub (``text``: a text prompt) get an
        answer that is right with the numerics' probability (docs/simulator.md); anything
        else, filler words."""
        hit = self.gsm8k.find(prompt) if text else None
        sig = self.numerics()
        if hit is not None:
            g = self.model.gsm8k
            qid, reasoning, final = hit
            correct = is_correct(qid, sig, seed, self.accuracy("math"), g.numerics_flip_rate)
            length = output_length(qid, seed, g.output_tokens_median, g.output_tokens_sigma,
                                   sig)
            return answer_tokens(reasoning, final, correct, length, qid), " ", True
        task = self.humaneval.find(prompt) if text else None
        if task is not None:
            h = self.model.humaneval
            correct = is_correct(task.task_id, sig, seed, self.accuracy("code"),
                                 h.numerics_flip_rate)
            length = output_length(task.task_id, seed, h.output_tokens_median,
                                   h.output_tokens_sigma, sig)
            return reply_tokens(task, correct, length), "", False
        u = uniform("generic", prompt[-200:], seed)
        length = max(8, round(200 * (0.3 + 1.4 * u)))
        return [FILLER[i % len(FILLER)] for i in range(length)], " ", False

    def meta_info(self, req: SimRequest, final: bool) -> dict[str, Any]:
        m: dict[str, Any] = {
            "id": req.rid, "finish_reason": req.finish_reason if final else None,
            "prompt_tokens": req.prompt_tokens, "weight_version": "default",
            "num_retractions": 0, "reasoning_tokens": 0,
            "completion_tokens": req.emitted, "cached_tokens": req.cached_tokens,
        }
        if final and req.t_done is not None:
            m["e2e_latency"] = req.t_done - req.t_submit
        if self.settings.speculative and req.verify_ct > 0:
            steps = self.settings.drafted
            m.update({
                "spec_accept_rate": req.correct_drafts / (req.verify_ct * max(
                    1, self.settings.draft_tokens - 1)),
                "spec_accept_length": req.emitted / req.verify_ct,
                "spec_num_correct_drafts": req.correct_drafts,
                "spec_num_proposed_drafts": req.verify_ct * steps,
                "spec_verify_ct": req.verify_ct,
                "spec_correct_drafts_histogram": req.hist,
            })
        return m

    def text_of(self, req: SimRequest, upto: int | None = None) -> str:
        n = req.emitted if upto is None else upto
        return req.joiner.join(req.token(i) for i in range(n))

    def server_info(self) -> dict[str, Any]:
        a = dict(self.args)
        mem = self.mem
        s = self.engine.stats
        state: dict[str, Any] = dict(a)
        state.update({
            "world_size": 1, "startup_time": self.startup_time,
            "effective_max_running_requests_per_dp": a["max_running_requests"],
            "last_gen_throughput": s.last_gen_throughput,
            "memory_usage": {"weight": round(mem.weights_gb, 2), "kvcache": round(
                mem.kv_gb, 2), "startup_available": round(mem.free_before_load_gb, 2),
                "token_capacity": mem.max_total_num_tokens,
                "graph": {"decode": 0.12}},
            "disaggregation_mode": "null", "decode_cuda_graph_bs": a["cuda_graph_config"][
                "decode"]["bs"], "decode_cuda_graph_memory_gb": 0.12,
        })
        if self.settings.speculative:
            state["avg_spec_accept_length"] = (s.spec_accept_tokens / s.spec_forward_ct
                                               if s.spec_forward_ct else 0.0)
        a.update({
            "launch_command": self.launch_command, "status": "ready",
            "max_total_num_tokens": mem.max_total_num_tokens,
            "max_req_input_len": min(a["context_length"], mem.max_total_num_tokens) - 1,
            "startup_time": self.startup_time, "hicache_object_layout": None,
            "kv_events": None, "internal_states": [state], "version": self.variant.version
            .__version__, "frontend": "python", "time_scale": self.scale,
            "launch_speed_factor": self.launch_factor,
            # beside time_scale, what the simulated figures rest on: a twin calibrated to
            # published figures, or DERIVED from config.json (docs/simulator.md)
            "twin": self.model.twin,
        })
        return a

    def metrics(self) -> str:
        s = self.engine.stats
        label = f'model_name="{self.args["served_model_name"]}",engine_type="unified"'
        rows = [
            ("counter", "sglang:prompt_tokens_total", s.prompt_tokens_total),
            ("counter", "sglang:generation_tokens_total", s.generation_tokens_total),
            ("counter", "sglang:num_requests_total", s.num_requests_total),
            ("gauge", "sglang:num_running_reqs", s.num_running_reqs),
            ("gauge", "sglang:num_queue_reqs", len(self.engine.pending)),
            ("gauge", "sglang:gen_throughput", s.last_gen_throughput),
            ("gauge", "sglang:max_total_num_tokens", self.mem.max_total_num_tokens),
            ("gauge", "sglang:context_len", self.args["context_length"]),
            ("gauge", "sglang:page_size", self.args["page_size"]),
            ("gauge", "sglang:is_cuda_graph", 1),
            ("gauge", "sglang:weight_memory_usage_gb", round(self.mem.weights_gb, 2)),
        ]
        if self.settings.speculative:
            rows += [
                ("counter", "sglang:spec_verify_calls_total", s.spec_verify_calls_total),
                ("gauge", "sglang:spec_accept_length", s.last_interval_accept_length or 0.0),
                ("gauge", "sglang:spec_num_steps",
                 self.settings.algo.shape.num_steps(self.settings)),
                ("gauge", "sglang:spec_num_draft_tokens", self.settings.draft_tokens),
            ]
        out = []
        for kind, name, value in rows:
            out += [f"# HELP {name} {name}", f"# TYPE {name} {kind}",
                    f"{name}{{{label}}} {float(value)}"]
        return "\n".join(out) + "\n"


class _Handler(BaseHTTPRequestHandler):
    sim: SimServer
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # stream chunks leave at once, as uvicorn's do

    def log_message(self, format: str, *args: Any) -> None:
        return

    # -- plumbing --------------------------------------------------------------------------
    def _send(self, code: int, body: Any, ctype: str = "application/json") -> None:
        data = body if isinstance(body, bytes) else (
            body.encode() if isinstance(body, str) else json.dumps(body).encode())
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _chunk(self, payload: str) -> None:
        data = payload.encode()
        self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _event(self, obj: Any) -> None:
        self._chunk("data: " + (obj if isinstance(obj, str) else json.dumps(obj)) + "\n\n")

    def _end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _authorised(self, path: str) -> bool:
        key = self.sim.args.get("api_key") if hasattr(self.sim, "args") else None
        if not key or path.startswith(("/health", "/ready", "/metrics")):
            return True
        return self.headers.get("Authorization", "") == f"Bearer {key}"

    def _json_body(self) -> dict[str, Any] | None:
        n = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(n) or b"{}")
        except json.JSONDecodeError:
            self._send(400, {"error": {"message": "invalid JSON body"}})
            return None
        if not isinstance(body, dict):
            self._send(400, {"error": {"message": "expected a JSON object"}})
            return None
        return body

    # -- routes ----------------------------------------------------------------------------
    def do_GET(self) -> None:
        path = self.path.split("?")[0]
        sim = self.sim
        if sim.wedged:
            sim._hang()
        if not self._authorised(path):
            self._send(401, {"error": "Unauthorized"})
            return
        if path in ("/health", "/health_generate"):
            if not sim.ready:
                self._send(503, b"")
                return
            req = sim.make_request(None, [0], {"max_new_tokens": 1, "temperature": 0},
                                   rid="health-" + uuid.uuid4().hex)
            sim.engine.submit(req)
            sim.engine.wait(req, 0, timeout=20)
            self._send(200 if req.finished else 503, b"")
        elif path == "/ready":
            self._send(200 if sim.ready else 503, {"ready": sim.ready})
        elif path in ("/model_info", "/get_model_info"):
            if path == "/get_model_info":
                log("WARNING /get_model_info is deprecated; use /model_info")
            m = sim.model
            self._send(200, {
                "model_path": sim.args["model_path"],
                "served_model_name": sim.args["served_model_name"],
                "tokenizer_path": sim.args["tokenizer_path"], "is_generation": True,
                "preferred_sampling_params": None, "weight_version": "default",
                "load_format": "auto", "reasoning_parser": sim.args["reasoning_parser"],
                "tool_call_parser": sim.args["tool_call_parser"],
                "disaggregation_mode": "null", "has_image_understanding": False,
                "has_audio_understanding": False, "model_type": m.model_type,
                "architectures": [m.architecture]})
        elif path in ("/server_info", "/get_server_info"):
            self._send(200, sim.server_info())
        elif path == "/v1/models":
            self._send(200, {"object": "list", "data": [{
                "id": sim.args["served_model_name"], "object": "model",
                "created": int(time.time()), "owned_by": "sglang",
                "root": sim.args["served_model_name"], "parent": None,
                "max_model_len": sim.args["context_length"]}]})
        elif path == "/metrics" and sim.args.get("enable_metrics"):
            self._send(200, sim.metrics(), "text/plain; version=0.0.4")
        else:
            self._send(404, {"detail": "Not Found"})

    def do_POST(self) -> None:
        path = self.path.split("?")[0]
        if self.sim.wedged:
            self.sim._hang()
        if not self._authorised(path):
            self._send(401, {"error": "Unauthorized"})
            return
        if not self.sim.ready:
            self._send(503, {"error": {"message": "The server is not ready yet"}})
            return
        body = self._json_body()
        if body is None:
            return
        if path == "/generate":
            self._generate(body)
        elif path == "/v1/completions":
            self._openai(body, chat=False)
        elif path == "/v1/chat/completions":
            self._openai(body, chat=True)
        else:
            self._send(404, {"detail": "Not Found"})

    def _generate(self, body: dict[str, Any]) -> None:
        sim = self.sim
        text, ids = body.get("text"), body.get("input_ids")
        if isinstance(text, list) or (isinstance(ids, list) and ids and isinstance(ids[0],
                                                                                   list)):
            self._send(400, {"error": {"message": "batched requests are not supported by "
                                                  "the simulator"}})
            return
        if text is None and ids is None:
            self._send(400, {"error": {"message": "Either text or input_ids should be "
                                                  "provided."}})
            return
        if ids is not None:
            sim.check_vocab(ids)
        if sim.draft_tree_broken():       # --skip-server-warmup: the first request hits it
            crash_now(log, "RuntimeError: selected index k out of range "
                      "(organize_draft_results)")
        req = sim.make_request(text, ids, body.get("sampling_params") or {},
                               rid=body.get("rid"))
        req.stream = bool(body.get("stream"))
        sim.engine.submit(req)
        if not body.get("stream"):
            while not req.finished:
                sim.engine.wait(req, req.emitted)
            sim.request_done()
            self._send(200, {"text": sim.text_of(req), "meta_info": sim.meta_info(req, True)})
            return
        self._start_stream()
        seen = 0
        while True:
            sim.engine.wait(req, seen)
            done = req.finished
            n = req.emitted
            if done:
                sim.request_done()
            if n > seen or done:
                self._event({"text": sim.text_of(req, n), "meta_info": sim.meta_info(req, done)
                             if done else {**sim.meta_info(req, False), "completion_tokens": n}})
                req.first_out.set()
                seen = n
            if done:
                break
        self._event("[DONE]")
        self._end_stream()

    def _openai(self, body: dict[str, Any], *, chat: bool) -> None:
        sim = self.sim
        stream = bool(body.get("stream"))
        if chat and stream and body.get("return_meta_info"):
            self._send(400, {"object": "error", "message": "return_meta_info is not "
                             "supported with streaming", "type": "BadRequestError",
                             "code": 400})
            return
        if chat:
            msgs = body.get("messages") or []
            prompt = "\n".join(str(m.get("content", "")) for m in msgs if isinstance(m, dict))
        else:
            prompt = body.get("prompt", "")
            if isinstance(prompt, list):
                prompt = " ".join(map(str, prompt))
        sp = {"max_new_tokens": body.get("max_completion_tokens") or body.get("max_tokens")
              or 128, "temperature": body.get("temperature", 1.0),
              "top_p": body.get("top_p", 1.0), "top_k": body.get("top_k", -1),
              "ignore_eos": body.get("ignore_eos", False)}
        if "seed" in body:
            sp["sampling_seed"] = body["seed"]
        req = sim.make_request(str(prompt), None, sp)
        req.stream = stream
        sim.engine.submit(req)
        rid = ("chatcmpl-" if chat else "cmpl-") + req.rid
        created = int(time.time())
        obj = "chat.completion" if chat else "text_completion"
        model = sim.args["served_model_name"]
        if not stream:
            while not req.finished:
                sim.engine.wait(req, req.emitted)
            sim.request_done()
            reason = (req.finish_reason or {}).get("type", "stop")
            text = sim.text_of(req)
            choice: dict[str, Any] = ({"index": 0, "message": {
                "role": "assistant", "content": text, "reasoning_content": None,
                "tool_calls": None}, "finish_reason": reason} if chat else {
                "index": 0, "text": text, "logprobs": None, "finish_reason": reason})
            if chat and body.get("return_meta_info"):
                choice["meta_info"] = sim.meta_info(req, True)
            self._send(200, {"id": rid, "object": obj, "created": created, "model": model,
                             "choices": [choice], "usage": {
                                 "prompt_tokens": req.prompt_tokens,
                                 "completion_tokens": req.emitted,
                                 "total_tokens": req.prompt_tokens + req.emitted}})
            return
        self._start_stream()
        seen = 0
        while True:
            sim.engine.wait(req, seen)
            done, n = req.finished, req.emitted
            if n > seen:
                delta = " ".join(req.token(i) for i in range(seen, n))
                if seen:
                    delta = " " + delta
                choice = ({"index": 0, "delta": {"content": delta}, "finish_reason": None}
                          if chat else {"index": 0, "text": delta, "finish_reason": None})
                self._event({"id": rid, "object": obj + (".chunk" if chat else ""),
                             "created": created, "model": model, "choices": [choice]})
                req.first_out.set()
                seen = n
            if done:
                sim.request_done()
                reason = (req.finish_reason or {}).get("type", "stop")
                choice = ({"index": 0, "delta": {}, "finish_reason": reason} if chat else
                          {"index": 0, "text": "", "finish_reason": reason})
                self._event({"id": rid, "object": obj + (".chunk" if chat else ""),
                             "created": created, "model": model, "choices": [choice]})
                break
        self._event("[DONE]")
        self._end_stream()


def main(variant: ModuleType, argv: list[str] | None = None) -> None:
    """``python -m tuner_sim.<variant> serve [sglang flags]``"""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(f"usage: python -m {variant.__name__} serve [sglang serve flags]\n\n"
              f"{variant.DESCRIPTION}")
        return
    if argv[0] != "serve":
        print(f"error: unknown command {argv[0]!r}; expected 'serve'", file=sys.stderr)
        sys.exit(2)
    import signal

    # SIGTERM (a client stopping the server) ends it through SystemExit, so that what it
    # held of its simulated host's memory is given back (atexit)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
    server = SimServer(variant, argv[1:], dict(os.environ))
    try:
        server.start()
    except KeyboardInterrupt:
        sys.exit(130)
