"""Which compiled kernels the installed SGLang has, and what ``tuner init`` must fix because
of them: a flag SGLang accepts can still pick a kernel the installation lacks.

Seen on the H200 with the kit's SGLang 0.5.17 (docs/real-sglang-h200.md, "tuner init on the
kit's tiny models"), whose ``sglang-kernel`` wheel was slimmed and which lacks
``sgl-deep-gemm`` (a declared dependency of that wheel):

* no FA3: ``sgl_kernel/flash_attn.py`` imports ``flash_ops`` at once ("Can not import FA3 in
  sgl_kernel"), and SGLang picks ``fa3`` on a Hopper GPU by default (``server_args.py``
  ``_get_default_attn_backend``: MHA with no top-k > 1 speculation, and every MLA model);
  both tiny models' launches without ``--attention-backend`` died so;
* no ``deep_gemm``: 0.5.17's EAGLE draft worker imports ``layers/attention/dsa_backend.py``
  while it captures its CUDA graphs (``speculative/eagle_worker_v2.py``
  ``_capture_cuda_graphs``, skipped only when decode graphs are disabled), and that module
  imports ``deep_gemm`` at its top on CUDA; both NEXTN launches died so. 0.5.23's
  ``dsa_backend.py`` has no such import: the rule reads the installed source, not a version.

The inventory is read by the engine's own interpreter, by file name only (nothing of the
engine is imported, no GPU is touched); the source by text.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from tuner.engines._sglang_speculative import EAGLE_FAMILY


if TYPE_CHECKING:
    from tuner.engines._capabilities import Capabilities
    from tuner.engines._sglang_init import InitSpace


#: Run by the engine's interpreter: prints a JSON object of what is installed.
_INVENTORY = (
    "import glob, importlib.util, json, os\n"
    "spec = importlib.util.find_spec('sgl_kernel')\n"
    "where = list(spec.submodule_search_locations or []) if spec else []\n"
    "root = where[0] if where else None\n"
    "def has(pattern): return bool(root and glob.glob(os.path.join(root, pattern)))\n"
    "def found(name): return importlib.util.find_spec(name) is not None\n"
    "print(json.dumps({'sgl_kernel': root, 'fa3': has('flash_ops*.so'),\n"
    "                  'flashinfer': found('flashinfer'), 'deep_gemm': found('deep_gemm')}))\n"
)

#: inventory key -> what it is, for the lines written into a space
KERNELS = {
    "fa3": "FA3 attention (sgl_kernel/flash_ops)",
    "flashinfer": "FlashInfer (the flashinfer package)",
    "deep_gemm": "DeepGEMM (the deep_gemm package, from sgl-deep-gemm)",
}
_WORKER = Path("srt/speculative/eagle_worker_v2.py")
_WORKER_IMPORT = "from sglang.srt.layers.attention.dsa_backend import"
_DSA = Path("srt/layers/attention/dsa_backend.py")
_DSA_IMPORT = re.compile(r"^if is_cuda\(\):\n[ \t]+import deep_gemm\b", re.M)
_GRAPH_BS = ("--cuda-graph-max-bs-decode", "--cuda-graph-bs-decode")


def kernel_inventory(python: str | None) -> dict[str, Any] | None:
    """The installation's kernels as the engine's ``python`` sees them (:data:`KERNELS`'
    keys, and ``sgl_kernel``: the package folder or None); None when it cannot be read
    (no interpreter known, or the probe failed), never a guess."""
    if python is None:
        return None
    try:
        out = subprocess.run([python, "-c", _INVENTORY], capture_output=True, text=True,
                             timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    try:
        data = json.loads(out.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None
    if not isinstance(data, dict) or not all(isinstance(data.get(k), bool) for k in KERNELS):
        return None
    return data


def attention_fix(kernels: dict[str, Any] | None, major: int) -> tuple[str, str] | None:
    """(backend, reason) when SGLang's default attention would need a kernel the
    installation lacks on a GPU of compute-capability ``major``; None when it has it, or
    when the inventory is unknown (the default is then left to SGLang, said so)."""
    if kernels is None or major != 9 or kernels.get("fa3"):
        return None
    where = kernels.get("sgl_kernel") or "not installed"
    return "triton", (
        "--attention-backend triton: the installed sglang-kernel has no FA3 "
        f"(no flash_ops*.so in {where}; sgl_kernel/flash_attn.py refuses to import without "
        "it), and FA3 is SGLang's own pick on an sm90 GPU (server_args.py "
        "_get_default_attn_backend); Triton attention is compiled by Triton at run time "
        "and needs no prebuilt kernel")


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="ignore")
    except OSError:
        return ""


def draft_graph_fix(kernels: dict[str, Any] | None, source_root: Path | None) -> str | None:
    """Why the EAGLE draft worker cannot capture CUDA graphs on this installation (its
    capture imports a module that needs ``deep_gemm``, which is not installed); None
    when it can, or when the inventory or the source is unknown."""
    if kernels is None or kernels.get("deep_gemm") is not False or source_root is None:
        return None
    if _WORKER_IMPORT not in _read(source_root / _WORKER):
        return None
    if not _DSA_IMPORT.search(_read(source_root / _DSA)):
        return None
    return ("--cuda-graph-backend-decode disabled: this SGLang's EAGLE draft worker "
            f"(NEXTN, EAGLE3) imports {_DSA.as_posix()} while it captures its CUDA graphs "
            f"({_WORKER.as_posix()} _capture_cuda_graphs, skipped only with decode graphs "
            "disabled) and that module imports deep_gemm, which is not installed (install "
            "sgl-deep-gemm, a dependency of the sglang wheel, to keep the graphs); so no "
            "launch of this space captures decode graphs, and its trials compare alike")


def apply_kernel_fixes(out: InitSpace, caps: Capabilities, major: int) -> None:
    """Fix, in ``out``, the settings whose SGLang default needs a kernel the installation
    lacks (each with its reason), and say in the header what was read."""
    if caps.kernels is None:
        out.header.append("Kernels: the installation's were not read (" + (
            "no SGLang installed here" if not caps.found else "its inventory could not be "
            "read") + "): SGLang's own attention pick is kept; run `tuner init` where the "
            "engine is installed")
        return
    have = ", ".join(f"{what}: {'yes' if caps.kernels.get(key) else 'no'}"
                     for key, what in KERNELS.items())
    out.header.append(f"Kernels: read from the installation ({have})")
    fix = attention_fix(caps.kernels, major)
    if fix is not None and "--attention-backend" not in out.fixed_flags:
        backend, reason = fix
        if caps.accepts("--attention-backend", backend) is False:
            out.left_out.append(f"--attention-backend {backend}: needed ({reason}) but not "
                                "a choice of this engine")
        else:
            out.fixed_flags["--attention-backend"] = backend
            out.fixed_reasons.append(reason)
    spec = next((k for k in out.knobs if k.name == "speculative"), None)
    eagle = spec is not None and bool(EAGLE_FAMILY & set(spec.body["choices"]))
    graphs = out.fixed_flags.get("--cuda-graph-backend-decode") not in (None, "disabled")
    why = draft_graph_fix(caps.kernels, caps.source_root) if eagle and graphs else None
    if why is not None:
        out.fixed_flags["--cuda-graph-backend-decode"] = "disabled"
        for flag in _GRAPH_BS:
            out.fixed_flags.pop(flag, None)
        out.fixed_reasons.append(why)
