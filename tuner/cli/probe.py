"""``tuner probe``: measure this GPU's MoE decode costs, warm the Humming JIT cache, and
write a simulator machine profile calibrated to the measurements."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer


def probe(
    space_file: Path = typer.Argument(..., metavar="SPACE", help="search-space YAML file "
                                      "(the model's shapes and the machine)"),
    out: Path = typer.Option(None, help="the raw probe JSON (default trials/probe-<machine>"
                             ".json)"),
    cache_dir: Path = typer.Option(None, help="Humming JIT cache to fill (default: "
                                   "HUMMING_CACHE_DIR or ~/.humming/cache)"),
    profile_dir: Path = typer.Option(Path("trials/profiles"), help="where the calibrated "
                                     "machine profile goes (machines/<id>.yaml)"),
    from_json: Path = typer.Option(None, help="fit a recorded probe JSON instead of "
                                   "measuring (no GPU needed)"),
    m: str = typer.Option("1,2,3,4,5,6,8,12,16", help="token counts M to measure"),
) -> None:
    """Measure this GPU's MoE, LM-head and copy costs, warm the Humming JIT cache, and write
    a simulator machine profile fitted to them (a calibrated twin of this machine).

    GPU only (torch with CUDA, and the probe extra: pip install 'moe-tuner[probe]');
    --from-json fits a recorded probe without one. Then tune against the twin: tuner sweep
    SPACE --engine sim --sim-profiles DIR.
    """
    import importlib.util
    import json

    import yaml

    from tuner.cli._common import console
    from tuner.cli._common import load_checked_space
    from tuner.cli._common import writing
    from tuner.errors import UserError
    from tuner.probe import fit
    from tuner.probe import probe_shapes

    space = load_checked_space(space_file)
    machine = space.spec.machine.id
    shapes = probe_shapes(space)
    c = console()
    if from_json is None:
        out = out or Path("trials") / f"probe-{machine}.json"
        _measure(c, shapes, machine, out, cache_dir, m)
        from_json = out
    try:
        data = json.loads(from_json.read_text())
    except (OSError, ValueError) as exc:
        raise UserError(f"{from_json}: not a probe JSON ({exc.__class__.__name__})") from None
    if not isinstance(data, dict):
        raise UserError(f"{from_json}: not a probe JSON (a {type(data).__name__}, not an "
                        "object)")
    spec = importlib.util.find_spec("tuner_sim")
    root = Path(next(iter(spec.submodule_search_locations or []))) if spec else Path(".")
    base_file = root / "profiles" / "machines" / f"{machine}.yaml"
    if not base_file.is_file():
        raise UserError(f"no base machine profile {machine!r} to calibrate")
    try:
        profile, summary = fit(data, yaml.safe_load(base_file.read_text()))
    except (KeyError, ValueError, TypeError, AttributeError) as exc:
        raise UserError(f"{from_json}: cannot fit ({exc})") from None
    target = profile_dir / "machines" / f"{machine}.yaml"
    with writing("--profile-dir", profile_dir):
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("# calibrated by tuner probe; the simulator reads it with "
                          f"TUNER_SIM_PROFILE_DIR={profile_dir}\n" + yaml.safe_dump(
                              profile, sort_keys=False))
    _print_summary(c, summary)
    c.print(f"wrote {target}\nuse it: tuner sweep {space_file} --engine sim --sim-profiles "
            f"{profile_dir}")


def _measure(c: Any, shapes: dict[str, Any], machine: str, out: Path, cache_dir: Path | None,
             m: str) -> None:
    """Run the standalone GPU probe (``tuner/probe/_gpu.py``) into ``out``."""
    import json
    import os
    import subprocess
    import sys

    from tuner.errors import UserError

    check = subprocess.run([sys.executable, "-c", "import torch; assert torch.cuda."
                            "is_available(), 'no CUDA device'; import humming"],
                           capture_output=True, text=True)
    if check.returncode != 0:
        why = (check.stderr.strip().splitlines() or ["unknown"])[-1]
        raise UserError(f"tuner probe needs a CUDA GPU, PyTorch and humming-kernels "
                        f"(pip install 'moe-tuner[probe]'); here: {why}")
    out.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    if cache_dir is not None:
        env["HUMMING_CACHE_DIR"] = str(cache_dir)
    c.print(f"probing {machine} for {shapes['model']} (a few minutes)...")
    proc = subprocess.run([sys.executable, "-m", "tuner.probe._gpu", "--shapes",
                           json.dumps(shapes), "--m", m, "--out", str(out)], env=env)
    if proc.returncode != 0:
        raise UserError(f"the GPU probe failed (exit {proc.returncode}); see its output")


def _print_summary(c: Any, summary: dict[str, Any]) -> None:
    c.print(f"copy ceiling {summary['copy_gbs']:.0f} GB/s")
    for key in ("moe_w4a16", "moe_w4a8"):
        if key in summary:
            f = summary[key]
            c.print(f"{key}: {f['effective_gbs']:.0f} GB/s effective "
                    f"({f['efficiency']:.0%} of the ceiling), {f['layer_overhead_us']:.1f} us "
                    f"fixed per layer, verify cost t(4)/t(1) = {f['verify_cost'].get(4, 0):.2f}"
                    f" ({f['timing']})")
    if "lm_head" in summary:
        lm = summary["lm_head"]
        c.print(f"LM head: bf16 {lm['bf16']['efficiency']:.0%}, fp8 "
                f"{lm['fp8']['efficiency']:.0%} of the ceiling; relative error bf16 "
                f"{lm['bf16']['max_rel_err']:.1e}, fp8 {lm['fp8']['max_rel_err']:.1e}")
    for stage, err in summary["errors"].items():
        c.print(f"[yellow]{stage} failed[/]: {err}")
