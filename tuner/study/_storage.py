"""Where a study lives: any Optuna storage URL, an SQLite file by default, or a journal file.

Artifacts (server logs, per-request records, TrialResult JSON) go to a file-system store
next to the study: ``trials/<study>.artifacts/`` for the default SQLite file, or the
directory given by ``--artifacts``.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tuner.errors import UserError


OBJECTIVES = ("tpot_ms", "accuracy")


@dataclass(frozen=True)
class StudyLocation:
    storage_url: str            # what optuna-dashboard and `tuner report` are given
    artifacts: Path
    journal: Path | None = None

    @property
    def file(self) -> Path | None:
        """The study's file (an SQLite database or a journal), None for a server."""
        if self.journal is not None:
            return self.journal
        if self.storage_url.startswith("sqlite:///"):
            return Path(self.storage_url[len("sqlite:///"):].split("?", 1)[0])
        return None

    def missing_file(self) -> bool:
        """The study's file is gone (deleted or moved) though it is named."""
        return self.file is not None and not self.file.exists()

    def check_not_lost(self) -> None:
        """Refuse to start a study afresh where an earlier one's file is gone but its
        artifacts remain: a deleted or moved database is never silently recreated."""
        art = self.artifacts
        if self.missing_file() and art.is_dir() and any(art.iterdir()):
            raise UserError(
                f"no study database at {self.file}, but {art} holds the artifacts of "
                "earlier launches: the database was moved or deleted. Pass --storage where "
                f"it is now, or move {art} away to start a new study there")

    def storage(self) -> Any:
        if self.journal is not None:
            from optuna.storages import JournalStorage
            from optuna.storages.journal import JournalFileBackend

            return JournalStorage(JournalFileBackend(str(self.journal)))
        from tuner.study._lean_read import LeanRDBStorage

        if self.storage_url.startswith("sqlite:"):
            return LeanRDBStorage(
                self.storage_url, engine_kwargs={"connect_args": {"timeout": 30}})
        return LeanRDBStorage(driver_url(self.storage_url))


def driver_url(url: str) -> str:
    """``postgresql://`` means psycopg 3 (the ``postgres`` extra), whichever driver this
    SQLAlchemy would pick by default (2.0: psycopg2, 2.1: psycopg); an explicit
    ``postgresql+driver://`` is kept."""
    return "postgresql+psycopg://" + url[len("postgresql://"):] if url.startswith(
        "postgresql://") else url


#: A parameter whose name (case-blind, %-escapes decoded) contains one of these is a secret:
#: libpq's ``password``, ``sslpassword``, ``passfile`` (where the passwords are), ``sslkey``
#: and ``sslcrl``-style key files, and any driver's ``*token*``, ``*secret*``, ``*key*``.
SECRET_PARAM_WORDS = ("pass", "pwd", "secret", "token", "key", "credential")

#: ``user:PASSWORD@`` as SQLAlchemy reads it (up to the first ``@``), and any further
#: ``text@`` before the host (a password with a raw ``@`` in it).
_USERINFO = re.compile(r"(://[^:/@]*:)[^@]*@(?:[^/@?#]*@)*")
#: ``name=value`` in a URL's query (``?``/``&``/``;``) or in a libpq keyword string
#: (spaces); the value to the next separator, or a quoted one.
_PARAM = re.compile(r"(^|[?&;\s])([^=?&;#\s]+)=('(?:[^'\\]|\\.)*'|[^&;#\s]*)")


def _secret_name(name: str) -> bool:
    from urllib.parse import unquote

    low = unquote(name).lower()
    return any(word in low for word in SECRET_PARAM_WORDS)


def redact_url(url: str) -> str:
    """A storage URL (or a line of text holding one) with every secret replaced by ``***``:
    the password of ``scheme://user:secret@host/db`` and the value of every query or
    keyword parameter whose name names a secret (:data:`SECRET_PARAM_WORDS`:
    ``?password=``, ``sslpassword``, ``passfile``, ``sslkey``, ``...token...``)."""
    url = _USERINFO.sub(r"\1***@", url)
    return _PARAM.sub(lambda m: (f"{m[1]}{m[2]}=***" if _secret_name(m[2]) and m[3]
                                 else m[0]), url)


@contextlib.contextmanager
def storage_errors(location: StudyLocation) -> Iterator[None]:
    """Turn a storage that cannot be opened (no driver, unreachable server, unwritable or
    special file, corrupt database) into one line naming it, password redacted."""
    where = f"--storage {redact_url(location.storage_url)}"
    try:
        yield
    except ImportError:
        raise UserError(f"{where}: no driver for this database is installed here "
                        "(PostgreSQL: pip install 'moe-tuner[postgres]', which is "
                        "psycopg[binary])"
                        ) from None
    except OSError as exc:
        raise UserError(f"{where}: {exc.strerror or exc.__class__.__name__}") from None
    except ValueError as exc:            # a journal whose records cannot be replayed
        if location.journal is None:
            raise
        raise UserError(f"{where}: the journal is damaged inside (not only a torn last "
                        f"record): {str(exc)[:120]}; restore it from a copy") from None
    except Exception as exc:
        if not is_storage_error(exc):
            raise
        raise UserError(f"{where}: cannot open it ({storage_problem(exc)})") from None


#: Where the exceptions of a failing study storage come from (SQLAlchemy and its drivers,
#: Optuna's storages).
_STORAGE_MODULES = ("sqlalchemy", "optuna.storages", "optuna.exceptions", "sqlite3",
                    "psycopg", "psycopg2", "pymysql")


def is_storage_error(exc: BaseException) -> bool:
    """Whether ``exc`` is the study's storage failing (a database gone read-only, locked,
    corrupt or unreachable), not a bug of ours."""
    return type(exc).__module__.startswith(_STORAGE_MODULES)


def storage_problem(exc: BaseException) -> str:
    """The first line of a storage error, password redacted, at most 200 characters: of
    the database's own error when ``exc`` wraps one (Optuna's "An exception is raised
    during the commit" hides "attempt to write a readonly database")."""
    seen = {id(exc)}
    inner = exc.__cause__ or exc.__context__
    while inner is not None and id(inner) not in seen:
        seen.add(id(inner))
        if is_storage_error(inner):
            exc = inner
        inner = inner.__cause__ or inner.__context__
    text = str(exc).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    return redact_url(first)[:200]


def repair_torn_journal(path: Path) -> str | None:
    """Cut a journal's torn last record (a write a crash cut short, without its newline),
    saving its bytes beside the journal; return a note saying so, or None when the file is
    whole. Done under the journal's own lock, so a record another process is appending is
    never mistaken for a torn one. Optuna's reader skips such a record, but its writer
    appends after it, which would make the whole journal unreadable."""
    import time

    from optuna.storages.journal import JournalFileSymlinkLock

    if not path.is_file() or path.stat().st_size == 0:
        return None
    lock = JournalFileSymlinkLock(str(path))
    lock.acquire()
    try:
        with path.open("rb+") as fh:
            size = fh.seek(0, 2)
            fh.seek(max(0, size - (1 << 20)))
            tail = fh.read()
            if tail.endswith(b"\n"):
                return None
            cut = tail.rfind(b"\n")
            keep = size - len(tail) + cut + 1 if cut >= 0 else 0
            fh.seek(keep)
            torn = fh.read()
            saved = path.with_name(f"{path.name}.torn-{time.strftime('%Y%m%dT%H%M%S')}")
            saved.write_bytes(torn)
            fh.truncate(keep)
    finally:
        lock.release()
    return (f"the journal's last record was torn (a write cut short by a crash): its "
            f"{len(torn)} bytes were moved to {saved.name} and the journal goes on from the "
            "last whole record")


def try_folder(folder: Path) -> None:
    """Check that ``folder`` can be created (when missing) and written, leaving nothing
    behind: the folders made for the check are removed. Raises :class:`OSError`."""
    import tempfile

    missing, p = [], folder
    while not p.exists() and p != p.parent:
        missing.append(p)
        p = p.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    finally:
        for made in missing:                      # deepest first
            with contextlib.suppress(OSError):
                made.rmdir()


def make_artifact_dir(location: StudyLocation, *, probe: bool = False) -> None:
    """Create the artifact folder (``probe``: only check that it could be, creating
    nothing); its parent must exist (a mistyped path such as ``sqlite:////missing/s.db``
    once created ``/missing``)."""
    folder = location.artifacts
    if not folder.parent.is_dir():
        raise UserError(f"--artifacts {folder}: its folder {folder.parent} does not exist "
                        "(create it, or pass --storage/--artifacts in a folder that does)")
    try:
        try_folder(folder) if probe else folder.mkdir(exist_ok=True)
    except OSError as exc:
        raise UserError(f"--artifacts {folder}: cannot create it "
                        f"({exc.strerror or exc.__class__.__name__})") from None


def slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-") or "study"


def locate(storage: str | None, study: str, artifacts: str | None = None,
           home: Path = Path("trials"), *, writing: bool = True) -> StudyLocation:
    """Resolve ``--storage``: None (``trials/<study>.db``), a URL, or a journal file path.
    A database server's URL needs ``artifacts`` when ``writing`` (a sweep); a reader (report,
    dashboard, export) without it looks in ``trials/<study>.artifacts``."""
    if storage is not None and not storage.strip():
        raise UserError("--storage is empty: give a storage URL or file, or leave it out "
                        "for trials/<study>.db")
    if storage is None:
        if writing:                 # a reader of a missing study creates no folder
            home.mkdir(parents=True, exist_ok=True)
        db = home / f"{slug(study)}.db"
        url = f"sqlite:///{db.resolve()}"
        art = Path(artifacts) if artifacts else db.with_suffix(".artifacts")
        return StudyLocation(url, art)
    if "://" in storage:
        if storage.startswith("sqlite:///"):
            base = Path(storage[len("sqlite:///"):])
            art = Path(artifacts) if artifacts else base.with_suffix(".artifacts")
        elif artifacts is None and writing:
            raise UserError(f"--storage {redact_url(storage)}: give --artifacts DIR for the "
                            "server logs and results (a directory the driver can write)")
        else:
            art = Path(artifacts) if artifacts else home / f"{slug(study)}.artifacts"
        return StudyLocation(storage, art)
    path = Path(storage)
    if path.suffix in (".db", ".sqlite", ".sqlite3"):
        return locate(f"sqlite:///{path.resolve()}", study, artifacts, home, writing=writing)
    art = Path(artifacts) if artifacts else path.with_suffix(".artifacts")
    return StudyLocation(str(path), art, journal=path)
