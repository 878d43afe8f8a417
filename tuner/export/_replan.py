"""A trial's result rebuilt from the study when its artifacts are gone (a deleted or lost
artifact folder): the launch plan is made again by the engine adapter from the stored space
and the trial's configuration, the figures come from the trial's stored attributes.

The rebuilt plan is what this tool version plans for that configuration, not the argv that
was measured; export says so when it uses one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tuner.errors import UserError
from tuner.trial import TrialResult


if TYPE_CHECKING:
    from tuner.study import TrialSummary
    from tuner.study.storages import StudyView


def replanned_result(study: StudyView, t: TrialSummary) -> TrialResult:
    """``t``'s TrialResult rebuilt from the study (module docstring); a UserError
    when the study lacks what that needs (a stored space, the trial's configuration)."""
    import shlex

    from tuner import __version__
    from tuner.engines import make_engine
    from tuner.space import parse_space
    from tuner.trial import Aggregates

    context = study.context()
    if not context.space_yaml or not t.config or not t.engine:
        raise UserError(f"trial #{t.number}'s artifacts are missing and the study does "
                        "not hold its space or configuration to plan it again")
    space = parse_space(context.space_yaml, file=f"the stored space of {study.name}")
    command = (context.sweep_options or {}).get("engine_command")
    engine = make_engine(t.engine, command=shlex.split(command) if command else None)
    config = engine.canonicalize(space, t.config)
    aggregates = Aggregates(requests=0, tpot_ms=t.tpot_ms, decode_tok_s=t.decode_tok_s,
                            accept_length=t.accept_length, accuracy=t.accuracy)
    return TrialResult(
        tuner_version=__version__, status="ok", space=space.name,
        machine=space.spec.machine.id, config=config.as_dict(), config_hash=config.hash(),
        plan=engine.plan(space, config), engine=engine.name,
        engine_version=t.engine_version, simulated=t.simulated, time_scale=t.time_scale,
        twin=t.twin,
        workload=context.workload, kv_tokens=t.kv_tokens, aggregates=aggregates,
        started_at=t.started_at or "?", host="?")
