"""One database transaction for a group of Optuna storage writes.

Optuna's ``RDBStorage`` commits once per call: every parameter, user attribute, system
attribute and state change of a trial is its own transaction (46 write transactions per
trial of a sweep, measured by ``benchmarks/storage_commits.py`` before this module). Inside
:func:`one_transaction` the calls of the entering thread run in a session bound to one
connection whose transaction SQLAlchemy lets no session commit
(``join_transaction_mode="rollback_only"``, SQLAlchemy's documented recipe for joining an
external transaction); it is committed once, when the block ends. So a trial's record is
all there or not there at all, and the database (an SQLite file: one fsync per commit)
sees one commit instead of dozens.

Other threads keep their own sessions and commits. A write that Optuna would have rolled
back and ignored (an integrity race) rolls back the whole group here: the block then
raises ``StorageInternalError`` rather than lose writes silently. Journal and in-memory
storages have no transactions; for them the block changes nothing.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING
from typing import Any


if TYPE_CHECKING:
    from optuna.storages import BaseStorage


class _Sessions:
    """Stands in for ``RDBStorage.scoped_session``: the group's session for the thread
    that opened it, the storage's own for every other thread."""

    def __init__(self, own: Any, group: Any, owner: int) -> None:
        self.own, self.group, self.owner = own, group, owner

    def _pick(self) -> Any:
        return self.group if threading.get_ident() == self.owner else self.own

    def __call__(self) -> Any:
        return self._pick()()

    def remove(self) -> None:
        self._pick().remove()


def _rdb_of(storage: BaseStorage) -> Any | None:
    from optuna.storages import RDBStorage

    backend = getattr(storage, "_backend", storage)     # behind Optuna's _CachedStorage
    return backend if isinstance(backend, RDBStorage) else None


@contextlib.contextmanager
def one_transaction(storage: BaseStorage) -> Iterator[None]:
    """Run the storage calls of this block (this thread's) in one transaction, committed at
    the end and rolled back on an exception. Nested blocks join the outer one."""
    rdb = _rdb_of(storage)
    if rdb is None or isinstance(rdb.scoped_session, _Sessions):
        yield
        return
    import optuna
    from sqlalchemy import orm

    own = rdb.scoped_session
    with rdb.engine.connect() as conn:
        outer = conn.begin()
        group = orm.scoped_session(orm.sessionmaker(
            bind=conn, join_transaction_mode="rollback_only"))
        rdb.scoped_session = _Sessions(own, group, threading.get_ident())
        try:
            yield
            if not outer.is_active:
                raise optuna.exceptions.StorageInternalError(
                    "a write of this group was rolled back (a conflicting write by "
                    "another process?); none of the group was stored")
            outer.commit()
        except BaseException:
            if outer.is_active:
                outer.rollback()
            raise
        finally:
            rdb.scoped_session = own
            group.remove()
