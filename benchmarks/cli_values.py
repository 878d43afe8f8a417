"""Bad command-line values across every subcommand, each run as a user would run it: never a
traceback, a hang, or an impossible value accepted in silence (issue 24's CLI sweep).

    .venv/bin/python benchmarks/cli_values.py [--jobs 3] [--timeout 60] [--only TEXT]

Each case is one ``tuner ...`` process in its own empty folder (a 1-trial simulated sweep,
a small study and its exported profile are built once and shared by the report, export,
verify and dashboard cases). Its exit code, stderr and wall time are classified:

OK             exit 1 or 2, one message line (``error: ...``, or Click's ``Error: ...``
               under its usage lines), no traceback, nothing left in the case's folder;
               or exit 0 where the output states the fallback it took (:data:`STATED`)
TRACEBACK      a Python traceback on stdout or stderr
SILENT-ACCEPT  exit 0 for an impossible value
HANG           still running after --timeout seconds (killed with its process group)
LITTER         refused, but files or folders were created first
UNCLEAR        refused without one clear message line (or an unexpected exit code)

Prints a table of every case, then a summary line; exit 1 when any case is not OK.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path


REPO = Path(__file__).resolve().parent.parent
SPARK = REPO / "search_spaces" / "ling-3.0-flash-dgx-spark.yaml"
H200 = REPO / "search_spaces" / "ling-3.0-flash-h200.yaml"
PROBE_JSON = REPO / "tests" / "probe_tests" / "probe-h200.json"
GSM8K = Path(os.environ.get("TUNER_GSM8K_DIR", REPO.parent / "shared" / "data" / "gsm8k"))

# argv placeholders: @FX the shared fixtures' folder, @CWD the case's own (empty) folder
SW = ["sweep", str(SPARK), "--engine", "sim", "--ray-address", "none", "--gsm8k", str(GSM8K),
      "--trials", "1", "--questions", "4", "--storage", "@CWD/s.db", "--workdir", "@CWD/runs"]
TR = ["trial", str(SPARK), "--engine", "sim", "--gsm8k", str(GSM8K), "--questions", "4",
      "--workdir", "@CWD/runs"]
RD = ["s", "--storage", "@FX/s.db"]
EX = [*RD, "--artifacts", "@FX/s.artifacts"]
PROFILE = "@FX/profile/profile.yaml"
DEAD = "http://127.0.0.1:9"                     # the discard port: nothing listens
#: cases where exit 0 is right because the output says what was done instead (a fallback
#: stated, not a value accepted in silence): case -> the words that must say it
STATED = {"export --artifacts missing": "are not in /no/such (deleted or elsewhere: pass "
                                        "--artifacts); its launch plan was made again"}


def _sweep() -> list[tuple[str, list[str]]]:
    bad = {"--hours": ["inf", "0", "-1", "nan", "abc", "1e400"],
           "--seed": ["-1", "1.5", str(2**64), "abc"],
           "--trials": ["0", "-3", "abc", ""], "--questions": ["0", "-1", "100000"],
           "--max-tokens": ["0", "1000000000000"], "--time-scale": ["0", "nan", "inf"],
           "--noise": ["nan", "-0.1", "2"], "--parallel": ["0", "-1"],
           "--trial-timeout": ["nan", "0", "inf"], "--startup-timeout": ["nan", "inf"],
           "--final-questions": ["-1", "5000"], "--search-questions": ["0", "10"],
           "--early-stop": ["nan", "0.95", "-0.1"], "--sampler": ["bogus", ""],
           "--workload": ["bogus", "mix", ""],
           "--mix": ["code=abc", "bogus=1", "code=-1", "code=inf", "", "code=0",
                     "code=0.5,code=0.5", "code=0.6,chat=0.6", "code=0.5"],
           "--engine": ["bogus", "", "sim:bogus"],
           "--storage": ["sqlite:////no/such/dir/s.db", "@FX/file/s.db", "@FX/dir",
                         "bogus://x", ""],
           "--study": ["", "a\nb", "\x1b[2Jx", "x" * 300],
           "--artifacts": ["@FX/file", "/proc/nope"], "--workdir": ["@FX/file", "/proc/nope"],
           "--sim-profiles": ["/no/such", "@FX/file"],
           "--sim-faults": ["[{kind: oom}", '{"kind": "oom_at_start"}', '[{"kind": "bogus"}]',
                            ""],
           "--gsm8k": ["/no/such", "@FX/dir", "@FX/file", ""],
           "--ray-address": ["127.0.0.1:notaport", "127.0.0.1:1", ""],
           "--api-key": ["a\nb"],
           "--config": ["/no/such.yaml", "@FX/dir", "@FX/night-trials0.yaml",
                        "@FX/night-unknown.yaml", "@FX/night-hours-inf.yaml", "@FX/list.yaml",
                        "@FX/night-api-key.yaml", "@FX/night-storage-5.yaml",
                        "@FX/night-trials-true.yaml", "@FX/night-break-lock-yes.yaml",
                        "@FX/night-regime-ints.yaml", "@FX/night-workload-7.yaml"],
           "--regime": ["x:4:", "x:4:requests=8,", "x", "x:0"]}
    out = [(f"sweep {opt} {v!r}", [*SW, opt, v]) for opt, vals in bad.items() for v in vals]
    out += [("sweep --mix code=0.6,chat=0.4 --workload gsm8k",      # once ran the mix
             [*SW, "--mix", "code=0.6,chat=0.4", "--workload", "gsm8k"])]
    out += [(f"sweep --engine sglang --engine-command {v!r}",
             [*SW, "--engine", "sglang", "--engine-command", v]) for v in ("'unclosed", "")]
    out += [(f"sweep SPACE={v}", ["sweep", v, *SW[2:]]) for v in (
        "/no/such.yaml", "@FX/dir", "@FX/empty.yaml", "@FX/notyaml.yaml", "@FX/binary.yaml")]
    return out


def _others() -> list[tuple[str, list[str]]]:
    cases: dict[str, list[str]] = {
        "trial --seed -1": [*TR, "--seed", "-1"],
        "trial --seed 2**64": [*TR, "--seed", str(2**64)],
        "trial --api-key control chars": [*TR, "--api-key", "a\rb"],
        "trial --out a folder": [*TR, "--out", "@FX/dir"],
        "trial --questions 100000": [*TR, "--questions", "100000"],
        "trial --concurrency 0": [*TR, "--concurrency", "0"],
        "trial --time-scale nan": [*TR, "--time-scale", "nan"],
        "trial --startup-timeout nan": [*TR, "--startup-timeout", "nan"],
        "trial --baseline missing": [*TR, "--baseline", "/no/such.json"],
        "trial --baseline not JSON": [*TR, "--baseline", "@FX/file"],
        "trial --workload jsonl, no --prompts": [*TR, "--workload", "jsonl"],
        "trial --prompts missing": [*TR, "--workload", "jsonl", "--prompts", "/no/such"],
        "trial --prompts a folder": [*TR, "--workload", "jsonl", "--prompts", "@FX/dir"],
        "trial --out under a file": [*TR, "--out", "@FX/file/r.json"],
        "plan --port 99999": ["plan", str(SPARK), "--port", "99999"],
        "plan --port 0": ["plan", str(SPARK), "--port", "0"],
        "plan --port -1": ["plan", str(SPARK), "--port", "-1"],
        "plan --host ''": ["plan", str(SPARK), "--host", ""],
        "plan --host control chars": ["plan", str(SPARK), "--host", "a\nb"],
        "plan --engine bogus": ["plan", str(SPARK), "--engine", "bogus"],
        "plan --engine-command unclosed": ["plan", str(SPARK), "--engine-command", "'x"],
        "plan --engine-command ''": ["plan", str(SPARK), "--engine-command", ""],
        "plan FILE missing": ["plan", "/no/such.yaml"],
        "plan FILE a folder": ["plan", "@FX/dir"],
        "report unknown study": ["report", "nosuch", *RD[1:]],
        "report no --storage, no study here": ["report", "s"],
        "report --storage missing": ["report", "s", "--storage", "/no/such.db"],
        "report --storage a folder": ["report", "s", "--storage", "@FX/dir"],
        "report --storage dead postgres": ["report", "s", "--storage",
                                           "postgresql://u@127.0.0.1:9/db"],
        "report --top 0": ["report", *RD, "--top", "0"],
        "report --top -1": ["report", *RD, "--top", "-1"],
        "report --html unwritable": ["report", *RD, "--html", "/proc/no/r.html"],
        "report --html a folder": ["report", *RD, "--html", "@FX/dir"],
        "report --csv a folder": ["report", *RD, "--csv", "@FX/dir"],
        "report --csv under a file": ["report", *RD, "--csv", "@FX/file/x.csv"],
        "report study ''": ["report", "", *RD[1:]],
        "export --tpot-tolerance nan": ["export", *EX, "--tpot-tolerance", "nan"],
        "export --tpot-tolerance -1": ["export", *EX, "--tpot-tolerance", "-1"],
        "export --tpot-tolerance inf": ["export", *EX, "--tpot-tolerance", "inf"],
        "export --out under a file": ["export", *EX, "--out", "@FX/file/p"],
        "export --out unwritable": ["export", *EX, "--out", "/proc/p"],
        "export --out a file": ["export", *EX, "--out", "@FX/file"],
        "export --storage missing": ["export", "s", "--storage", "/no/such.db"],
        "export --artifacts missing": ["export", *RD, "--artifacts", "/no/such",
                                       "--out", "@CWD/p"],
        "verify PROFILE missing": ["verify", "/no/such.yaml", "--url", DEAD],
        "verify PROFILE a folder": ["verify", "@FX/dir", "--url", DEAD],
        "verify PROFILE not a profile": ["verify", "@FX/file", "--url", DEAD],
        "verify PROFILE empty": ["verify", "@FX/empty.yaml", "--url", DEAD],
        "verify --requests -1": ["verify", PROFILE, "--url", DEAD, "--requests", "-1"],
        "verify --url bogus": ["verify", PROFILE, "--url", "bogus"],
        "verify --url ''": ["verify", PROFILE, "--url", ""],
        "verify --url unclosed [": ["verify", PROFILE, "--url", "http://[::1"],
        "verify --url port 99999": ["verify", PROFILE, "--url", "http://127.0.0.1:99999"],
        "verify --log missing": ["verify", PROFILE, "--url", DEAD, "--log", "/no/such.log"],
        "verify --log a folder": ["verify", PROFILE, "--url", DEAD, "--log", "@FX/dir"],
        "verify --gsm8k missing": ["verify", PROFILE, "--url", DEAD, "--gsm8k", "/no/such"],
        "verify --api-key control chars": ["verify", PROFILE, "--url", DEAD, "--api-key",
                                           "a\nb"],
        "dashboard --port 99999": ["dashboard", *RD, "--port", "99999"],
        "dashboard --port 0": ["dashboard", *RD, "--port", "0"],
        "dashboard --host not ours": ["dashboard", *RD, "--host", "203.0.113.1"],
        "dashboard --host no such name": ["dashboard", *RD, "--host", "no such host"],
        "dashboard --host ''": ["dashboard", *RD, "--host", ""],
        "dashboard --host control chars": ["dashboard", *RD, "--host", "a\nb"],
        "dashboard unknown study": ["dashboard", "nosuch", *RD[1:]],
        "dashboard --storage missing": ["dashboard", "s", "--storage", "/no/such.db"],
        "space validate missing": ["space", "validate", "/no/such.yaml"],
        "space validate a folder": ["space", "validate", "@FX/dir"],
        "space validate empty": ["space", "validate", "@FX/empty.yaml"],
        "space validate not YAML": ["space", "validate", "@FX/notyaml.yaml"],
        "space validate binary": ["space", "validate", "@FX/binary.yaml"],
        "space validate a list": ["space", "validate", "@FX/list.yaml"],
        "space show missing": ["space", "show", "/no/such.yaml"],
        "space show empty": ["space", "show", "@FX/empty.yaml"],
        "sim calibrate --machine bogus": ["sim", "calibrate", "--machine", "bogus"],
        "sim calibrate --machine ''": ["sim", "calibrate", "--machine", ""],
        "sim calibrate --machine ../..": ["sim", "calibrate", "--machine", "../../../x"],
        "sim serve --variant bogus": ["sim", "serve", "--variant", "bogus"],
        "doctor SPACE missing": ["doctor", "/no/such.yaml"],
        "doctor --engine bogus": ["doctor", "--engine", "bogus"],
        "doctor --engine-command unclosed": ["doctor", "--engine-command", "'x"],
        "doctor --engine-command ''": ["doctor", "--engine-command", ""],
        "probe SPACE missing": ["probe", "/no/such.yaml"],
        "probe --from-json missing": ["probe", str(H200), "--from-json", "/no/such.json"],
        "probe --from-json not JSON": ["probe", str(H200), "--from-json", "@FX/file"],
        "probe --from-json a list": ["probe", str(H200), "--from-json", "@FX/list.json"],
        "probe --from-json {}": ["probe", str(H200), "--from-json", "@FX/object.json"],
        "probe --profile-dir under a file": ["probe", str(H200), "--from-json",
                                             str(PROBE_JSON), "--profile-dir", "@FX/file/p"],
        "probe --out under a file (no GPU)": ["probe", str(H200), "--out", "@FX/file/p.json"],
        "unknown command": ["nosuch"],
    }
    return list(cases.items())


def fixtures(fx: Path) -> None:
    """The shared inputs: a 1-trial simulated study, its exported profile, odd files."""
    for name, text in {"file": "x", "empty.yaml": "", "notyaml.yaml": "a: [b\n\t- {",
                       "list.yaml": "- 1\n", "list.json": "[]", "object.json": "{}",
                       "night-trials0.yaml": "trials: 0\n",
                       "night-unknown.yaml": "trails: 3\n",
                       "night-hours-inf.yaml": "hours: .inf\n",
                       "night-api-key.yaml": "api-key: k\n",
                       "night-storage-5.yaml": "storage: 5\n",     # once a journal "5"
                       "night-trials-true.yaml": "trials: true\n",  # once 1 trial
                       "night-break-lock-yes.yaml": 'break-lock: "yes"\n',
                       "night-regime-ints.yaml": "regime: [1, 2]\n",
                       "night-workload-7.yaml": "workload: 7\n"}.items():
        (fx / name).write_text(text)
    (fx / "binary.yaml").write_bytes(b"\x00\xff\xfe" * 50)
    (fx / "dir").mkdir()
    argv = [*_argv(SW, fx, fx), "--study", "s"]
    built = subprocess.run(argv, capture_output=True, text=True, cwd=fx, env=_env())
    assert built.returncode == 0, built.stderr
    shutil.rmtree(fx / "runs")
    exported = subprocess.run(_argv(["export", *EX, "--out", "@FX/profile"], fx, fx),
                              capture_output=True, text=True, cwd=fx, env=_env())
    assert exported.returncode == 0, exported.stderr


def _argv(args: list[str], fx: Path, cwd: Path) -> list[str]:
    return [sys.executable, "-m", "tuner",
            *(a.replace("@FX", str(fx)).replace("@CWD", str(cwd)) for a in args)]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TUNER_GSM8K", "TUNER_API_KEY")}
    return {**env, "PYTHONPATH": str(REPO), "COLUMNS": "200"}


@dataclass
class Outcome:
    name: str
    exit: int | None
    seconds: float
    verdict: str
    message: str


def verdict(code: int | None, out: str, err: str, litter: list[str], stated: str | None = None
            ) -> tuple[str, str]:
    """The class of one case and the message line it is judged by (``stated``: exit 0 is
    right when the output holds these words)."""
    lines = [ln for ln in err.splitlines() if ln.strip()]
    said = [ln for ln in lines if ln.lower().startswith("error:")]
    message = said[0] if said else (lines[-1] if lines else "")
    if code is None:
        return "HANG", message
    if "Traceback" in out or "Traceback" in err:
        return "TRACEBACK", next((ln for ln in reversed(lines) if ln[:1].isalpha()), message)
    if code == 0 and stated is not None and stated in out + err:
        return "OK", next(ln for ln in (out + err).splitlines() if stated in ln)
    if code == 0:
        return "SILENT-ACCEPT", (out.strip().splitlines() or [""])[-1]
    usage = [ln for ln in lines if not ln.startswith(("Usage:", "Try '"))]
    if code not in (1, 2) or len(said) != 1 or len(usage) != 1:
        return "UNCLEAR", message or f"({len(lines)} lines)"
    if litter:
        return "LITTER", f"left {', '.join(litter)}; {message}"
    return "OK", message


def run_case(name: str, args: list[str], fx: Path, timeout: float) -> Outcome:
    """Run one case in a fresh folder; a hang is killed with its whole process group."""
    with tempfile.TemporaryDirectory(prefix="cli-case-") as tmp:
        cwd = Path(tmp)
        t0 = time.perf_counter()
        proc = subprocess.Popen(_argv(args, fx, cwd), cwd=cwd, env=_env(), text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=timeout)
            code: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            code = None
        seconds = time.perf_counter() - t0
        litter = sorted(p.name for p in cwd.iterdir())
    kind, message = verdict(code, out, err, litter, STATED.get(name))
    return Outcome(name, code, seconds, kind, message)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=3, help="cases at once")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds before a case hangs")
    ap.add_argument("--only", default="", help="run the cases whose name contains this")
    a = ap.parse_args()
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    cases = [c for c in _sweep() + _others() if a.only in c[0]]
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="cli-values-") as tmp:
        fx = Path(tmp)
        fixtures(fx)
        with ThreadPoolExecutor(a.jobs) as pool:
            results = list(pool.map(lambda c: run_case(*c, fx, a.timeout), cases))
    table = Table(title="tuner CLI: bad values")
    for col in ("case", "exit", "s", "class", "message"):
        table.add_column(col, overflow="fold")
    colour = {"OK": "green", "SILENT-ACCEPT": "red", "TRACEBACK": "red", "HANG": "red"}
    for r in results:
        table.add_row(escape(repr(r.name)[1:-1]), str(r.exit), f"{r.seconds:.1f}",
                      f"[{colour.get(r.verdict, 'yellow')}]{r.verdict}[/]",
                      escape(repr(r.message[:160])[1:-1]))
    Console(width=200).print(table)
    counts = {k: sum(r.verdict == k for r in results) for k in (
        "OK", "TRACEBACK", "SILENT-ACCEPT", "HANG", "LITTER", "UNCLEAR")}
    slowest = max(results, key=lambda r: r.seconds)
    print(f"{len(results)} cases: " + ", ".join(f"{v} {k}" for k, v in counts.items())
          + f"; slowest {slowest.seconds:.1f} s ({slowest.name!r}); "
          f"{time.perf_counter() - t0:.0f} s in all")
    sys.exit(0 if counts["OK"] == len(results) else 1)


if __name__ == "__main__":
    main()
