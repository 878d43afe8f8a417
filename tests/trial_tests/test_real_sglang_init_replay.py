"""Replays of ``tuner init`` and its sweeps on the H200 with the kit's SGLang 0.5.17
(docs/real-sglang-h200.md, "tuner init on the kit's tiny models").

The fixtures in ``tests/fixtures/real_sglang_h200/init/`` are what came back: the spaces
``tuner init`` wrote there against the installed engine (its ``--help``, its source, its
kernel inventory), the tiny models' ``config.json``, the TrialResults of the sweeps and of
one NEXTN trial, the reports (``tuner report --json``), the logs. Each test feeds them
through today's code: the spaces validate and plan the argv that ran, every recorded
verdict is reproduced from the real ``/server_info``, the failures keep their causes, and
today's ``tuner init``, given what the H200 installation was, writes the fixes for what
failed there (the installation itself is not here: a stand-in says so in the test name).
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest

from tuner.engines import Capabilities
from tuner.engines import make_engine
from tuner.engines import table_capabilities
from tuner.models import machine
from tuner.models import read_model
from tuner.models import write_space
from tuner.space import SearchSpace
from tuner.space import load_space
from tuner.space import parse_space
from tuner.trial import TrialResult
from tuner.trial._evidence import effect_check


HERE = Path(__file__).resolve().parents[1] / "fixtures" / "real_sglang_h200" / "init"
MODELS = ("qwen3moe", "dsv3", "qwen3next")
TRIALS = sorted(HERE.glob("trial-*.json"))
#: what the H200's installation was, as tuner init read it there (the spaces' header says)
H200_KERNELS = {"sgl_kernel": "/tmp/site/sgl_kernel", "fa3": False, "flashinfer": True,
                "deep_gemm": False}
#: the two lines of SGLang 0.5.17's source the draft-graph rule reads (the wheel's
#: speculative/eagle_worker_v2.py, line 417, and layers/attention/dsa_backend.py, line 89)
WORKER_0517 = ("        if _is_cuda or _is_musa:\n"
               "            from sglang.srt.layers.attention.dsa_backend import (\n"
               "                DeepseekSparseAttnBackend,\n            )\n")
DSA_0517 = "if is_cuda():\n    import deep_gemm\n"
#: 0.5.23's dsa_backend.py names deep_gemm only in a comment
DSA_0523 = "    # Always normalize to (N_total, 1) layout, to avoid deadlock at deep_gemm.x\n"


def _load(path: Path) -> TrialResult:
    return TrialResult.model_validate_json(path.read_text())


def _h200_space(name: str):  # type: ignore[no-untyped-def]
    return load_space(HERE / f"{name}.yaml")


def _stand_in_source(tmp: Path, dsa: str) -> Path:
    """A stand-in for the installed SGLang's source tree (the package folder) holding the
    two files the draft-graph rule reads, with the text quoted from the wheel."""
    root = tmp / "sglang"
    (root / "srt" / "speculative").mkdir(parents=True)
    (root / "srt" / "layers" / "attention").mkdir(parents=True)
    (root / "srt" / "speculative" / "eagle_worker_v2.py").write_text(WORKER_0517)
    (root / "srt" / "layers" / "attention" / "dsa_backend.py").write_text(dsa)
    return root


def _h200_caps(source_root: Path | None, **kernels: bool) -> Capabilities:
    """The 0.5.17 flag table the H200's --help matched, with that installation's kernels."""
    caps = table_capabilities("0.5.17")
    caps.found, caps.source_root = True, source_root
    caps.kernels = {**H200_KERNELS, **kernels}
    return caps


def _checkpoint(tmp: Path, model: str) -> Path:
    """The tiny model's folder: its recorded config.json and, for Qwen3-Next, a
    safetensors file holding only a header that names the MTP layer's tensors (a stand-in
    for the 13 MB checkpoint, whose 41 mtp.* tensors the H200 log counts)."""
    folder = tmp / model
    folder.mkdir()
    (folder / "config.json").write_text((HERE / f"{model}-config.json").read_text())
    if model == "qwen3next":
        names = ["model.embed_tokens.weight", "mtp.fc.weight",
                 "mtp.layers.0.input_layernorm.weight"]
        header = json.dumps({n: {"dtype": "BF16", "shape": [1],
                                 "data_offsets": [2 * i, 2 * i + 2]}
                             for i, n in enumerate(names)}).encode()
        (folder / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header
                                                   + bytes(2 * len(names)))
    return folder


def test_the_fixtures_are_what_tuner_init_wrote_on_the_h200() -> None:
    for model in MODELS:
        space = _h200_space(f"{model}-h200")
        text = (HERE / f"{model}-h200.yaml").read_text()
        assert space.spec.engine.version == "0.5.17"
        assert "SGLang 0.5.17 as installed (--help; env vars from /tmp/site/sglang)" in text
        assert ("Kernels: read from the installation (FA3 attention (sgl_kernel/flash_ops): "
                "no, FlashInfer (the flashinfer package): yes)") in text
        assert space.spec.fixed_flags["--attention-backend"] == "triton"
        assert space.spec.fixed_flags["--cuda-graph-backend-decode"] == "full"
    assert "speculative" not in _h200_space("qwen3moe-h200").spec.knobs
    for model in ("dsv3", "qwen3next"):
        assert _h200_space(f"{model}-h200").spec.knobs["speculative"].choices == ["off", "NEXTN"]
    assert "MTP layers 1 (model.safetensors header (mtp.* tensors))" in (
        HERE / "qwen3next-h200.yaml").read_text()


def test_the_recorded_configs_read_as_the_h200_did() -> None:
    # transformers 5 saves Qwen3-MoE's expert count as num_local_experts (the first
    # tuner init on the H200 refused it: "num_experts: missing")
    data = json.loads((HERE / "qwen3moe-config.json").read_text())
    assert "num_experts" not in data and data["num_local_experts"] == 8
    assert read_model(HERE / "qwen3moe-config.json").routed_experts == 8
    assert read_model(HERE / "dsv3-config.json").nextn_layers == 1


@pytest.mark.parametrize("path", TRIALS, ids=lambda p: p.stem)
def test_todays_adapter_plans_the_launch_that_ran(path: Path) -> None:
    r = _load(path)
    assert not r.simulated and r.engine == "sglang" and r.plan.engine_version == "0.5.17"
    space = _h200_space(r.space)
    engine = make_engine("sglang")
    config = engine.resolve(space, r.config)
    plan = engine.plan(space, config, host=r.plan.host, port=r.plan.port)
    assert plan.argv == r.plan.argv and plan.env == r.plan.env
    assert config.hash() == r.config_hash


@pytest.mark.parametrize("path", [p for p in TRIALS if _load(p).status == "ok"],
                         ids=lambda p: p.stem)
def test_the_real_server_info_confirms_every_knob_and_fixed_flag(path: Path) -> None:
    r = _load(path)
    checks = effect_check(r.plan.evidence, r.server_info, "")
    assert [(c.knob, c.verdict) for c in checks] == [(c.knob, c.verdict) for c in r.effect]
    assert {c.verdict for c in checks} == {"confirmed"}
    assert r.server_info["attention_backend"] == "triton"


def test_what_was_proven_and_what_failed_on_the_h200() -> None:
    """Each (knob, value) a launch confirmed, and the values whose launches failed."""
    proven: dict[str, set[tuple[str, str]]] = {m: set() for m in MODELS}
    failed: dict[str, list[str]] = {m: [] for m in MODELS}
    for path in TRIALS:
        r = _load(path)
        model = r.space.removesuffix("-h200")
        if r.status == "ok":
            proven[model] |= {(c.knob, str(r.config[c.knob])) for c in r.effect
                              if c.knob in r.config}
        else:
            failed[model].append(r.message or "")
    assert proven["qwen3moe"] == {("moe_backend", "auto"), ("lm_head", "bf16"),
                                  ("mem_fraction", "0.91"), ("mem_fraction", "0.92")}
    assert proven["dsv3"] == {("moe_backend", "auto"), ("lm_head", "bf16"), ("lm_head", "fp32"),
                              ("speculative", "off"), ("mem_fraction", "0.91")}
    assert proven["qwen3next"] == set()
    topk = "AssertionError: Triton-kernel runner expects TritonKernelTopKOutput"
    deep_gemm = "ModuleNotFoundError: No module named 'deep_gemm'"
    assert [m.endswith(topk) for m in failed["dsv3"]] == [True, True, False]
    assert failed["dsv3"][2].endswith(deep_gemm) and failed["qwen3next"][0].endswith(deep_gemm)


def test_the_failures_are_launch_errors_with_their_causes() -> None:
    protocol = make_engine("sglang").protocol()
    for name, config, line in (
            ("trial-dsv3-1", {"moe_backend": "triton_kernel"},
             "AssertionError: Triton-kernel runner expects TritonKernelTopKOutput"),
            ("trial-dsv3-4", {"speculative": "NEXTN"},
             "ModuleNotFoundError: No module named 'deep_gemm'"),
            ("trial-qwen3next-nextn", {"speculative": "NEXTN"},
             "ModuleNotFoundError: No module named 'deep_gemm'")):
        r = _load(HERE / f"{name}.json")
        assert r.status == "failed" and r.reason == "launch_error"
        assert {k: r.config[k] for k in config} == config
        assert protocol.classify_exit(r.log_tail or "") == "launch_error"
        assert protocol.last_error_line(r.log_tail or "") == line
    nextn = _load(HERE / "trial-dsv3-4.json").log_tail or ""
    # the target's and the draft's decode graphs were captured; the draft-extend capture's
    # import of the DSA backend is what died
    assert "Capture draft decode CUDA graph end" in nextn
    assert "eagle_worker_v2.py\", line 417, in _capture_cuda_graphs" in nextn


def test_sglangs_own_attention_pick_died_for_want_of_fa3() -> None:
    """The controls: each model's generated baseline argv without --attention-backend."""
    for model in ("qwen3moe", "dsv3"):
        log = (HERE / f"control-{model}-no-attention-backend.log").read_text()
        # SGLang's own pick on the H200, in the ServerArgs it printed, then the import
        assert log.split("\n")[1] == "attention_backend='fa3'"
        assert "ImportError: Can not import FA3 in sgl_kernel." in log


def test_the_reports_of_the_sweeps() -> None:
    q = json.loads((HERE / "report-qwen3moe.json").read_text())
    d = json.loads((HERE / "report-dsv3.json").read_text())
    assert q["pick"]["trial"] == 0 and d["pick"]["trial"] == 0
    assert [f["reason"] for f in d["failures"]] == ["launch_error"]
    assert not q["failures"]


def as_launched(space: SearchSpace) -> dict[str, dict[str, Any]]:
    """Each knob as it shapes a launch: without ``lossy_values``, which sends nothing
    (the finals' tie-break, docs/search-spaces.md) and came after these runs."""
    return {n: k.model_dump(exclude={"lossy_values"}) for n, k in space.spec.knobs.items()}


@pytest.mark.parametrize("model", MODELS)
def test_todays_init_writes_the_fixes_with_a_stand_in_for_the_h200_install(
        tmp_path: Path, model: str) -> None:
    """Today's tuner init, given the H200's installation (its 0.5.17 flags, its kernel
    inventory, the two source files the rule reads): the knobs and fixed flags the H200's
    space had, less what failed there."""
    caps = _h200_caps(_stand_in_source(tmp_path, DSA_0517))
    text = write_space(read_model(_checkpoint(tmp_path, model)), machine("h200"), caps,
                       drafts=[], engine_version="0.5.17")
    new, old = parse_space(text), _h200_space(f"{model}-h200")
    knobs, before = as_launched(new), as_launched(old)
    fixed, was = dict(new.spec.fixed_flags), dict(old.spec.fixed_flags)
    if model == "qwen3moe":            # nothing failed: the same space
        assert knobs == before and fixed == was
        return
    if model == "dsv3":                # triton_kernel refused: auto alone, no knob
        assert "moe_backend" not in knobs and "triton_kernel" in text
        del before["moe_backend"]
    if model == "qwen3next":           # its baseline died at 0.91 (the rerun): held at 0.87
        assert (before["mem_fraction"]["high"], old.spec.baseline["mem_fraction"]) == (
            0.92, 0.91)
        assert (knobs["mem_fraction"]["high"], new.spec.baseline["mem_fraction"]) == (
            0.87, 0.87)
        assert "index arrays" in text
        knobs["mem_fraction"]["high"] = before["mem_fraction"]["high"]
    assert knobs == before
    assert fixed.pop("--cuda-graph-backend-decode") == "disabled"
    assert was.pop("--cuda-graph-backend-decode") == "full"
    assert was.pop("--cuda-graph-max-bs-decode") == 1 and was.pop("--cuda-graph-bs-decode") == 1
    assert fixed == was
    engine = make_engine("sglang")
    plan = engine.plan(new, engine.canonicalize(new, new.complete({"speculative": "NEXTN"})))
    assert plan.argv[plan.argv.index("--cuda-graph-backend-decode") + 1] == "disabled"


@pytest.mark.parametrize(("kernels", "dsa", "graphs"), [
    ({"deep_gemm": True}, DSA_0517, "full"),     # DeepGEMM installed: graphs stay
    ({}, DSA_0523, "full"),                      # a source whose DSA backend needs none
    ({}, DSA_0517, "disabled"),                  # the H200's: disabled
])
def test_the_draft_graph_rule_reads_the_installed_source_and_kernels_stand_in(
        tmp_path: Path, kernels: dict[str, bool], dsa: str, graphs: str) -> None:
    caps = _h200_caps(_stand_in_source(tmp_path, dsa), **kernels)
    text = write_space(read_model(_checkpoint(tmp_path, "dsv3")), machine("h200"), caps,
                       drafts=[], engine_version="0.5.17")
    assert parse_space(text).spec.fixed_flags["--cuda-graph-backend-decode"] == graphs


def test_without_speculation_the_graphs_stay_and_fa3_decides_the_attention_stand_in(
        tmp_path: Path) -> None:
    source = _stand_in_source(tmp_path, DSA_0517)
    folder = _checkpoint(tmp_path, "qwen3moe")
    for fa3, attention in ((False, "triton"), (True, None)):
        text = write_space(read_model(folder), machine("h200"), _h200_caps(source, fa3=fa3),
                           drafts=[], engine_version="0.5.17")
        flags = parse_space(text).spec.fixed_flags
        assert flags.get("--attention-backend") == attention
        assert flags["--cuda-graph-backend-decode"] == "full"
    # the bundled table (no engine installed here): the inventory unknown, said so
    text = write_space(read_model(folder), machine("h200"), table_capabilities("0.5.17"),
                       drafts=[], engine_version="0.5.17")
    assert "--attention-backend" not in parse_space(text).spec.fixed_flags
    assert "Kernels: the installation's were not read (no SGLang installed here)" in text
