"""Bad command-line values: one line, exit 2, no traceback, nothing created, never a value
accepted in silence (issue 24's CLI sweep: the cases that once crashed or were clamped)."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import GSM8K_DIR
from tests.conftest import H200
from tests.conftest import REPO
from tests.conftest import SPARK
from tests.conftest import run_tuner
from tuner.errors import UserError


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("cli-values")
    r = run_tuner(tmp, "sweep", str(SPARK), "--engine", "sim", "--ray-address", "none",
               "--trials", "1", "--questions", "4", "--gsm8k", str(GSM8K_DIR), "--storage",
               str(tmp / "s.db"), "--study", "s", "--workdir", str(tmp / "runs"))
    assert r.returncode == 0, r.stderr
    return tmp


SWEEP = ["sweep", str(SPARK), "--engine", "sim", "--ray-address", "none", "--gsm8k",
         str(GSM8K_DIR)]


@pytest.mark.parametrize(("args", "says"), [
    ([*SWEEP, "--seed", "-1"], "--seed"),
    ([*SWEEP, "--questions", "100000"], "1,319 questions"),
    ([*SWEEP, "--sim-profiles", "/no/such/folder"], "--sim-profiles"),
    ([*SWEEP, "--final-questions", "5000"], "--final-questions"),
    (["plan", str(SPARK), "--port", "99999"], "--port"),
    (["export", "s", "--tpot-tolerance", "nan"], "--tpot-tolerance"),
    (["trial", str(SPARK), "--seed", "-1"], "--seed"),
])
def test_an_impossible_value_is_refused_in_one_line(tmp_path: Path, args: list[str],
                                                    says: str) -> None:
    r = run_tuner(tmp_path, *args)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert says in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not (tmp_path / "trials").exists()         # nothing created


#: a sweep that would end fast if a bad value got through (1 trial of 4 questions)
SWEEP1 = [*SWEEP, "--trials", "1", "--questions", "4"]


@pytest.mark.parametrize(("args", "says"), [
    ([*SWEEP1, "--seed", str(2**64)], "--seed"),                    # once a traceback
    ([*SWEEP1, "--trial-timeout", "inf"], "--trial-timeout"),       # once run as never
    ([*SWEEP1, "--startup-timeout", "inf"], "--startup-timeout"),
    ([*SWEEP1, "--study", ""], "--study ''"),                       # once accepted
    ([*SWEEP1, "--study", "a\x1b[2Jb"], "--study"),                # printed by every reader
    ([*SWEEP1, "--storage", ""], "--storage is empty"),             # once a traceback
    ([*SWEEP1, "--ray-address", ""], "--ray-address is empty"),     # once a local Ray
    ([*SWEEP1, "--sim-faults", ""], "--sim-faults: not JSON"),      # once ignored
    ([*SWEEP1, "--sim-faults", '[{"kind": "bogus"}]'], "unknown kind 'bogus'"),
    ([*SWEEP1, "--sampler", "bogus"], "--sampler"),                 # once left trials/runs
    ([*SWEEP1, "--artifacts", "@TMP/FILE"], "--artifacts"),         # once left the study
    ([*SWEEP1, "--api-key", "a\nb"], "--api-key"),                 # once 60 s, unready
    (["trial", str(SPARK), "--api-key", "a\rb"], "--api-key"),
    (["trial", str(SPARK), "--engine", "sim", "--gsm8k", str(GSM8K_DIR), "--questions", "4",
      "--out", "@TMP/FILE/r.json"], "--out @TMP/FILE/r.json: cannot write"),  # once after

    (["plan", str(SPARK), "--host", ""], "--host"),                 # once planned
    (["dashboard", "s", "--host", ""], "--host"),                   # once every interface
    (["verify", "p.yaml", "--url", "http://[::1"], "--url"),        # once a traceback
    (["verify", "p.yaml", "--url", "http://127.0.0.1:99999"], "--url"),
    (["verify", "p.yaml", "--gsm8k", "/no/such"], "GSM8K test split not found"),
    (["report", "s"], "no study database"),                         # once left trials/
    (["sim", "calibrate", "--machine", "bogus"], "no machine profile 'bogus'"),
    (["probe", str(H200), "--from-json", "@TMP/list.json"], "not a probe JSON (a list"),
    (["probe", str(H200), "--from-json", str(REPO / "tests/probe_tests/probe-h200.json"),
      "--profile-dir", "@TMP/FILE/p"], "--profile-dir"),
])
def test_a_bad_value_is_refused_before_anything_is_created(tmp_path: Path, args: list[str],
                                                           says: str) -> None:
    """Issue 24's CLI sweep (benchmarks/cli_values.py): each of these was a traceback, a
    value accepted in silence, a hang, or a refusal that left files behind."""
    (tmp_path / "FILE").write_text("x")
    (tmp_path / "list.json").write_text("[]")
    before = sorted(tmp_path.rglob("*"))
    args = [a.replace("@TMP", str(tmp_path)) for a in args]
    says = says.replace("@TMP", str(tmp_path))
    if args[0] == "sweep" and "--storage" not in args:
        args += ["--storage", str(tmp_path / "s.db")]
    r = run_tuner(tmp_path, *args)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert says in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert sorted(tmp_path.rglob("*")) == before          # nothing created


def test_the_simulators_fault_kinds_are_the_ones_the_tool_checks() -> None:
    from tuner.cli._engine_options import SIM_FAULT_KINDS
    from tuner_sim.server import Faults

    assert SIM_FAULT_KINDS == Faults.KINDS


def test_a_storage_in_a_missing_folder_creates_no_folder(tmp_path: Path) -> None:
    missing = tmp_path / "no" / "such"
    r = run_tuner(tmp_path, *SWEEP, "--trials", "1", "--storage", f"sqlite:///{missing}/s.db")
    assert r.returncode == 2 and "does not exist" in r.stderr, r.stderr
    assert not (tmp_path / "no").exists()


@pytest.mark.parametrize("case", ["html-unwritable", "csv-folder", "out-under-file",
                                  "pick-negative"])
def test_reads_and_writes_of_a_study_fail_in_one_line(study: Path, tmp_path: Path,
                                                      case: str) -> None:
    where = ["s", "--storage", str(study / "s.db"), "--artifacts", str(study / "s.artifacts")]
    (tmp_path / "file").write_text("x")
    args = {"html-unwritable": ["report", *where[:3], "--html", "/proc/no/r.html"],
            "csv-folder": ["report", *where[:3], "--csv", str(tmp_path)],
            "out-under-file": ["export", *where, "--out", str(tmp_path / "file" / "p")],
            "pick-negative": ["export", *where, "--pick", "trial:-1"]}[case]
    r = run_tuner(tmp_path, *args)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert r.stderr.startswith("error: ") and "Traceback" not in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_a_baseline_never_measured_fails_the_sweep(tmp_path: Path) -> None:
    """--trials 1 and a start-up that fails (retried once as flaky, the retry left queued):
    once exit 0 with an empty front."""
    r = run_tuner(tmp_path, *SWEEP, "--trials", "1", "--storage", str(tmp_path / "s.db"),
               "--sim-faults", '[{"kind": "crash_at_start"}]')
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "baseline" in r.stderr and "Traceback" not in r.stderr, r.stderr


@pytest.mark.parametrize(("extra", "says"), [
    (["--sim-faults", "[{kind: oom}"], "--sim-faults: not JSON"),
    (["--sim-faults", '{"kind": "oom_at_start"}'], "--sim-faults: expected a JSON list"),
    (["--workdir", "FILE"], "--workdir"),
])
def test_inputs_that_would_fail_every_launch_are_refused_first(
        tmp_path: Path, extra: list[str], says: str) -> None:
    (tmp_path / "FILE").write_text("x")
    extra = [str(tmp_path / "FILE") if x == "FILE" else x for x in extra]
    r = run_tuner(tmp_path, *SWEEP, "--trials", "1", "--storage", str(tmp_path / "s.db"),
               *extra)
    assert r.returncode == 2 and says in r.stderr, (r.stdout, r.stderr)
    assert not (tmp_path / "s.db").exists()


def test_a_ray_address_that_answers_but_is_not_ray_is_refused_at_once(tmp_path: Path) -> None:
    """An HTTP server on the port: ray.init waited minutes, printing warnings, after the
    study was claimed. A gRPC server (what Ray's GCS is) passes the same check."""
    import threading
    from concurrent import futures
    from http.server import HTTPServer
    from http.server import SimpleHTTPRequestHandler

    import grpc

    from tuner.sweep import check_address

    http = HTTPServer(("127.0.0.1", 0), SimpleHTTPRequestHandler)
    threading.Thread(target=http.serve_forever, daemon=True).start()
    try:
        r = run_tuner(tmp_path, *SWEEP, "--trials", "1", "--storage", str(tmp_path / "s.db"),
                   "--ray-address", f"127.0.0.1:{http.server_port}")
    finally:
        http.shutdown()
    assert r.returncode == 2 and "not a Ray head" in r.stderr, r.stderr
    assert not (tmp_path / "s.db").exists()
    # a gRPC server that is not Ray's GCS: ray.init would retry against it as well
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with pytest.raises(UserError, match=r"not a Ray head .*unimplemented Method not found"):
            check_address(f"127.0.0.1:{port}")
    finally:
        server.stop(0)


def _h2_frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    return (len(payload).to_bytes(3, "big") + bytes([kind, flags]) + stream.to_bytes(4, "big")
            + payload)


def _answer_404(conn: socket.socket) -> None:
    """One HTTP/2 connection answered as a transparent proxy answers an address it cannot
    reach: the preface and SETTINGS as any HTTP/2 server, then :status 404 for every
    request (HPACK's static entry 13, ``0x8d``)."""
    buf = b""

    def read(n: int) -> bytes:
        nonlocal buf
        while len(buf) < n:
            chunk = conn.recv(65536)
            if not chunk:
                raise EOFError
            buf += chunk
        out, buf = buf[:n], buf[n:]
        return out

    with conn, contextlib.suppress(OSError, EOFError):
        read(24)                                          # the client's preface
        conn.sendall(_h2_frame(4, 0, 0))                  # our SETTINGS
        while True:
            head = read(9)
            kind, flags = head[3], head[4]
            stream = int.from_bytes(head[5:9], "big") & 0x7FFFFFFF
            payload = read(int.from_bytes(head[:3], "big"))
            if kind == 4 and not flags & 1:               # SETTINGS: acknowledged
                conn.sendall(_h2_frame(4, 1, 0))
            elif kind == 6 and not flags & 1:             # PING: answered
                conn.sendall(_h2_frame(6, 1, 0, payload))
            elif kind == 1:                               # HEADERS: 404, stream ended
                conn.sendall(_h2_frame(1, 0x05, stream, b"\x8d"))


@contextlib.contextmanager
def _proxy_404() -> Iterator[int]:
    """A real HTTP/2 server on a free loopback port that answers every request with 404;
    yields its port."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            with contextlib.suppress(OSError):
                conn, _ = listener.accept()
                threading.Thread(target=_answer_404, args=(conn,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        listener.close()


@pytest.mark.timeout(240)             # the old code waited about 30 s, printing warnings
def test_an_unreachable_ray_address_answered_by_a_proxy_is_one_line_not_a_warning_flood(
        tmp_path: Path) -> None:
    """Issue 34 item 4, finding 6: an unreachable ``--ray-address`` took 31 s and printed 20
    warning lines before its error: the network's proxy answers every connection with
    HTTP/2 404, which passed the check for an HTTP/2 answer, so the study was claimed and
    ``ray.init`` retried its first call once a second."""
    with _proxy_404() as port:
        r = run_tuner(tmp_path, *SWEEP1, "--storage", str(tmp_path / "s.db"),
                      "--workdir", str(tmp_path / "runs"), "--ray-address",
                      f"127.0.0.1:{port}")
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert r.stdout == "" and len(r.stderr.splitlines()) == 1, (r.stdout, r.stderr)
    assert r.stderr.startswith(f"error: --ray-address 127.0.0.1:{port}: something answers "
                               "there, but not a Ray head"), r.stderr
    assert "status: 404" in r.stderr
    assert list(tmp_path.iterdir()) == []               # the study was never touched


@pytest.mark.slow
def test_a_real_ray_head_passes_the_address_check() -> None:
    """The other side of finding 6: a Ray head (Ray's own test cluster) answers the
    cluster-id call, so the check lets it through."""
    from ray.cluster_utils import Cluster

    from tuner.sweep import check_address

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    try:
        check_address(cluster.address)                  # accepted: no error
    finally:
        cluster.shutdown()


def _mix_space(tmp: Path, shares: str) -> Path:
    text = SPARK.read_text().replace("  kind: gsm8k\n", f"  kind: mix\n  mix: {shares}\n", 1)
    assert f"mix: {shares}" in text
    path = tmp / "mix-space.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(("args", "says"), [
    ([*SWEEP1, "--mix", "code=0.6,chat=0.4", "--workload", "gsm8k"],
     "--mix code=0.6,chat=0.4 and --workload gsm8k conflict"),      # once ran the mix
    ([*SWEEP1, "--mix", "code=0.6,chat=0.6"],
     "--mix 'code=0.6,chat=0.6': the shares add up to 1.2, not 1"),   # once renormalised
    ([*SWEEP1, "--mix", "code=0.5"], "the shares add up to 0.5, not 1"),
    (["space", "validate", "@TMP/mix-space.yaml"],
     "mix-space.yaml:@LINE: workload.mix: the shares add up to 1.2, not 1"),
])
def test_conflicting_workload_options_are_refused_not_resolved_in_silence(
        tmp_path: Path, args: list[str], says: str) -> None:
    """Issue 34 item 4, finding 4: ``--mix`` with ``--workload gsm8k`` ran the mix, and a
    mix whose shares do not add up to 1 was renormalised without a word."""
    space = _mix_space(tmp_path, "{code: 0.6, chat: 0.6}")
    line = space.read_text().splitlines().index("  mix: {code: 0.6, chat: 0.6}") + 1
    before = sorted(tmp_path.rglob("*"))
    args = [a.replace("@TMP", str(tmp_path)) for a in args]
    if args[0] == "sweep":
        args += ["--storage", str(tmp_path / "s.db")]
    r = run_tuner(tmp_path, *args)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert says.replace("@LINE", str(line)) in r.stderr and "Traceback" not in r.stderr, (
        r.stderr)
    assert len(r.stderr.strip().splitlines()) == 1
    assert sorted(tmp_path.rglob("*")) == before          # nothing created


def test_final_questions_on_a_workload_that_is_not_gsm8k_is_said_at_the_start(
        tmp_path: Path) -> None:
    """Finding 4: ``--final-questions`` on the ``code`` workload was ignored in silence.
    Now it acts (issue 36: the GSM8K sample is answered beside the workload), and the
    sweep says so at the start (``final_questions_note``)."""
    r = run_tuner(tmp_path, *SWEEP1, "--workload", "code", "--final-questions", "50",
                  "--storage", str(tmp_path / "s.db"), "--workdir", str(tmp_path / "runs"))
    assert r.returncode == 0, (r.stdout, r.stderr)
    first = r.stdout.splitlines()[0]
    assert first.startswith("final accuracy sample: the baseline and each finalist also "
                            "answer 50 GSM8K questions after the code (HumanEval) workload"
                            ), r.stdout
    gsm8k = run_tuner(tmp_path, *SWEEP1, "--final-questions", "50", "--study", "g",
                      "--storage", str(tmp_path / "g.db"), "--workdir", str(tmp_path / "runs"))
    assert gsm8k.returncode == 0 and "after the" not in gsm8k.stdout + gsm8k.stderr
