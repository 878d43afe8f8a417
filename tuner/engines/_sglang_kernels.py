"""Which compiled kernels the installed SGLang has: what ``tuner init`` needs beyond its
flags, because a flag SGLang accepts can still pick a kernel the installation lacks.

SGLang's prebuilt kernels live in the ``sglang-kernel`` wheel (import name ``sgl_kernel``).
A slimmed wheel such as the H200 kit's (docs/real-sglang-h200.md) drops FA3's
``flash_ops`` extension, which ``sgl_kernel/flash_attn.py`` imports at once ("Can not
import FA3 in sgl_kernel"), while SGLang 0.5.17 and 0.5.23 pick ``fa3`` attention on a
Hopper GPU by default (``server_args.py`` ``_get_default_attn_backend``: MHA with no
top-k > 1 speculation, and every MLA model). The inventory is read by the engine's own
interpreter, by file name only: nothing of the engine is imported, no GPU is touched.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any


#: Run by the engine's interpreter: prints a JSON object of what is installed.
_INVENTORY = (
    "import glob, importlib.util, json, os\n"
    "spec = importlib.util.find_spec('sgl_kernel')\n"
    "where = list(spec.submodule_search_locations or []) if spec else []\n"
    "root = where[0] if where else None\n"
    "def has(pattern): return bool(root and glob.glob(os.path.join(root, pattern)))\n"
    "print(json.dumps({'sgl_kernel': root, 'fa3': has('flash_ops*.so'),\n"
    "                  'flashinfer': importlib.util.find_spec('flashinfer') is not None}))\n"
)

#: inventory key -> what it is, for the reasons written into a space
KERNELS = {
    "fa3": "FA3 attention (sgl_kernel/flash_ops)",
    "flashinfer": "FlashInfer (the flashinfer package)",
}


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
    when the inventory is unknown (the default is then left to SGLang, and the space says
    the inventory was not read)."""
    if kernels is None or major != 9 or kernels.get("fa3"):
        return None
    where = kernels.get("sgl_kernel") or "not installed"
    return "triton", (
        "--attention-backend triton: the installed sglang-kernel has no FA3 "
        f"(no flash_ops*.so in {where}; sgl_kernel/flash_attn.py refuses to import without "
        "it), and FA3 is SGLang's own pick on an sm90 GPU (server_args.py "
        "_get_default_attn_backend); Triton attention is compiled by Triton at run time "
        "and needs no prebuilt kernel")
