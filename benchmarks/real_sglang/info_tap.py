"""Keep the full ``/server_info`` of every SGLang server that comes up while this runs.

    python benchmarks/real_sglang/info_tap.py OUTDIR &     # then run tuner trial / sweep

A TrialResult keeps a fixed subset of ``/server_info`` (``KEPT_FIELDS`` in
``tuner/engines/_sglang_protocol.py``); DSPARK's evidence also reads
``speculative_draft_model_path`` and ``speculative_dspark_block_size``, which that subset
drops. The trial checks its evidence against the full answer while the server is up; this
tap keeps that full answer too, so that a replay test can check the same evidence later.

Every second it lists the ``sglang serve`` processes (``/proc/*/cmdline``, read only), asks
each one's ``--port`` for ``/server_info`` and writes the latest answer to
``OUTDIR/server-info-<algorithm>-<port>.json``. It never touches a server otherwise.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
import urllib.request
from pathlib import Path


def ports() -> set[int]:
    found = set()
    for cmd in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = cmd.read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if "serve" in argv and "--port" in argv and any("sglang" in a for a in argv[:3]):
            with contextlib.suppress(IndexError, ValueError):
                found.add(int(argv[argv.index("--port") + 1]))
    return found


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    while True:
        for port in ports():
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/server_info",
                                            timeout=2) as r:
                    info = json.loads(r.read())
            except Exception:
                continue
            algo = str(info.get("speculative_algorithm") or "off").lower()
            (out / f"server-info-{algo}-{port}.json").write_text(
                json.dumps(info, indent=1, sort_keys=True, default=str))
        time.sleep(1)


if __name__ == "__main__":
    main()
