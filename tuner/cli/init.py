"""``tuner init``: a commented search space for your own MoE model on a known machine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer


def init(
    model: Path = typer.Argument(..., help="checkpoint folder (or its config.json)"),
    machine: str = typer.Option(..., "--machine", help="machine profile: dgx-spark, h100 or h200"),
    out: Path = typer.Option(None, "--out", help="file to write (default: "
                             "MODEL-MACHINE.yaml in the current folder)"),
    draft: list[Path] = typer.Option(None, "--draft", metavar="PATH", help="an external "
                                     "draft checkpoint (DSpark or EAGLE-3; repeatable): adds "
                                     "its speculative algorithm"),
    gpus: int = typer.Option(1, "--gpus", min=1, help="GPUs of the machine the model "
                             "spreads over (tensor parallel)"),
    engine_command: str = typer.Option(None, help="the SGLang entry point to read (default "
                                       "'sglang serve' when installed, else the bundled "
                                       "0.5.23 flag table)"),
    force: bool = typer.Option(False, "--force", help="overwrite an existing --out file"),
) -> None:
    """Read MODEL's architecture and the installed SGLang; write the space whose knobs are
    exactly those that apply to this model on this machine with this SGLang.

    Exit code 0 with the file written and validated; 2 with one located line (an
    architecture not understood, a model that does not fit, a bad option) and nothing
    written.
    """
    from tuner.cli._common import check_target
    from tuner.cli._common import writing
    from tuner.errors import UserError
    from tuner.models import machine as machine_profile
    from tuner.models import read_draft
    from tuner.models import read_model
    from tuner.models import space_name
    from tuner.models import write_space

    profile = machine_profile(machine)
    shape = read_model(model)
    drafts = [read_draft(d) for d in draft or []]
    algos = [d.algorithm for d in drafts]
    if len(set(algos)) != len(algos):
        raise UserError(f"--draft: two drafts for one algorithm ({', '.join(algos)})")
    target = out or Path(f"{space_name(shape, profile)}.yaml")
    check_target("--out", target)
    if target.exists() and not force:
        raise UserError(f"--out {target}: exists (pass --force to overwrite)")
    caps, version, note = _engine(engine_command)
    text = write_space(shape, profile, caps, drafts=drafts, gpus=gpus,
                       engine_version=version, engine_note=note)
    _validate(text, target)
    with writing("--out", target):
        target.write_text(text)
    typer.echo(f"{target}: written ({shape.architecture}, {profile.id}; {note})")


def _engine(command: str | None) -> tuple[Any, str, str]:
    """The engine's capabilities, the flag-table version the space is written for, and
    what was read."""
    import shutil

    from tuner.cli._common import split_command
    from tuner.engines import inspect_engine
    from tuner.engines import table_capabilities

    given = split_command(command)
    if given or shutil.which("sglang"):
        caps = inspect_engine(given or ["sglang", "serve"])
        if caps.found and caps.flags is not None:
            version = caps.version or "0.5.23"
            return caps, version, (f"SGLang {version} as installed ({caps.flags_source}; "
                                   f"env vars from {caps.source_root or 'an unknown source'})")
    caps = table_capabilities("0.5.23")
    return caps, "0.5.23", ("no SGLang installed here: the bundled 0.5.23 flag table; "
                            "env-var support unknown (run `tuner doctor` on the GPU host)")


def _validate(text: str, target: Path) -> None:
    """Load the text back as a space and check it against the engine's flags: a space
    the tool writes is one it accepts, or nothing is written."""
    from tuner.engines import make_engine
    from tuner.errors import UserError
    from tuner.space import parse_space

    try:
        space = parse_space(text, file=str(target), source=target)
        make_engine("sglang").validate_space(space)
    except UserError as exc:     # a bug of the writer, said as such
        raise UserError(f"tuner init wrote a space it does not accept ({exc}); nothing "
                        "written") from None
