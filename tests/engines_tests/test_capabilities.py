from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pytest

from tests.conftest import GSM8K_DIR
from tests.conftest import SPARK
from tests.conftest import run_tuner
from tuner.engines import inspect_engine
from tuner.engines._capabilities import knob_support
from tuner.engines._capabilities import parse_help
from tuner.space import load_space


def test_parse_help_reads_flags_and_choices() -> None:
    p = argparse.ArgumentParser(prog="sglang serve")
    p.add_argument("--moe-runner-backend", choices=["auto", "humming", "flashinfer_mxfp4"])
    p.add_argument("--enable-fp32-lm-head", action="store_true")
    p.add_argument("--mem-fraction-static", type=float)
    flags = parse_help(p.format_help())
    assert flags["--moe-runner-backend"] == ("auto", "humming", "flashinfer_mxfp4")
    assert flags["--enable-fp32-lm-head"] is None
    assert "--mem-fraction-static" in flags
    assert "--help" in flags


FAKE_MAIN = '''
import argparse
p = argparse.ArgumentParser(prog="fake serve")
p.add_argument("--model-path")
p.add_argument("--moe-runner-backend", choices=["auto", "flashinfer_mxfp4", "marlin"])
p.add_argument("--enable-fp32-lm-head", action="store_true")
for f in %s:
    p.add_argument(f)
p.parse_args()
'''


def _fake_engine(tmp_path: Path, envs: list[str]) -> Path:
    pkg = tmp_path / "fakeengine"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "version.py").write_text('__version__ = "0.5.23"\n')
    (pkg / "environ.py").write_text("".join(f"{e} = 1\n" for e in envs))
    flags = [f for f in SPARK_FLAGS if f not in ("--model-path", "--moe-runner-backend",
                                                 "--enable-fp32-lm-head")]
    (pkg / "__main__.py").write_text(FAKE_MAIN % flags)
    return tmp_path


SPARK_FLAGS = sorted({*load_space(SPARK).spec.fixed_flags, "--speculative-algorithm",
                      "--speculative-draft-model-path", "--speculative-num-steps",
                      "--speculative-eagle-topk", "--speculative-num-draft-tokens",
                      "--mem-fraction-static", "--model-path", "--moe-runner-backend",
                      "--enable-fp32-lm-head"})


def test_probe_finds_version_flags_and_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:
    root = _fake_engine(tmp_path, ["SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"])
    monkeypatch.setenv("PYTHONPATH", str(root))
    caps = inspect_engine([sys.executable, "-m", "fakeengine"])
    assert caps.found and caps.version == "0.5.23"
    assert caps.source_root == root / "fakeengine"
    assert caps.accepts("--moe-runner-backend", "marlin") is True
    assert caps.accepts("--moe-runner-backend", "humming") is False
    assert caps.knows_env("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN") is True
    assert caps.knows_env("SGLANG_ENABLE_FP8_LM_HEAD") is False

    by_knob = {s.knob: s for s in knob_support(load_space(SPARK), caps)}
    assert by_knob["moe_backend"].status == "unsupported"
    assert "humming" in by_knob["moe_backend"].detail
    assert by_knob["lm_head"].status == "unsupported"
    assert "SGLANG_ENABLE_FP8_LM_HEAD" in by_knob["lm_head"].detail
    assert by_knob["humming_activation"].status == "unsupported"
    assert by_knob["spec_steps"].status == "supported"
    assert by_knob["(fixed flags and env)"].status == "unsupported"  # other fixed env vars


def test_probe_of_a_missing_engine_says_not_found() -> None:
    caps = inspect_engine(["sglang-that-is-not-installed", "serve"])
    assert not caps.found
    assert "command not found" in (caps.reason or "")
    caps = inspect_engine([sys.executable, "-m", "no_such_module_here", "serve"])
    assert not caps.found and "not installed" in (caps.reason or "")


def _with_metadata(root: Path, dist: str, version: str) -> None:
    """An installed distribution's metadata, as pip writes it (``--target`` installs too)."""
    info = root / f"{dist}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")


def test_version_comes_from_the_installed_metadata_not_version_py(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Real SGLang wheels (0.5.17 on the H200, 0.5.23 here) carry a version.py that reads
    # 0.0.0.dev0; the distribution's metadata has the real version.
    root = _fake_engine(tmp_path, [])
    (root / "fakeengine" / "version.py").write_text('__version__ = "0.0.0.dev0"\n')
    _with_metadata(root, "fakeengine", "0.5.17")
    monkeypatch.setenv("PYTHONPATH", str(root))
    assert inspect_engine([sys.executable, "-m", "fakeengine"]).version == "0.5.17"


def test_a_script_entry_point_is_probed_through_its_interpreter(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _fake_engine(tmp_path, ["SGLANG_SOMETHING"])
    script = tmp_path / "serve_it.py"
    script.write_text("from fakeengine import version\nimport runpy\n"
                      "runpy.run_module('fakeengine', run_name='__main__')\n")
    monkeypatch.setenv("PYTHONPATH", str(root))
    caps = inspect_engine([sys.executable, str(script)])
    assert caps.found and caps.source_root == root / "fakeengine"
    assert caps.version == "0.5.23"
    assert caps.knows_env("SGLANG_SOMETHING") is True
    assert caps.accepts("--moe-runner-backend", "marlin") is True


def test_an_sglang_whose_help_cannot_run_is_probed_with_its_versions_generated_table(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A real SGLang 0.5.23 wheel on a CPU machine: the package and its metadata are there,
    # but launch_server --help dies on a server-only import (huggingface_hub, seen here).
    root = tmp_path / "site"
    (root / "sglang").mkdir(parents=True)
    (root / "sglang" / "__init__.py").write_text("")
    (root / "sglang" / "launch_server.py").write_text("import huggingface_hub_missing\n")
    _with_metadata(root, "sglang", "0.5.23")
    monkeypatch.setenv("PYTHONPATH", str(root))
    caps = inspect_engine([sys.executable, "-m", "sglang.launch_server"])
    assert caps.version == "0.5.23" and caps.help_error is not None
    assert caps.flags_source == "SGLang 0.5.23's generated table"
    assert caps.accepts("--reasoning-parser", "ling3") is True
    assert caps.accepts("--reasoning-parser", "ling4") is False
    assert caps.knows_flag("--cuda-graph-max-bs") is False
    # a module that is not SGLang gets no borrowed table
    (tmp_path / "other").mkdir()
    other = _fake_engine(tmp_path / "other", [])
    (other / "fakeengine" / "__main__.py").write_text("raise SystemExit(1)\n")
    monkeypatch.setenv("PYTHONPATH", str(other))
    caps = inspect_engine([sys.executable, "-m", "fakeengine"])
    assert caps.flags is None and caps.flags_source is None


def test_a_wrapper_that_imports_the_standard_library_first_is_probed_as_its_engine(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a wrapper that imports http.server before the engine: the engine is the package it
    # runs, not the first import (whose source never names SGLANG_SOMETHING)
    root = _fake_engine(tmp_path, ["SGLANG_SOMETHING"])
    script = tmp_path / "my_server.py"
    script.write_text("from http.server import HTTPServer\nimport json\n"
                      "from fakeengine import version\nimport runpy\n"
                      "runpy.run_module('fakeengine', run_name='__main__')\n")
    monkeypatch.setenv("PYTHONPATH", str(root))
    caps = inspect_engine([sys.executable, str(script)])
    assert caps.source_root == root / "fakeengine"
    assert caps.knows_env("SGLANG_SOMETHING") is True


def test_a_wrapper_whose_engine_cannot_be_told_is_unknown_never_unsupported(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _fake_engine(tmp_path, [])
    script = tmp_path / "my_server.py"
    script.write_text("from http.server import HTTPServer\nimport runpy\n"
                      "runpy.run_module('fakeengine', run_name='__main__')\n")
    monkeypatch.setenv("PYTHONPATH", str(root))
    caps = inspect_engine([sys.executable, str(script)])
    assert caps.found and caps.source_root is None
    by_knob = {s.knob: s for s in knob_support(load_space(SPARK), caps)}
    assert by_knob["lm_head"].status == "unknown"           # not "never read": unknown
    assert by_knob["humming_activation"].status == "unknown"
    assert not [s for s in by_knob.values() if s.status == "unsupported"
                and "never read" in s.detail]


def test_dspark_support_is_read_from_the_engines_flags_and_the_draft_from_disk(
        tmp_path: Path) -> None:
    from tuner.engines import algorithm_support
    from tuner.engines import draft_presence
    from tuner.engines import inspect_engine as probe

    sim = probe([sys.executable, "-m", "tuner_sim.fork", "serve"])
    flag = "--speculative-dspark-block-size"
    assert algorithm_support(sim, "DSPARK", flag)[0] == "supported"
    old = probe([sys.executable, "-m", "tuner_sim.fork", "serve"])
    old.flags = {f: c for f, c in (old.flags or {}).items() if "dspark" not in f}
    assert algorithm_support(old, "DSPARK", flag)[0] == "unsupported"
    (tmp_path / "draft").mkdir()
    assert draft_presence(str(tmp_path / "draft"))[0] == "unsupported"   # no config.json
    (tmp_path / "draft" / "config.json").write_text("{}")
    assert draft_presence(str(tmp_path / "draft"))[0] == "supported"
    assert draft_presence("nobody/no-such-draft-here")[0] == "unknown"


def _script_with_a_helper(folder: Path) -> Path:
    """``server.py`` whose engine is a helper module beside it (``sim.py``, running the
    built-in simulator, an SGLang-compatible server), as a user's entry point may be."""
    folder.mkdir()
    (folder / "sim.py").write_text(
        '"""Runs the simulator."""\nimport os\nimport sys\n\n'
        "from tuner_sim import fork\nfrom tuner_sim.server import main\n\n\n"
        "def serve() -> None:\n"
        '    os.environ.setdefault("TUNER_SIM_TIME_SCALE", "300")\n'
        '    main(fork, ["serve", *sys.argv[1:]])\n')
    script = folder / "server.py"
    script.write_text("import sim\n\nsim.serve()\n")
    return script


def test_a_script_whose_engine_is_a_helper_module_beside_it_is_found(tmp_path: Path) -> None:
    """Issue 34 item 4, finding 8: ``python3 server.py`` importing ``sim`` from its own
    folder was refused before any launch (``engine not found: module sim is not
    installed``): the probe looked the module up from the tool's working directory, not
    from the script's folder, where Python looks first when it runs the script."""
    script = _script_with_a_helper(tmp_path / "engine")
    assert Path.cwd() != script.parent
    caps = inspect_engine([sys.executable, str(script)])
    assert caps.found, caps.reason
    assert caps.source_root == script.parent            # the helper's folder
    assert caps.knows_flag("--moe-runner-backend") is True   # its --help was read


@pytest.mark.slow
def test_a_trial_runs_through_a_script_whose_engine_is_a_helper_beside_it(tmp_path: Path
                                                                           ) -> None:
    """Finding 8 as a user meets it: ``tuner trial --engine sglang --engine-command
    'python server.py'`` from another folder launches and measures."""
    script = _script_with_a_helper(tmp_path / "engine")
    (tmp_path / "cwd").mkdir()
    # the stand-in serves on this machine, whose /proc/meminfo the unified-memory guard
    # would read (Ling does not fit a CI box): the space says it is not unified memory
    space = tmp_path / "spark.yaml"
    text = SPARK.read_text()
    assert "  unified_memory: true\n" in text
    space.write_text(text.replace("  unified_memory: true\n", "  unified_memory: false\n"))
    r = run_tuner(tmp_path / "cwd", "trial", str(space), "--engine", "sglang",
                  "--engine-command", f"{sys.executable} {script}", "--gsm8k", str(GSM8K_DIR),
                  "--questions", "2", "--startup-timeout", "120", "--out",
                  str(tmp_path / "r.json"))
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert "engine not found" not in r.stdout + r.stderr
    assert json.loads((tmp_path / "r.json").read_text())["status"] == "ok"


@pytest.mark.parametrize(("fa3", "deep_gemm"), [(False, False), (True, True)])
def test_an_sglangs_kernel_inventory_is_read_by_its_interpreter(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fa3: bool, deep_gemm: bool) -> None:
    # The H200 kit's install: sglang, an sglang-kernel without FA3's flash_ops, no
    # deep_gemm; a full one has both. Only file names are read, nothing is imported.
    root = tmp_path / "site"
    (root / "sglang").mkdir(parents=True)
    (root / "sglang" / "__init__.py").write_text("")
    for package in ("sgl_kernel", "flashinfer") + (("deep_gemm",) if deep_gemm else ()):
        (root / package).mkdir()
        (root / package / "__init__.py").write_text("raise SystemExit('imported')\n")
    (root / "sglang" / "launch_server.py").write_text("raise SystemExit(1)\n")
    if fa3:
        (root / "sgl_kernel" / "flash_ops.abi3.so").write_bytes(b"")
    _with_metadata(root, "sglang", "0.5.17")
    monkeypatch.setenv("PYTHONPATH", str(root))
    caps = inspect_engine([sys.executable, "-m", "sglang.launch_server"])
    assert caps.kernels == {"sgl_kernel": str(root / "sgl_kernel"), "fa3": fa3,
                            "flashinfer": True, "deep_gemm": deep_gemm}
    # an engine that is not SGLang: no inventory
    (tmp_path / "other").mkdir()
    other = _fake_engine(tmp_path / "other", [])
    monkeypatch.setenv("PYTHONPATH", str(other))
    assert inspect_engine([sys.executable, "-m", "fakeengine"]).kernels is None
