"""Process identity, shared by the driver lock and the reaper, and the environment a child
process is given: never the study's credentials (no heavy imports: the reaper runs as its
own small process)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from collections.abc import Mapping

import psutil


def process_alive(pid: int, started: float | None) -> bool:
    """Whether process ``pid`` runs and is the one that started at ``started`` (epoch s;
    None: any), not a later process that reused the number."""
    try:
        p = psutil.Process(pid)
        return p.status() != psutil.STATUS_ZOMBIE and (
            started is None or abs(p.create_time() - started) < 2.0)
    except (psutil.NoSuchProcess, ValueError):
        return False


#: The study's database clients, whose environment variables may hold its credentials:
#: libpq's (``PGPASSWORD``, ``PGPASSFILE``, ``PGSSLKEY``) and MySQL's (``MYSQL_PWD``).
_DB_CLIENTS = ("PG", "MYSQL")
#: A variable of theirs whose name holds one of these is a secret (as a storage URL's
#: parameter is: tuner.study's SECRET_PARAM_WORDS).
_SECRET_WORDS = ("PASS", "PWD", "SECRET", "TOKEN", "KEY", "CREDENTIAL")
#: The tool's own: a server gets the API key as ``--api-key``, a trial in its options.
_TOOL_SECRETS = ("TUNER_API_KEY",)


def is_secret_env(name: str) -> bool:
    """Whether environment variable ``name`` is a secret no trial process or server needs:
    the study's database credentials (only the driver opens the study) and the tool's API
    key. Other variables, an engine's own tokens (``HF_TOKEN``) among them, pass."""
    up = name.upper()
    return up in _TOOL_SECRETS or (up.startswith(_DB_CLIENTS)
                                   and any(word in up for word in _SECRET_WORDS))


def child_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: this process's environment) without its secrets
    (:func:`is_secret_env`): what a trial process, a server or a helper process is given."""
    return {k: v for k, v in (os.environ if env is None else env).items()
            if not is_secret_env(k)}


@contextlib.contextmanager
def secrets_withheld() -> Iterator[None]:
    """This process's environment without its secrets while a child starts that copies it
    at ``exec`` (a ``spawn`` process, Ray's processes and the workers they start later),
    put back after. Main thread only, nothing else running: the driver's own connection to
    the study reads ``PGPASSWORD`` again when it next connects."""
    held = {k: os.environ.pop(k) for k in list(os.environ) if is_secret_env(k)}
    try:
        yield
    finally:
        os.environ.update(held)
