"""The sandbox HumanEval's tests run in: real processes, real limits, real sockets.

Every hostile program must end counted failed, with no process of it left running and
nothing written outside its folder. Each runs twice: with the isolation this machine gives
(namespaces, an unprivileged uid when the tests run as root) and with the audit hook and
process-group kill alone (no namespaces, the caller's uid), the fallback where ``unshare``
does not work.
"""

from __future__ import annotations

import os
import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tuner.workloads import Isolation
from tuner.workloads import SandboxLimits
from tuner.workloads import SandboxRun
from tuner.workloads import isolation
from tuner.workloads import run_sandboxed


QUICK = SandboxLimits(wall_s=5.0, cpu_s=1)


@pytest.fixture(params=["isolated", "guard_alone"])
def iso(request: pytest.FixtureRequest) -> Isolation:
    return isolation() if request.param == "isolated" else Isolation((), (), None)


def left_behind(run: SandboxRun) -> list[psutil.Process]:
    """Processes still running from the program's folder (its command line or working
    folder names it; a forked child keeps both)."""
    out = []
    for p in psutil.process_iter(["cmdline", "cwd"]):
        where = " ".join(p.info.get("cmdline") or []) + " " + (p.info.get("cwd") or "")
        if run.folder in where:
            out.append(p)
    return out


def run(program: str, iso: Isolation, limits: SandboxLimits = QUICK) -> SandboxRun:
    got = run_sandboxed(program, limits, iso)
    assert left_behind(got) == []
    assert not Path(got.folder).exists()           # its folder is removed
    return got


def test_a_program_that_runs_to_its_end_passes_and_one_that_raises_fails(iso: Isolation
                                                                          ) -> None:
    assert run("import math\nassert math.gcd(12, 18) == 6\nprint('ok')", iso).passed
    bad = run("assert sorted([2, 1]) == [2, 1], 'not sorted'", iso)
    assert bad.status == "failed" and "AssertionError: not sorted" in bad.detail


def test_an_early_exit_is_not_a_pass(iso: Isolation) -> None:
    """A program that leaves before its last line (its tests) did not pass, whatever its
    exit status."""
    for program in ("import os\nos._exit(0)\nassert False", "import sys\nsys.exit(0)",
                    "raise SystemExit"):
        assert run(program, iso).status == "failed", program


def test_a_busy_loop_is_stopped_by_its_cpu_limit_and_counted_failed(iso: Isolation) -> None:
    got = run("while True:\n    pass\n", iso)
    assert not got.passed
    assert got.status in ("killed", "timed_out"), got


def test_a_sleeping_loop_is_stopped_by_the_wall_clock_and_counted_failed(iso: Isolation
                                                                          ) -> None:
    got = run("import time\nwhile True:\n    time.sleep(0.5)\n", iso,
              SandboxLimits(wall_s=2.0, cpu_s=30))
    assert got.status == "timed_out"


def test_a_fork_bomb_is_refused_and_nothing_survives(iso: Isolation) -> None:
    # The classic bomb only where the kernel also bounds it (an unprivileged uid or a
    # non-root caller: RLIMIT_NPROC holds); as root with the guard alone, a bounded one.
    bounded = iso.uid is None and os.geteuid() == 0
    program = ("import os, time\nfor _ in range(40):\n    if os.fork() == 0:\n"
               "        time.sleep(600)\n" if bounded else
               "import os\nwhile True:\n    os.fork()\n")
    got = run(program, iso)
    assert got.status == "failed" and "os.fork refused" in got.detail


def test_writes_outside_its_folder_are_refused_and_nothing_is_written(
        iso: Isolation, tmp_path: Path) -> None:
    temp = Path(tempfile.gettempdir())        # where the sandbox's folder is: world-writable
    shared_tmp = temp / f"tuner-sandbox-test-{os.getpid()}.txt"
    escaped = temp / f"tuner-sandbox-escaped-{os.getpid()}"
    targets = [tmp_path / "outside.txt", shared_tmp, escaped]
    (tmp_path / "kept.txt").write_text("mine")
    programs = [f"open({str(t)!r}, 'w').write('x')" for t in targets] + [
        f"import os\nfd = os.open({str(targets[1])!r}, os.O_WRONLY | os.O_CREAT)",
        f"import os\nos.symlink({str(targets[1])!r}, 'link')\nopen('link', 'w').write('x')",
        f"import os\nos.remove({str(tmp_path / 'kept.txt')!r})",
        f"import os\nopen('here.txt', 'w').close()\nos.rename('here.txt', {str(targets[0])!r})",
        f"import os\nos.mkdir('../{escaped.name}')",
    ]
    try:
        for program in programs:
            got = run(program, iso)
            assert got.status == "failed" and "refused" in got.detail, (program, got)
        assert not any(t.exists() for t in targets)
        assert (tmp_path / "kept.txt").read_text() == "mine"
    finally:
        shared_tmp.unlink(missing_ok=True)
        if escaped.is_dir():
            escaped.rmdir()
    inside = run("open('scratch.txt', 'w').write('x')\nimport tempfile\n"
                 "with tempfile.TemporaryFile() as f:\n    f.write(b'y')\n"
                 "assert open('scratch.txt').read() == 'x'", iso)
    assert inside.passed, inside             # its own folder is its to use


@pytest.fixture
def listener() -> Iterator[tuple[int, list[bytes]]]:
    """A real TCP server on the loopback: the port, and what any client sent it."""
    srv = socket.create_server(("127.0.0.1", 0))
    srv.settimeout(0.2)
    got: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except TimeoutError:
                continue
            with conn:
                got.append(conn.recv(100) or b"(connected)")
    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield srv.getsockname()[1], got
    stop.set()
    t.join()
    srv.close()


def test_a_network_connection_is_refused(iso: Isolation, listener: tuple[int, list[bytes]]
                                         ) -> None:
    port, received = listener
    for program in (f"import socket\ns = socket.create_connection(('127.0.0.1', {port}), "
                    "timeout=2)\ns.sendall(b'leak')",
                    f"import _socket\ns = _socket.socket()\ns.connect(('127.0.0.1', {port}))"
                    "\ns.send(b'leak')"):
        assert run(program, iso).status == "failed", program
    assert received == []


def test_memory_past_its_limit_fails(iso: Isolation) -> None:
    got = run("x = bytearray(2 * 1024 ** 3)", iso, SandboxLimits(wall_s=10, memory_mb=256))
    assert got.status == "failed" and "MemoryError" in got.detail


def test_the_kernel_limits_and_namespaces_are_in_effect() -> None:
    iso = isolation()
    lim = SandboxLimits(memory_mb=300, cpu_s=7, file_mb=3, open_files=40)
    checks = ["import resource, os",
              "assert resource.getrlimit(resource.RLIMIT_AS)[0] == 300 * 1024 ** 2",
              "assert resource.getrlimit(resource.RLIMIT_CPU)[0] == 7",
              "assert resource.getrlimit(resource.RLIMIT_FSIZE)[0] == 3 * 1024 ** 2",
              "assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == 40",
              "assert resource.getrlimit(resource.RLIMIT_NPROC)[0] < 100000"]
    if iso.uid is not None or os.geteuid() != 0:     # RLIMIT_NPROC binds: threads count
        checks += [f"assert os.getuid() == os.geteuid() == {iso.uid or os.geteuid()}",
                   "import threading, time\nthreading.stack_size(256 * 1024)\nstarted = 0",
                   "try:\n    for _ in range(64):\n        threading.Thread(target=time.sleep, "
                   "args=(30,), daemon=True).start()\n        started += 1\n"
                   "except RuntimeError:\n    pass",
                   "assert started < 64, started"]
    if "net" in iso.namespaces:          # only a loopback, and it is down
        checks.append("ifs = [l.split(':')[0].strip() for l in "
                      "open('/proc/self/net/dev').read().splitlines()[2:]]\n"
                      "assert ifs == ['lo'], ifs")
    if "pid" in iso.namespaces:          # PID 1 is the sandbox's own init
        checks.append("assert os.getppid() == 1 and os.getpid() < 10, os.getpid()")
    got = run("\n".join(checks), iso, lim)
    assert got.passed, got
    big = run("open('big', 'wb').write(b'x' * (4 * 1024 ** 2))", iso, lim)
    assert big.status == "failed" and "File too large" in big.detail   # Python ignores SIGXFSZ
