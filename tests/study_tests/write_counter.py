"""Counts the database transactions that wrote something (SQLAlchemy engine events).

A commit of a transaction that only read is not counted: Optuna's RDBStorage commits after
reads too, and those cost an SQLite file nothing. Used by the storage tests and by
``benchmarks/storage_commits.py``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass
class Writes:
    transactions: int = 0       # committed transactions that wrote
    commits: int = 0            # every commit, reads included


@contextlib.contextmanager
def count_writes() -> Iterator[Writes]:
    import sqlalchemy
    from sqlalchemy import event

    seen = Writes()
    dirty: set[int] = set()

    def on_execute(conn, cursor, statement, params, context, executemany):
        if statement.lstrip().split(None, 1)[0].upper() in ("INSERT", "UPDATE", "DELETE"):
            dirty.add(id(conn))

    def on_commit(conn):
        seen.commits += 1
        if id(conn) in dirty:
            dirty.discard(id(conn))
            seen.transactions += 1

    def on_rollback(conn):
        dirty.discard(id(conn))

    hooks = (("before_cursor_execute", on_execute), ("commit", on_commit),
             ("rollback", on_rollback))
    for name, fn in hooks:
        event.listen(sqlalchemy.engine.Engine, name, fn)
    try:
        yield seen
    finally:
        for name, fn in hooks:
            event.remove(sqlalchemy.engine.Engine, name, fn)
