"""The SGLang engine adapter: validation of a space against SGLang's flags, canonical forms
(the resolution rules in :mod:`tuner.engines._sglang_rules`), launch plans with the evidence
each knob must show, profile files, and the server protocol
(:mod:`tuner.engines._sglang_protocol`). With the flag table, the only place that knows
SGLang's flag names and rules (docs/sglang-facts.md).
"""

from __future__ import annotations

import re
import shlex
import sys
from collections.abc import Callable
from typing import Any

import yaml

from tuner.engines._base import Engine
from tuner.engines._base import KnobEvidence
from tuner.engines._base import LaunchPlan
from tuner.engines._base import ServerProtocol
from tuner.engines._host import Host
from tuner.engines._host import MemoryNeed
from tuner.engines._host import SimulatedHosts
from tuner.engines._sglang_block_draft import BLOCK_DRAFT_RULES
from tuner.engines._sglang_block_draft import block_draft_evidence
from tuner.engines._sglang_block_draft import derived_flags
from tuner.engines._sglang_block_draft import repair_ring
from tuner.engines._sglang_capacity import MAX_RUNNING
from tuner.engines._sglang_capacity import capacity_evidence
from tuner.engines._sglang_capacity import capacity_flags
from tuner.engines._sglang_capacity import check_capacity_space
from tuner.engines._sglang_flags import CONFIG_REFUSED
from tuner.engines._sglang_flags import FLAGS
from tuner.engines._sglang_flags import REMOVED_FLAGS
from tuner.engines._sglang_flags import flags_for
from tuner.engines._sglang_flags import table_note
from tuner.engines._sglang_flags import table_version
from tuner.engines._sglang_flags import value_problem
from tuner.engines._sglang_protocol import SGLangProtocol
from tuner.engines._sglang_rules import ALGORITHM
from tuner.engines._sglang_rules import FP8_LM_HEAD_ENV
from tuner.engines._sglang_rules import FP32_LM_HEAD
from tuner.engines._sglang_rules import RULES
from tuner.engines._sglang_rules import View
from tuner.engines._sglang_rules import fixed_evidence
from tuner.engines._sglang_rules import tree_overflow
from tuner.engines._sglang_rules import truthy_env
from tuner.space import Config
from tuner.space import Evidence
from tuner.space import SearchSpace
from tuner.space import value_key


def render_value(value: Any, space: SearchSpace) -> str:
    """A flag value as SGLang's argparse reads it, placeholders filled."""
    if isinstance(value, float):
        return repr(value)
    return space.substitute(str(value))


def _range_ends(knob: Any) -> list[tuple[str, int | float]]:
    """An int or float knob's ``low`` and ``high`` as its flag receives them."""
    if knob.type not in ("int", "float"):
        return []
    return [(end, int(v) if knob.type == "int" else float(v)) for end in ("low", "high")
            if (v := getattr(knob, end)) is not None]


class SGLangEngine(Engine):
    """SGLang (stock 0.5.23, the Ling fork, or anything that takes the same flags).

    ``command`` is the entry point that precedes the flags: ``["sglang", "serve"]`` by default,
    ``[python, "-m", "sglang.launch_server"]``, a fork's script, or the simulator.
    ``extra_env`` is added to every launch (e.g. the simulator's settings). ``hosts``: the
    launches run on simulated machines whose memory the simulator writes (None: on the
    machine that launches them); ``time_scale``: see :attr:`Engine.time_scale`.
    """

    def __init__(self, command: list[str] | None = None, *, name: str = "sglang",
                 extra_env: dict[str, str] | None = None,
                 plan_env: Callable[[SearchSpace], dict[str, str]] | None = None,
                 hosts: SimulatedHosts | None = None, time_scale: float = 1.0,
                 simulated: bool = False) -> None:
        self.command = list(command) if command else None
        self.name = name
        self.simulated = simulated
        self.extra_env = dict(extra_env or {})
        self._plan_env = plan_env
        self.hosts = hosts
        self.time_scale = time_scale

    # -- validation ------------------------------------------------------------------------
    def validate_space(self, space: SearchSpace) -> None:
        self._check_flags(space)          # every flag it names, against the version's table
        check_capacity_space(space)

    def _check_flags(self, space: SearchSpace) -> None:
        spec = space.spec
        extra = set(spec.engine.extra_flags)
        table = flags_for(spec.engine.version)
        version = table_version(spec.engine.version)

        def check(path: tuple[str | int, ...], flag: str, value: Any) -> None:
            if flag in REMOVED_FLAGS and flag not in table:
                raise space.error(path, f"{flag} does not exist in SGLang {version} (argparse "
                                        f"rejects it as ambiguous); use {REMOVED_FLAGS[flag]}")
            if flag in ("--host", "--port"):
                raise space.error(path, f"{flag} is set by the tuner for each launch")
            if flag in ("--api-key", "--admin-api-key"):
                raise space.error(path, f"{flag} does not belong in a space file (it would be "
                                        "stored with the study); pass --api-key or set "
                                        "TUNER_API_KEY")
            if flag == "--model-path":
                raise space.error(path, "give the model path under model.path")
            if flag in extra:
                return
            f = table.get(flag)
            if f is None:
                raise space.error(path, f"unknown SGLang {version} flag {flag}; "
                                        f"a fork's flag goes under engine.extra_flags")
            if value is None:  # a knob's flag: values are checked per choice below
                return
            if f.store_true:
                if not isinstance(value, bool):
                    raise space.error(path, f"{flag} takes no value; write true or false")
                return
            if isinstance(value, bool):
                raise space.error(path, f"{flag} takes a value, not {str(value).lower()}")
            problem = value_problem(f, value)
            if problem is not None:
                raise space.error(path, problem)

        for flag, value in spec.fixed_flags.items():
            check(("fixed_flags", flag), flag, value)
        for name, k in spec.knobs.items():
            if k.flag is not None:
                if k.flag in spec.fixed_flags:
                    raise space.error(("knobs", name, "flag"),
                                      f"{k.flag} is also under fixed_flags; keep one")
                check(("knobs", name, "flag"), k.flag, None)
                f = table.get(k.flag)
                if f is not None and f.type == "int" and k.type == "float":
                    raise space.error(("knobs", name, "type"), f"{k.flag} takes an integer; "
                                      "a float knob cannot set it (use an int knob)")
                for end, value in _range_ends(k):    # where they are written
                    check(("knobs", name, end), k.flag, value)
                for i, c in enumerate(space.domain(name) or []):
                    if k.type == "bool":
                        if f is not None and not f.store_true:
                            raise space.error(("knobs", name, "flag"),
                                              f"{k.flag} takes a value; a bool knob needs a "
                                              f"store_true flag (or use 'values')")
                        break
                    check(("knobs", name, "choices", i), k.flag, c)
            for key, c in (k.values or {}).items():
                for flag, value in c.flags.items():
                    check(("knobs", name, "values", key, "flags", flag), flag, value)

    # -- canonical form --------------------------------------------------------------------
    def canonicalize(self, space: SearchSpace, values: dict[str, Any]) -> Config:
        out = dict(values)
        for rule in (*RULES, *BLOCK_DRAFT_RULES):
            rule(space, out)
        # keep the space's knob order
        return Config({n: out[n] for n in space.order if n in out})

    def secret_args(self, api_key: str | None) -> list[str]:
        return ["--api-key", api_key] if api_key else []

    def repair(self, space: SearchSpace, values: dict[str, Any]) -> tuple[dict[str, Any],
                                                                          str | None]:
        """Move a sampler's proposal the server would crash on to the nearest one it runs:
        a draft count beyond the EAGLE tree becomes the largest the tree holds."""
        overflow = tree_overflow(space, values)
        if overflow is not None and overflow[0] in values:
            owner, most, reason = overflow
            return {**values, owner: most}, f"{owner} {values[owner]} -> {most}: {reason}"
        repaired = repair_ring(space, values)
        if repaired is None:
            return values, None
        owner, value, why = repaired
        return {**values, owner: value}, f"{owner} {values[owner]} -> {value}: {why}"

    # -- launch ----------------------------------------------------------------------------
    def entry_command(self, space: SearchSpace) -> list[str]:
        if self.command:
            return list(self.command)
        cmd = list(space.spec.engine.command)
        if cmd and cmd[0] == "python":
            cmd[0] = sys.executable
        return cmd

    def plan(self, space: SearchSpace, config: Config, *, host: str = "127.0.0.1",
             port: int = 30000) -> LaunchPlan:
        model_path = space.spec.model.path
        view = View(space, config.as_dict())
        notes: list[str] = []
        if truthy_env(view.env.get(FP8_LM_HEAD_ENV)) and view.flags.get(FP32_LM_HEAD):
            del view.flags[FP32_LM_HEAD]
            notes.append(f"{FP32_LM_HEAD} dropped: the FP8 LM head takes precedence")
        for flag, value in derived_flags(space, config.as_dict()).items():
            view.flags[flag] = value
            notes.append(f"{flag} {value} derived: the ReplaySSM ring must be a power of "
                         "two holding twice the verify window (SGLang's default 16 fails "
                         "at start-up past a window of 8)")
        graphs = capacity_flags(space, config.as_dict())
        view.flags.update(graphs)
        if graphs:
            shown = ", ".join(f"{f} {' '.join(map(str, v)) if isinstance(v, list) else v}"
                              for f, v in graphs.items())
            notes.append(f"{shown} derived from {MAX_RUNNING}: the decode graphs must cover "
                         "the batches it runs")
        version_note = table_note(space.spec.engine.version)
        if version_note is not None:
            notes.append(version_note)
        argv = [*self.entry_command(space), "--model-path", model_path]
        for flag, value in view.flags.items():
            if value is None or value is False:
                continue
            if value is True:
                argv.append(flag)
            elif isinstance(value, list):
                argv += [flag, *(render_value(v, space) for v in value)]
            else:
                argv += [flag, render_value(value, space)]
        argv += ["--host", host, "--port", str(port)]
        env = dict(view.env)
        env.update(self.extra_env)
        if self._plan_env is not None:
            env.update(self._plan_env(space))
        if self.hosts is not None:
            env[self.hosts.env_var] = self.hosts.meminfo(port)
        evidence = [self._evidence(space, n, v) for n, v in config.values.items()]
        evidence += block_draft_evidence(space, config.as_dict())
        evidence += capacity_evidence(space, config.as_dict())
        evidence += fixed_evidence(space)
        return LaunchPlan(
            engine=self.name, engine_version=space.spec.engine.version, argv=argv, env=env,
            host=host, port=port, config=config.as_dict(), config_hash=config.hash(),
            evidence=evidence, notes=notes, speculative=view.flag(ALGORITHM) is not None,
            metrics=bool(view.flag("--enable-metrics")),
            max_running=_int_or_none(view.flag("--max-running-requests")),
        )

    # -- launch profiles (``sglang serve --config``) ---------------------------------------
    #: Flags a profile keeps on the command line: SGLang reads --model-path from the raw
    #: command line before merging --config (docs/sglang-facts.md, "--config"); host and
    #: port are the operator's.
    COMMAND_LINE_ONLY = ("--model-path", "--host", "--port")

    @staticmethod
    def _typed(text: str) -> Any:
        for cast in (int, float):
            try:
                return cast(text)
            except ValueError:
                continue
        return text

    def config_entries(self, argv: list[str]) -> dict[str, Any]:
        """The ``--config`` YAML mapping that reproduces ``argv``'s flags (in order), typed
        the way SGLang 0.5.23's ConfigArgumentMerger turns them back into arguments: keys
        are flag names with dashes, store-true flags are ``true``, multi-value flags lists."""
        out: dict[str, Any] = {}
        i = argv.index("--model-path") if "--model-path" in argv else 0
        while i < len(argv):
            flag = argv[i]
            j = i + 1
            while j < len(argv) and not argv[j].startswith("--"):
                j += 1
            values = argv[i + 1:j]
            i = j
            if flag in self.COMMAND_LINE_ONLY or flag in CONFIG_REFUSED:
                continue
            known = FLAGS.get(flag)
            key = flag[2:]
            if not values:
                out[key] = True
            elif known is not None and known.nargs:
                out[key] = [self._typed(v) for v in values]
            else:
                out[key] = values[0] if known is not None and known.choices else self._typed(
                    values[0])
        return out

    def protocol(self) -> ServerProtocol:
        return SGLangProtocol()

    def launch_host(self, plan: LaunchPlan) -> Host:
        if self.hosts is None:
            return Host()
        return self.hosts.power_on(plan.port, plan.env)

    def memory_need(self, space: SearchSpace, plan: LaunchPlan, *, available_gib: float,
                    visible_gib: float | None) -> MemoryNeed | None:
        from tuner.engines._sglang_memory import memory_need

        return memory_need(space, plan.argv, available_gib, visible_gib)

    def profile_files(self, plan: LaunchPlan, *, entry: list[str], model_path: str,
                      header: str) -> dict[str, str]:
        """``sglang.yaml`` (for ``--config``), ``sglang.env`` and ``launch.sh``."""
        entries = self.config_entries(plan.argv)
        config = ("# sglang serve --config: the measured launch, flags as SGLang 0.5.23 "
                  "merges them.\n# --model-path, --host, --port and the flags some SGLang "
                  "versions refuse in a config\n# file stay on the command line (see "
                  "launch.sh).\n"
                  + yaml.safe_dump(entries, sort_keys=False, default_flow_style=False))
        env_lines = [f"{k}={shlex.quote(v)}" for k, v in plan.env.items()
                     if not k.startswith("TUNER_SIM_")]
        env = "# environment of the measured launch\n" + "".join(f"{x}\n" for x in env_lines)
        cmd = [*entry, "--model-path", model_path, *self.config_refused_args(plan.argv)]
        comment = " ".join(header.split())          # one line, whatever the study is named
        program, where = shlex.quote(cmd[0]), ""
        if re.fullmatch(r"/[\w./+-]+", cmd[0]):   # a program of the venv that measured it
            program = f'"${{ENGINE:-{cmd[0]}}}"'
            where = (f"# The engine ran as {cmd[0]} (the environment that measured it); set "
                     "ENGINE to the same\n# program elsewhere (e.g. ENGINE=python3).\n")
        launch = (
            "#!/usr/bin/env bash\n"
            f"# {comment}\n"
            "# HOST/PORT pick the address; extra arguments (e.g. --api-key KEY) pass "
            "through.\n" + where +
            "set -euo pipefail\n"
            'here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"\n'
            'set -a; . "$here/sglang.env"; set +a\n'
            f"exec {program} {shlex.join(cmd[1:])} --config \"$here/sglang.yaml\" "
            '--host "${HOST:-127.0.0.1}" --port "${PORT:-30000}" "$@"\n')
        return {"sglang.yaml": config, "sglang.env": env, "launch.sh": launch}

    @staticmethod
    def config_refused_args(argv: list[str]) -> list[str]:
        """The flags of ``argv`` (with their values) that must stay on the command line
        because some supported SGLang's ``--config`` refuses them (:data:`CONFIG_REFUSED`)."""
        out: list[str] = []
        i = 0
        while i < len(argv):
            j = i + 1
            while j < len(argv) and not argv[j].startswith("--"):
                j += 1
            if argv[i] in CONFIG_REFUSED:
                out += argv[i:j]
            i = j
        return out


    @staticmethod
    def _evidence(space: SearchSpace, name: str, value: Any) -> KnobEvidence:
        ev: Evidence = space.evidence(name, value)
        contrib = space.contribution(name, value)

        def subst(expected: Any) -> Any:
            if expected == "{value}":
                return value
            if isinstance(expected, str):
                return space.substitute(expected.replace("{value}", value_key(value)))
            return expected

        return KnobEvidence(
            knob=name, value=value,
            server_info={f: subst(e) for f, e in ev.server_info.items()},
            log=[re.sub(r"\{value\}", re.escape(value_key(value)), p) for p in ev.log],
            log_absent=list(ev.log_absent), none=ev.none, note=ev.note,
            requires_env=sorted(contrib.env), requires_flags=sorted(
                f for f, v in contrib.flags.items() if v is not False),
        )


def _int_or_none(value: Any) -> int | None:
    try:
        return int(value) if value is not None and value is not True else None
    except (TypeError, ValueError):
        return None
