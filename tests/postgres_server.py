"""A real PostgreSQL server for the tests, started in a temporary folder (Debian's
``postgresql`` package; ``.ci/run`` installs it). As root, the server runs as the
``postgres`` user (PostgreSQL refuses to run as root)."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest


PASSWORD = "s3cret-Pw-4-tests"


def _bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    versions = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return versions[-1] if versions else None


def _as_server_user(argv: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *argv] if os.geteuid() == 0 else argv


@dataclass
class PgServer:
    """``url``: ``postgresql://tuner:PASSWORD@127.0.0.1:PORT/postgres``."""

    pg_ctl: str
    folder: Path
    port: int

    @property
    def url(self) -> str:
        return f"postgresql://tuner:{PASSWORD}@127.0.0.1:{self.port}/postgres"

    def start(self) -> None:
        opts = (f"-c listen_addresses=127.0.0.1 -p {self.port} "
                f"-c unix_socket_directories={self.folder}")
        subprocess.run(_as_server_user([self.pg_ctl, "-D", str(self.folder / "data"), "-o",
                                        opts, "-l", str(self.folder / "server.log"), "-w",
                                        "-t", "60", "start"]),
                       check=True, capture_output=True, timeout=120)

    def stop(self) -> None:
        """Stop at once (``immediate``: clients are cut off, as in a crash)."""
        subprocess.run(_as_server_user([self.pg_ctl, "-D", str(self.folder / "data"), "-m",
                                        "immediate", "-w", "stop"]),
                       capture_output=True, timeout=60)


@contextmanager
def postgres_server() -> Iterator[PgServer]:
    """A fresh, running server whose files live in a new folder of /tmp (pytest's own
    folders are closed to other users)."""
    import tempfile

    from tuner.trial._server import free_port

    initdb, pg_ctl = _bin("initdb"), _bin("pg_ctl")
    if initdb is None or pg_ctl is None:
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL is not installed (.ci/run installs Debian's postgresql)")
        pytest.skip("PostgreSQL is not installed here")
    folder = Path(tempfile.mkdtemp(prefix="tuner-pg-"))
    pwfile = folder / "pw"
    pwfile.write_text(PASSWORD + "\n")
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres")
        shutil.chown(pwfile, "postgres")
    subprocess.run(_as_server_user([initdb, "-D", str(folder / "data"), "-U", "tuner",
                                    f"--pwfile={pwfile}", "--auth=scram-sha-256", "-E",
                                    "UTF8"]), check=True, capture_output=True, timeout=120)
    server = PgServer(pg_ctl, folder, free_port())
    server.start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)
