"""What an installed engine accepts: its version, its flags and choices, its env vars.

Found without starting a server: the flags come from the entry point's ``--help`` (an
argparse listing), the env vars from the engine's installed source (a variable the source
never mentions is silently ignored: stock SGLang 0.5.23 and ``SGLANG_ENABLE_FP8_LM_HEAD``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any
from typing import Literal

from tuner.processes import child_env
from tuner.space import SearchSpace
from tuner.space import value_key


Status = Literal["supported", "unsupported", "unknown"]

_FLAG_RE = re.compile(r"(?<![\w-])(--[a-z0-9][a-z0-9-]*)(?:[ =]\{([^{}]*)\})?")
_VERSION_RE = re.compile(r"__version__\s*=\s*['\"]([^'\"]+)['\"]")
_IMPORT_RE = re.compile(r"^\s*(?:from\s+([\w.]+)\s+import\s|import\s+([\w.]+))", re.M)
#: Packages an engine's source can be. A wrapper script runs the first of these it imports;
#: one that imports none of them runs its only non-standard-library import, if it has
#: exactly one; otherwise its engine is "unknown", never read as another package (a script
#: that imports http.server first is not the engine).
ENGINE_PACKAGES = ("sglang", "tuner_sim")
#: Run by the engine's own interpreter: prints the package folder (a plain module's: the
#: folder it is in), then the version of the distribution named like the top-level package
#: (empty when there is none, e.g. the simulator, whose version is in its ``version.py``).
#: Metadata, not ``version.py``: real SGLang wheels carry a ``version.py`` that reads
#: ``0.0.0.dev0``. A second argument is the folder Python puts first on ``sys.path`` when it
#: runs the entry point (a script's own folder), in place of ``-c``'s working directory.
_FIND_ROOT = (
    "import importlib.util, importlib.metadata as md, os, sys\n"
    "name = sys.argv[1]\n"
    "if len(sys.argv) > 2: sys.path[0] = sys.argv[2]\n"
    "spec = importlib.util.find_spec(name)\n"
    "if spec is None: sys.exit(3)\n"
    "if not spec.submodule_search_locations:\n"
    "    spec = importlib.util.find_spec(name.split('.')[0])\n"
    "locations = spec.submodule_search_locations\n"
    "print(list(locations)[0] if locations else os.path.dirname(spec.origin or ''))\n"
    "try: print(md.version(name.split('.')[0]))\n"
    "except Exception: print('')\n"
)


@dataclass
class Capabilities:
    """What was learnt about one engine command."""

    command: list[str]
    found: bool
    reason: str | None = None
    version: str | None = None
    source_root: Path | None = None
    flags: dict[str, tuple[str, ...] | None] | None = None
    help_error: str | None = None
    #: where ``flags`` came from: "--help", or the generated table used when --help failed
    flags_source: str | None = None
    #: the installation's compiled kernels (SGLang: ``_sglang_kernels.kernel_inventory``);
    #: None when not read (no engine installed here, or the probe failed)
    kernels: dict[str, Any] | None = None
    _env_cache: dict[str, bool] = field(default_factory=dict, repr=False)

    def knows_flag(self, flag: str) -> bool | None:
        if self.flags is None:
            return None
        return flag in self.flags

    def accepts(self, flag: str, value: str) -> bool | None:
        if self.flags is None:
            return None
        if flag not in self.flags:
            return False
        choices = self.flags[flag]
        if choices is None:
            return True
        return value in choices or value.upper() in choices

    def knows_env(self, var: str) -> bool | None:
        """Whether the engine's source mentions ``var`` (None when the source is unknown)."""
        return self.mentions(var)

    def mentions(self, needle: str) -> bool | None:
        """Whether the engine's source mentions ``needle`` (None when the source is
        unknown)."""
        if self.source_root is None:
            return None
        if needle not in self._env_cache:
            self._env_cache[needle] = _source_mentions(self.source_root, needle)
        return self._env_cache[needle]


def _source_mentions(root: Path, needle: str) -> bool:
    for path in root.rglob("*.py"):
        try:
            if needle in path.read_text(encoding="utf-8", errors="ignore"):
                return True
        except OSError:
            continue
    return False


def parse_help(text: str) -> dict[str, tuple[str, ...] | None]:
    """Flags and their ``{choices}`` from an argparse ``--help`` listing."""
    flags: dict[str, tuple[str, ...] | None] = {}
    for m in _FLAG_RE.finditer(text):
        name, choices = m.group(1), m.group(2)
        parsed = tuple(c.strip() for c in choices.split(",")) if choices else None
        if flags.get(name) is None:
            flags[name] = parsed
    return flags


def _python_of(script: Path) -> str | None:
    try:
        first = script.read_text(encoding="utf-8", errors="ignore").splitlines()[0]
    except (OSError, IndexError):
        return None
    if first.startswith("#!") and "python" in first:
        return first[2:].strip().split()[0]
    return None


@dataclass(frozen=True)
class _Located:
    python: str | None = None
    root: Path | None = None
    version: str | None = None
    reason: str | None = None
    module: str | None = None


def _entry_module(command: list[str], exe: str
                  ) -> tuple[str | None, str | None, str | None]:
    """(interpreter, top-level module, the folder Python puts first on ``sys.path``) of an
    entry command, without running it.

    ``python -m pkg ...`` and ``python script.py ...`` run through that interpreter (a
    script's package is its first ``from X import``); a console script through the
    interpreter of its ``#!`` line. A script's imports resolve from its own folder first
    (a helper module beside it is found), ``-m``'s from the working directory (None).
    """
    if Path(command[0]).name.startswith("python") and len(command) > 1:
        if command[1] == "-m" and len(command) > 2:
            return exe, command[2], None
        script = Path(command[1])
        if script.suffix == ".py":
            return exe, _imported_package(script), str(script.resolve().parent)
        return exe, None, None
    python = _python_of(Path(exe))
    if python is None:
        return None, None, None
    return python, _imported_package(Path(exe)), str(Path(exe).resolve().parent)


def _imported_package(script: Path) -> str | None:
    """The engine package a script runs (:data:`ENGINE_PACKAGES`); None when it cannot be
    told with certainty."""
    import sys

    try:
        text = script.read_text(encoding="utf-8", errors="ignore")
    except OSError:
        return None
    tops = list(dict.fromkeys((m.group(1) or m.group(2)).split(".")[0]
                              for m in _IMPORT_RE.finditer(text)))
    known = [t for t in tops if t in ENGINE_PACKAGES]
    if known:
        return known[0]
    others = [t for t in tops if t not in sys.stdlib_module_names and t != "__future__"]
    return others[0] if len(others) == 1 else None


def _locate(command: list[str]) -> _Located:
    """Where the engine behind ``command`` is installed, and its version."""
    exe = shutil.which(command[0])
    if exe is None:
        return _Located(reason=f"{command[0]}: command not found")
    python, module, first = _entry_module(command, exe)
    if python is None or module is None:
        return _Located(python=python)
    try:
        out = subprocess.run([python, "-c", _FIND_ROOT, module, *([first] if first else [])],
                             capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return _Located(python=python)
    if out.returncode == 3:
        return _Located(python=python,
                        reason=f"module {module} is not installed for {python}")
    lines = out.stdout.splitlines()
    if out.returncode != 0 or not lines or not lines[0].strip():
        return _Located(python=python)
    root = Path(lines[0].strip())
    version = lines[1].strip() if len(lines) > 1 and lines[1].strip() else None
    return _Located(python=python, root=root, version=version or _file_version(root),
                    module=module)


def _file_version(root: Path | None) -> str | None:
    if root is None:
        return None
    for candidate in (root / "version.py", root / "__init__.py",
                      root.parent / "version.py"):
        try:
            m = _VERSION_RE.search(candidate.read_text(encoding="utf-8"))
        except OSError:
            continue
        if m:
            return m.group(1)
    return None


def inspect_engine(command: list[str], *, timeout: float = 180.0) -> Capabilities:
    """Learn what the engine behind ``command`` accepts. Never raises for a missing engine."""
    if not command:
        return Capabilities(command=command, found=False, reason="empty engine command")
    where = _locate(command)
    if where.reason is not None:
        return Capabilities(command=command, found=False, reason=where.reason)
    caps = Capabilities(command=command, found=True, source_root=where.root,
                        version=where.version)
    if (where.module or "").split(".")[0] == "sglang":
        from tuner.engines._sglang_kernels import kernel_inventory

        caps.kernels = kernel_inventory(where.python)
    try:
        out = subprocess.run([*command, "--help"], capture_output=True, text=True,
                             timeout=timeout, env={**child_env(), "COLUMNS": "200"})
    except (OSError, subprocess.TimeoutExpired) as exc:
        caps.help_error = f"{' '.join(command)} --help failed: {exc.__class__.__name__}"
        return caps
    if out.returncode != 0 or "--" not in out.stdout:
        tail = (out.stderr or out.stdout).strip().splitlines()[-1:] or ["no output"]
        caps.help_error = f"{' '.join(command)} --help exited {out.returncode}: {tail[0]}"
        _table_fallback(caps, where)
        return caps
    caps.flags = parse_help(out.stdout)
    caps.flags_source = "--help"
    return caps


def _table_fallback(caps: Capabilities, where: _Located) -> None:
    """Stock SGLang whose ``--help`` cannot run here (a server-only dependency missing):
    its flags from the table generated from that version's parser, said as such."""
    if (where.module or "").split(".")[0] != "sglang" or where.version is None:
        return
    from tuner.engines._sglang_flags import flags_for
    from tuner.engines._sglang_flags import table_version

    caps.flags = {name: f.choices for name, f in flags_for(where.version).items()}
    caps.flags_source = f"SGLang {table_version(where.version)}'s generated table"


def algorithm_support(caps: Capabilities, algorithm: str, flag: str) -> tuple[Status, str]:
    """Whether the engine serves a speculative ``algorithm`` (``DSPARK``): by its own
    ``flag`` (``--speculative-dspark-block-size``, in SGLang 0.5.23 and in the 0.5.17 H200
    kit), else, when its flags are unknown, by its source naming it."""
    known = caps.knows_flag(flag)
    if known is not None:
        return (("supported", f"{algorithm}: {flag} is among the engine's flags") if known
                else ("unsupported", f"{algorithm}: no {flag} among the engine's flags"))
    named = caps.mentions(algorithm.upper())
    if named is None:
        return "unknown", f"{algorithm}: the engine's flags and source are unknown"
    return (("unknown", f"{algorithm}: named in the engine's source (flags unknown)") if named
            else ("unsupported", f"{algorithm}: the engine's source never names it"))


def draft_presence(path: str) -> tuple[Status, str]:
    """Whether a draft model at ``path`` can be loaded here: a local folder with its
    ``config.json``, or a hub id already in the Hugging Face cache (one that is not is
    downloaded at start-up, and fails offline)."""
    local = Path(path).expanduser()
    if local.is_absolute() or path.startswith(".") or local.exists():
        if (local / "config.json").is_file():
            return "supported", f"{path}: a local folder with its config.json"
        return "unsupported", f"{path}: no such folder, or no config.json in it"
    hub = Path(os.environ.get("HF_HUB_CACHE") or Path(os.environ.get(
        "HF_HOME", "~/.cache/huggingface")) / "hub").expanduser()
    cached = hub / ("models--" + path.replace("/", "--"))
    if cached.is_dir():
        return "supported", f"{path}: in the Hugging Face cache ({cached})"
    return "unknown", (f"{path}: not in the Hugging Face cache ({hub}); SGLang downloads it "
                       "at start-up (offline, the launch fails)")


@dataclass(frozen=True)
class Support:
    """Whether one knob (or fixed setting) can take effect on the probed engine."""

    knob: str
    status: Status
    detail: str


def _merge(statuses: list[tuple[Status, str]]) -> tuple[Status, str]:
    bad = [d for s, d in statuses if s == "unsupported"]
    if bad:
        return "unsupported", "; ".join(bad)
    unknown = list(dict.fromkeys(d for s, d in statuses if s == "unknown"))
    if unknown:
        return "unknown", "; ".join(unknown)
    return "supported", "; ".join(d for _, d in statuses if d) or "ok"


def _check_flag(caps: Capabilities, flag: str, value: object) -> tuple[Status, str]:
    if value is None or value is False:
        return "supported", ""
    known = caps.knows_flag(flag)
    if known is None:
        # one reason for every flag (the header prints why --help failed)
        return "unknown", "the engine's flags are unknown (its --help failed)"
    if not known:
        return "unsupported", f"{flag} is not a flag of this engine"
    if value is True or isinstance(value, list):
        return "supported", ""
    text = value_key(value)
    if "{" in text:  # a placeholder such as {model.path}
        return "supported", ""
    if not caps.accepts(flag, text):
        return "unsupported", f"{flag} does not accept {text!r}"
    return "supported", ""


def _check_env(caps: Capabilities, var: str) -> tuple[Status, str]:
    known = caps.knows_env(var)
    if known is None:
        return "unknown", f"{var}: engine source not found"
    if not known:
        return "unsupported", f"{var} is never read by this engine (silently ignored)"
    return "supported", ""


def value_support(space: SearchSpace, caps: Capabilities, knob: str, value: object
                  ) -> tuple[Status, str]:
    """Support of one knob value: every flag and env var it sends must be known."""
    c = space.contribution(knob, value)
    checks = [_check_flag(caps, f, v) for f, v in c.flags.items()]
    checks += [_check_env(caps, e) for e in c.env]
    return _merge(checks) if checks else ("supported", "sends nothing")


def knob_support(space: SearchSpace, caps: Capabilities) -> list[Support]:
    """Per knob of ``space`` (and its fixed settings): supported, unsupported or unknown."""
    out: list[Support] = []
    fixed = [_check_flag(caps, f, v) for f, v in space.spec.fixed_flags.items()]
    fixed += [_check_env(caps, e) for e in space.spec.fixed_env]
    status, detail = _merge(fixed)
    out.append(Support("(fixed flags and env)", status, detail))
    for name in space.order:
        domain = space.domain(name)
        values = domain if domain is not None else [space.knob(name).low]
        per_value = []
        for v in values:
            s, d = value_support(space, caps, name, v)
            if s == "unsupported":
                d = f"{value_key(v)}: {d}"
            per_value.append((s, d))
        status, detail = _merge(per_value)
        if status == "supported":
            detail = "all values"
        out.append(Support(name, status, detail))
    return out
