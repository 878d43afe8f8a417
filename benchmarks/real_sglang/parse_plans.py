"""Check our DSPARK launch plans against SGLang 0.5.23's own parser and resolution code.

    python benchmarks/real_sglang/parse_plans.py --ring-control 16    # both Ling spaces
    python benchmarks/real_sglang/parse_plans.py --space S.yaml --all  # every plan of S
    python benchmarks/real_sglang/parse_plans.py --space /tmp/pinned16.yaml --ring-control 16
    python benchmarks/real_sglang/parse_plans.py --argv-file plans.json
    python benchmarks/real_sglang/parse_plans.py --all --ple-control \
        --space search_spaces/qwen3.8-flash-next-nvfp4-dgx-spark.yaml

What it proves, for every configuration of each space (``load_space(...).iter_configs()``,
then the engine's ``repair``, ``canonicalize`` and ``plan``, as a sweep launches them) whose
argv carries ``--speculative-algorithm DSPARK`` (every plan with ``--all``):

* SGLang's own parser takes the argv: ``ServerArgs.add_cli_args`` + ``parse_args``, then
  ``ServerArgs.from_cli_args``;
* SGLang's own DSPARK resolution takes it: ``handle_linear_attn_backend`` and
  ``handle_speculative_decoding`` (which calls ``_handle_dspark``) run, in pipeline order, on
  a record prepared as ``run_resolution_pipeline`` prepares it;
* the KDA ReplaySSM ring holds the RESOLVED verify window, checked twice: the condition as
  ``mem_cache/memory_pool.py`` states it (L a power of two, L >= 2 * draft tokens, the draft
  tokens being ``max_speculative_num_draft_tokens``, which the pool is built with) and by
  building SGLang's real ``MambaPool`` on the CPU with a tiny KDA (KimiLinear) state shape.

* for every plan that sets the Qwen4-Exp n-gram (PLE) table's offload
  (``--ple-offload-embedding``, ``--ple-offload-backend``): SGLang's own flag check of it,
  ``handle_offload_compatibility`` (``arg_groups/memory_hook.py``: the file backend needs
  the offload on, and the offload excludes the generic layer offload).

``--ple-control`` adds a negative control per space: its first plan with
``--ple-offload-backend file``, the offload turned off (``--no-ple-offload-embedding``); it
passes only when SGLang's check refuses it.

``--ring-control LEN`` adds a negative control per space, built by hand so that our tool's
plan-time refusal is bypassed: the space's first DSPARK plan with the block size set to
``--control-gamma`` (8) and ``--linear-replayssm-cache-len`` set to LEN. It passes only when
SGLang's parser and resolution accept it and the ring check and the MambaPool refuse it.

Two interpreters: this file runs in the tuner's venv to build the plans, then re-runs itself
(``--check``) under ``--sglang-python`` (default /tmp/sgl-venv/bin/python), a venv holding
the SGLang 0.5.23 wheel (installed ``--no-deps``) plus what importing its server args needs
(torch 2.13.0 CPU, transformers 5.19.0 and a few small packages). No GPU and no network.

What the check patches, because the real code would read the draft checkpoint or the GPU:
``device`` is declared ``cuda`` (resolved from the platform on a GPU host),
``read_draft_checkpoint_config`` raises (offline; SGLang catches it and takes gamma from
``--speculative-dspark-block-size``), ``_resolve_speculative_algorithm_alias`` is called
without the draft path (it only reads the draft's HF config to spot Gemma4 drafts), and when
torchvision cannot be imported (PyPI's build does not load beside the CPU torch) an empty
stand-in is installed, which only the multimodal configs' import touches. Exit status 1 on
any failure: a plan refused by SGLang, a resolved value that differs from the flag we send,
a ring check and MambaPool that disagree, a crash in our tool, or a control not refused.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any


ROOT = Path(__file__).resolve().parents[2]
DEFAULT_SPACES = [ROOT / "search_spaces" / "ling-3.0-flash-dgx-spark.yaml",
                  ROOT / "search_spaces" / "ling-3.0-flash-h200.yaml"]
RING = "--linear-replayssm-cache-len"
GAMMA = "--speculative-dspark-block-size"
RESOLVED_FIELDS = ("speculative_algorithm", "speculative_dspark_block_size",
                   "speculative_num_draft_tokens", "speculative_num_steps",
                   "speculative_eagle_topk", "linear_replayssm_cache_len",
                   "enable_linear_replayssm_spec", "mamba_ssm_dtype")
PATCH_SOURCE = "parse_plans(device)"


def flag_value(argv: list[str], flag: str) -> str | None:
    return argv[argv.index(flag) + 1] if flag in argv else None


def is_dspark(argv: list[str]) -> bool:
    return (flag_value(argv, "--speculative-algorithm") or "").upper() == "DSPARK"


def set_flag(argv: list[str], flag: str, value: str) -> list[str]:
    out = list(argv)
    if flag in out:
        out[out.index(flag) + 1] = value
    else:
        out += [flag, value]
    return out


# ---- plan side: the tuner's venv ------------------------------------------------------------

def collect(path: Path, every: bool) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every distinct launch our tool plans for the space (DSPARK ones unless ``every``)."""
    from tuner.engines import make_engine
    from tuner.errors import UserError
    from tuner.space import load_space

    engine = make_engine("sglang")
    space = load_space(path)
    skip = len(engine.entry_command(space))
    stats: collections.Counter[str] = collections.Counter()
    examples: dict[str, str] = {}
    plans: dict[str, dict[str, Any]] = {}
    for values in space.iter_configs():
        stats["configs"] += 1
        try:
            values, _ = engine.repair(space, values)
        except UserError as e:
            stats["refused by our tool (repair)"] += 1
            examples.setdefault("refused by our tool (repair)", str(e))
            continue
        except Exception as e:  # a bug in our tool, not a refusal: plan the values as given
            key = f"repair crashed ({type(e).__name__})"
            stats[key] += 1
            examples.setdefault(key, f"{values}: {e}")
        try:
            plan = engine.plan(space, engine.canonicalize(space, values), port=30123)
        except UserError as e:
            stats["refused by our tool (plan)"] += 1
            examples.setdefault("refused by our tool (plan)", str(e))
            continue
        argv = plan.argv[skip:]
        if not (every or is_dspark(argv)):
            continue
        stats["DSPARK plans" if is_dspark(argv) else "other plans"] += 1
        key = json.dumps([argv, sorted(plan.env.items())])
        plans.setdefault(key, {"label": path.name, "argv": argv, "env": dict(plan.env),
                               "expect": "accept"})
    return list(plans.values()), {"stats": dict(stats), "examples": examples}


PLE_ON, PLE_OFF, PLE_BACKEND = ("--ple-offload-embedding", "--no-ple-offload-embedding",
                                "--ple-offload-backend")


def sets_ple(argv: list[str]) -> bool:
    return any(a in (PLE_ON, PLE_OFF, PLE_BACKEND) for a in argv)


def ple_control(items: list[dict[str, Any]], label: str) -> dict[str, Any] | None:
    """A launch SGLang must refuse: a file-backed PLE plan with the offload turned off."""
    base = next((i for i in items if flag_value(i["argv"], PLE_BACKEND) == "file"), None)
    if base is None:
        return None
    argv = [PLE_OFF if a == PLE_ON else a for a in base["argv"]]
    if PLE_OFF not in argv:
        argv.append(PLE_OFF)
    return {"label": f"{label} PLE control (file backend, offload off)", "argv": argv,
            "env": base["env"], "expect": "refuse", "refuse_at": "ple"}


def control(items: list[dict[str, Any]], label: str, ring: int, gamma: int) -> dict[str, Any]:
    """A hand-built launch our tool refuses to plan: a DSPARK plan, gamma and ring forced."""
    base = next((i for i in items if is_dspark(i["argv"])
                 and flag_value(i["argv"], GAMMA) == str(gamma)),
                next(i for i in items if is_dspark(i["argv"])))
    argv = set_flag(set_flag(base["argv"], GAMMA, str(gamma)), RING, str(ring))
    return {"label": f"{label} control (gamma {gamma}, ring {ring})", "argv": argv,
            "env": base["env"], "expect": "refuse"}


def main_plan(opts: argparse.Namespace) -> int:
    items: list[dict[str, Any]] = []
    tool_crashed = False
    spaces = opts.space if opts.space is not None else ([] if opts.argv_file
                                                          else DEFAULT_SPACES)
    for path in spaces:
        found, info = collect(Path(path), opts.all)
        print(f"{Path(path).name}: our tool, {info['stats']}")
        for key, text in info["examples"].items():
            print(f"  e.g. {key}: {text[:300]}")
        tool_crashed |= any(k.startswith("repair crashed") for k in info["stats"])
        print(f"  {len(found)} distinct launches to check")
        if opts.ring_control is not None:
            found.append(control(found, Path(path).name, opts.ring_control,
                                 opts.control_gamma))
        if opts.ple_control:
            extra = ple_control(found, Path(path).name)
            if extra is None:
                print(f"  no file-backed PLE plan in {Path(path).name}: no PLE control")
                tool_crashed = True
            else:
                found.append(extra)
        items += found
    if opts.argv_file:
        for entry in json.loads(Path(opts.argv_file).read_text()):
            entry = entry if isinstance(entry, dict) else {"argv": entry}
            items.append({"label": Path(opts.argv_file).name, "env": {},
                          "expect": "accept", **entry})
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(items, f)
    try:
        rc = subprocess.run([opts.sglang_python, __file__, "--check", f.name],
                            check=False).returncode
    finally:
        os.unlink(f.name)
    if tool_crashed:
        print("FAIL: our tool's repair crashed on some configurations (see above)")
    return rc or int(tool_crashed)


# ---- check side: the SGLang venv ------------------------------------------------------------

def _stub_torchvision() -> bool:
    """Stand in for torchvision when it cannot be imported; True when the stand-in is used."""
    import importlib.abc
    import importlib.machinery
    import importlib.util
    import types

    try:
        import torchvision  # noqa: F401
        return False
    except Exception:
        sys.modules.pop("torchvision", None)
    # transformers caches "no torchvision" before the stand-in appears, so it keeps its
    # torchvision-free code paths
    from transformers.utils import import_utils

    assert not import_utils.is_torchvision_available()

    class Anything:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            pass

        def __call__(self, *args: Any, **kwargs: Any) -> Anything:
            return Anything()

        def __getattr__(self, name: str) -> Anything:
            return Anything()

    class Module(types.ModuleType):
        def __getattr__(self, name: str) -> Any:
            if name.startswith("__"):
                raise AttributeError(name)
            return Anything()

    class Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
            if name.split(".")[0] == "torchvision":
                return importlib.machinery.ModuleSpec(name, self, is_package=True)
            return None

        def create_module(self, spec: Any) -> Any:
            return Module(spec.name)

        def exec_module(self, module: Any) -> None:
            module.__path__ = []

    sys.meta_path.insert(0, Finder())
    return True


class Checker:
    def __init__(self) -> None:
        import logging
        import warnings

        logging.basicConfig(level=logging.ERROR)
        warnings.simplefilter("ignore", UserWarning)  # "Only CUDA ... support AWQ/GGUF"
        self.stubbed = _stub_torchvision()
        from sglang.srt.arg_groups import speculative_hook
        from sglang.srt.server_args import ServerArgs
        from sglang.srt.speculative.dspark_components import dspark_config

        def no_draft_config(*, server_args: Any) -> Any:
            raise RuntimeError("offline: the draft checkpoint's config is not read")

        dspark_config.read_draft_checkpoint_config = no_draft_config
        alias = speculative_hook._resolve_speculative_algorithm_alias

        def alias_offline(algorithm: Any, draft_path: Any, **kwargs: Any) -> Any:
            return alias(algorithm, None, **kwargs)

        speculative_hook._resolve_speculative_algorithm_alias = alias_offline
        self.parser = argparse.ArgumentParser(prog="sglang serve")
        ServerArgs.add_cli_args(self.parser)
        self.defaults = {a.dest: a.default for a in self.parser._actions}
        self.pools: dict[tuple[int, int, str], str | None] = {}

    def parse(self, argv: list[str]) -> tuple[Any, str | None]:
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err):
                return self.parser.parse_args(argv), None
        except SystemExit:
            return None, err.getvalue().strip().splitlines()[-1]

    def resolve(self, args: Any) -> tuple[Any, str | None]:
        """SGLang's linear-attn and speculative handlers, in pipeline order."""
        from sglang.srt.arg_groups.arg_utils import record_fields
        from sglang.srt.arg_groups.attention_hook import handle_linear_attn_backend
        from sglang.srt.arg_groups.overrides import declare_resolution
        from sglang.srt.arg_groups.speculative_hook import handle_speculative_decoding

        args._raw_input = {f.name: getattr(args, f.name) for f in record_fields(type(args))}
        args._resolved_overrides = []
        args._input_frozen = True
        try:
            declare_resolution(args, PATCH_SOURCE, device="cuda")
            handle_linear_attn_backend(args)
            handle_speculative_decoding(args)
        except Exception as e:
            return args, f"{type(e).__name__}: {e}"
        finally:
            args._input_frozen = False
        return args, None

    def offload(self, args: Any) -> str | None:
        """SGLang's flag-only PLE offload check (arg_groups/memory_hook.py)."""
        from sglang.srt.arg_groups.arg_utils import record_fields
        from sglang.srt.arg_groups.memory_hook import handle_offload_compatibility

        args._raw_input = {f.name: getattr(args, f.name) for f in record_fields(type(args))}
        args._resolved_overrides = []
        args._input_frozen = True
        try:
            handle_offload_compatibility(args)
        except Exception as e:
            return f"{type(e).__name__}: {e}"
        finally:
            args._input_frozen = False
        return None

    def pool(self, ring: int, tokens: int, ssm_dtype: str) -> str | None:
        """SGLang's MambaPool with a tiny KDA state, as the KV-cache configurator builds it."""
        key = (ring, tokens, ssm_dtype)
        if key not in self.pools:
            import torch
            from sglang.srt.configs.mamba_utils import KimiLinearCacheParams
            from sglang.srt.configs.mamba_utils import KimiLinearStateShape
            from sglang.srt.configs.mamba_utils import Mamba2StateDType
            from sglang.srt.mem_cache.memory_pool import MambaPool

            shape = KimiLinearStateShape.create(tp_world_size=1, num_heads=2, head_dim=4)
            params = KimiLinearCacheParams(shape=shape, layers=[0], dtype=Mamba2StateDType(
                conv=torch.bfloat16, temporal=getattr(torch, ssm_dtype)))
            try:
                MambaPool(size=2, spec_state_size=1, cache_params=params, mamba_layer_ids=[0],
                          device="cpu", speculative_num_draft_tokens=tokens,
                          speculative_eagle_topk=1, linear_replayssm_cache_len=ring,
                          enable_linear_replayssm_spec=True)
                self.pools[key] = None
            except Exception as e:
                self.pools[key] = f"{type(e).__name__}: {e}"
        return self.pools[key]

    def check(self, item: dict[str, Any]) -> dict[str, Any]:
        from sglang.srt.arg_groups.overrides import max_speculative_num_draft_tokens
        from sglang.srt.arg_groups.overrides import resolution_result
        from sglang.srt.server_args import ServerArgs

        argv = item["argv"]
        out: dict[str, Any] = {"stage": "parse"}
        saved = dict(os.environ)
        os.environ.update(item.get("env", {}))
        try:
            ns, out["error"] = self.parse(argv)
            if ns is None:
                return out
            out["stage"] = "from_cli_args"
            try:
                args = ServerArgs.from_cli_args(ns)
            except Exception as e:
                out["error"] = f"{type(e).__name__}: {e}"
                return out
            out["stage"] = "parsed"
            if sets_ple(argv):
                out["stage"] = "ple"
                out["error"] = self.offload(args)
                if out["error"]:
                    return out
                out["stage"] = "ple checked"
            if not is_dspark(argv):
                return out
            out["stage"] = "resolve"
            args, out["error"] = self.resolve(args)
            if out["error"]:
                return out
            out["stage"] = "resolved"
            out["resolved"] = {f: resolution_result(args, f) for f in RESOLVED_FIELDS}
            out["overrides"] = [f"{src}: {field} {ns_value!r} -> {value!r}"
                                for src, fields in args._resolved_overrides
                                if src != PATCH_SOURCE
                                for field, value in fields.items()
                                if (ns_value := getattr(ns, field, None))
                                != self.defaults.get(field) and value != ns_value]
            if not out["resolved"]["enable_linear_replayssm_spec"]:
                return out
            ring = int(out["resolved"]["linear_replayssm_cache_len"])
            tokens = max_speculative_num_draft_tokens(args)
            out["ring"] = (ring, tokens)
            out["ring_ok"] = ring & (ring - 1) == 0 and ring >= 2 * tokens
            out["pool_error"] = self.pool(ring, tokens, out["resolved"]["mamba_ssm_dtype"])
            return out
        finally:
            os.environ.clear()
            os.environ.update(saved)


def verdict(item: dict[str, Any], res: dict[str, Any]) -> str | None:
    """None when the result is what the item expects, else why not."""
    if item.get("refuse_at") == "ple":
        if res["stage"] == "ple" and res.get("error"):
            return None
        return f"PLE control not refused by SGLang's check (stage {res['stage']})"
    if res.get("error"):
        return f"SGLang refused at {res['stage']}: {res['error']}"
    if res.get("overrides"):
        return "SGLang resolved a flag we send differently: " + "; ".join(res["overrides"])
    if "resolved" in res:
        gamma = flag_value(item["argv"], GAMMA)
        got = res["resolved"]
        if gamma is not None and got["speculative_num_draft_tokens"] != int(gamma) + 1:
            return f"gamma {gamma} resolved to {got['speculative_num_draft_tokens']} tokens"
        sent = flag_value(item["argv"], RING)
        if sent is not None and got["linear_replayssm_cache_len"] != int(sent):
            return f"ring {sent} resolved to {got['linear_replayssm_cache_len']}"
    if "ring_ok" in res and res["ring_ok"] != (res["pool_error"] is None):
        return f"ring condition {res['ring_ok']} but MambaPool says {res['pool_error']}"
    if item["expect"] == "refuse":
        if res.get("ring_ok", True):
            return "control accepted: the ring condition did not refuse it"
        return None
    if res.get("ring_ok") is False:
        ring, tokens = res["ring"]
        return f"ring {ring} breaks the KDA ring rule for {tokens} tokens: {res['pool_error']}"
    return None


def main_check(path: str) -> int:
    items = json.loads(Path(path).read_text())
    checker = Checker()
    import sglang

    print(f"SGLang {sglang.__version__} ({Path(sglang.__file__).parent}); patched: device=cuda,"
          " read_draft_checkpoint_config raises, algorithm alias without the draft path"
          + (", torchvision stand-in" if checker.stubbed else ""))
    by_label: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    for item in items:
        by_label.setdefault(item["label"], []).append((item, checker.check(item)))
    failures = 0
    for label, rows in by_label.items():
        n = len(rows)
        count = collections.Counter()
        values: collections.Counter[tuple[int, str]] = collections.Counter()
        for item, res in rows:
            count["parsed"] += res["stage"] not in ("parse", "from_cli_args")
            count["dspark"] += is_dspark(item["argv"])
            count["resolved"] += res["stage"] == "resolved"
            count["ring ok"] += res.get("ring_ok") is True
            count["pool ok"] += "ring" in res and res["pool_error"] is None
            count["ple"] += sets_ple(item["argv"])
            count["ple ok"] += res["stage"] not in ("parse", "from_cli_args", "ple")
            if "resolved" in res:
                r = res["resolved"]
                values[r["speculative_num_draft_tokens"],
                       f"gamma {r['speculative_dspark_block_size']} -> draft tokens "
                       f"{r['speculative_num_draft_tokens']}, ring "
                       f"{r['linear_replayssm_cache_len']}, ssm {r['mamba_ssm_dtype']}"] += 1
        print(f"\n{label}: {n} launches; parsed (parser + from_cli_args) {count['parsed']}/{n};"
              f" DSPARK resolved {count['resolved']}/{count['dspark']}; ring condition ok "
              f"{count['ring ok']}/{count['resolved']}; MambaPool built "
              f"{count['pool ok']}/{count['resolved']}"
              + (f"; PLE offload check passed {count['ple ok']}/{count['ple']}"
                 if count["ple"] else ""))
        for (_, text), k in sorted(values.items()):
            print(f"  {k:5d} x {text}")
        for item, res in rows:
            why = verdict(item, res)
            if item.get("refuse_at") == "ple":
                print(f"  PLE control: SGLang says {res.get('error')}\n  control argv: "
                      f"{' '.join(item['argv'])}")
                print(f"  control {'PASSED (refused as expected)' if why is None else 'FAILED'}")
            elif item["expect"] == "refuse":
                print(f"  control: parser {'accepted' if res['stage'] != 'parse' else 'refused'},"
                      f" resolved {res.get('resolved', {}).get('speculative_num_draft_tokens')}"
                      f" draft tokens, ring condition ok={res.get('ring_ok')}, MambaPool: "
                      f"{res.get('pool_error')}\n  control argv: {' '.join(item['argv'])}")
                print(f"  control {'PASSED (refused as expected)' if why is None else 'FAILED'}")
            if why is not None:
                failures += 1
                print(f"  FAIL {why}\n    argv: {' '.join(item['argv'])}")
    print(f"\n{len(items)} launches checked, {failures} failures")
    return 1 if failures else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--space", action="append", help="search space (repeatable; default: "
                    "the two Ling-3.0-flash spaces)")
    ap.add_argument("--all", action="store_true", help="check every plan, not just DSPARK")
    ap.add_argument("--argv-file", help="JSON list of argv lists (no entry command) or of "
                    '{"argv": [...], "env": {...}, "expect": "accept"|"refuse"}')
    ap.add_argument("--ring-control", type=int, metavar="LEN",
                    help="add a hand-built control per space with this ring length")
    ap.add_argument("--control-gamma", type=int, default=8)
    ap.add_argument("--ple-control", action="store_true",
                    help="add a PLE offload control per space (one SGLang must refuse)")
    ap.add_argument("--sglang-python", default="/tmp/sgl-venv/bin/python")
    ap.add_argument("--check", metavar="FILE", help=argparse.SUPPRESS)
    opts = ap.parse_args()
    if opts.check:
        return main_check(opts.check)
    return main_plan(opts)


if __name__ == "__main__":
    sys.exit(main())
