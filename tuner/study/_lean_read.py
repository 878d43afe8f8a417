"""Reading a study's trials from a database in plain rows, not ORM objects.

Optuna's ``RDBStorage`` loads trials as SQLAlchemy ORM objects with their five child
collections and converts those: 10 s of ``tuner export``'s 13 s on a 10,000-trial SQLite
study (cProfile; ``benchmarks/export_10k.py``). :class:`LeanRDBStorage` is that storage
with one method replaced: the trials are read with one plain SELECT per table (only rows
of the wanted trials) and assembled into the same ``FrozenTrial`` objects Optuna builds,
equal field for field (``tests/study_tests/test_lean_read.py`` compares them with
Optuna's own read, filters included). Every write, and everything else, is Optuna's.

The reads run in the storage's own session, so inside
:func:`tuner.study._transaction.one_transaction` they see the group's uncommitted writes.
"""

from __future__ import annotations

import datetime
import json
from collections import defaultdict
from collections.abc import Container
from collections.abc import Iterable
from typing import Any

from optuna import distributions
from optuna.storages import RDBStorage
from optuna.trial import FrozenTrial
from optuna.trial import TrialState


def _local(utc: datetime.datetime | None) -> datetime.datetime | None:
    """Optuna stores naive UTC and hands out naive local time."""
    if utc is None:
        return None
    return utc.replace(tzinfo=datetime.UTC).astimezone().replace(tzinfo=None)


class LeanRDBStorage(RDBStorage):
    """``RDBStorage`` whose trial reads skip the ORM (see the module's docstring)."""

    def _get_trials(self, study_id: int, states: Container[TrialState] | None,
                    included_trial_ids: set[int], trial_id_greater_than: int
                    ) -> list[FrozenTrial]:
        from optuna.storages._rdb import models
        from sqlalchemy import or_
        from sqlalchemy import select

        included = {i for i in included_trial_ids if i <= trial_id_greater_than}
        t = models.TrialModel.__table__
        where = [t.c.study_id == study_id]
        if states is not None:
            assert isinstance(states, Iterable)
            where.append(t.c.state.in_(list(states)))
        if included and trial_id_greater_than > -1:
            where.append(or_(t.c.trial_id.in_(included), t.c.trial_id > trial_id_greater_than))
        elif trial_id_greater_than > -1:
            where.append(t.c.trial_id > trial_id_greater_than)
        wanted = select(t.c.trial_id).where(*where)
        session = self.scoped_session()
        try:
            models.StudyModel.find_or_raise_by_id(study_id, session)
            conn = session.connection()
            rows = list(conn.execute(select(t.c.trial_id, t.c.number, t.c.state,
                                       t.c.datetime_start, t.c.datetime_complete)
                                .where(*where).order_by(t.c.trial_id)).all())

            def children(model: Any, *columns: str, order: str | None = None,
                         plain: bool = False) -> list[Any]:
                """Rows of a child table for the wanted trials. ``plain``: columns of
                plain SQL types (ints, floats, text), fetched through the driver's own
                cursor: SQLAlchemy's row objects cost more than the query on 100k rows."""
                table = model.__table__
                query = select(table.c.trial_id, *(table.c[c] for c in columns)).where(
                    table.c.trial_id.in_(wanted))
                if order:
                    query = query.order_by(table.c[order])
                if not plain:
                    return list(conn.execute(query).all())
                sql = str(query.compile(dialect=conn.dialect,
                                        compile_kwargs={"literal_binds": True}))
                raw = conn.connection.dbapi_connection
                assert raw is not None            # the connection is open: we just used it
                cursor = raw.cursor()
                try:
                    cursor.execute(sql)
                    return list(cursor.fetchall())
                finally:
                    cursor.close()

            values = children(models.TrialValueModel, "objective", "value", "value_type")
            params = children(models.TrialParamModel, "param_name", "param_value",
                              "distribution_json", order="param_id", plain=True)
            user = children(models.TrialUserAttributeModel, "key", "value_json", plain=True)
            system = children(models.TrialSystemAttributeModel, "key", "value_json",
                              plain=True)
            steps = children(models.TrialIntermediateValueModel, "step",
                             "intermediate_value", "intermediate_value_type")
            session.commit()
        finally:
            session.close()
        return _assemble(models, rows, values, params, user, system, steps)


def _assemble(models: Any, rows: list[Any], values: list[Any], params: list[Any],
              user: list[Any], system: list[Any], steps: list[Any]) -> list[FrozenTrial]:
    by_values: dict[int, dict[int, float]] = defaultdict(dict)
    for tid, objective, value, kind in values:
        by_values[tid][objective] = models.TrialValueModel.stored_repr_to_value(value, kind)
    dists: dict[str, Any] = {}
    by_params: dict[int, list[tuple[str, float, Any]]] = defaultdict(list)
    for tid, name, value, dist_json in params:
        dist = dists.get(dist_json)
        if dist is None:
            dist = dists[dist_json] = distributions.json_to_distribution(dist_json)
        by_params[tid].append((name, value, dist))
    attrs: tuple[dict[int, dict[str, Any]], ...] = (defaultdict(dict), defaultdict(dict))
    scalars: dict[str, Any] = {}        # decoded once: the same role, engine, flag, ...
    for table, out in zip((user, system), attrs, strict=True):
        for tid, key, value_json in table:
            if value_json in scalars:
                out[tid][key] = scalars[value_json]
                continue
            value = out[tid][key] = json.loads(value_json)
            if value is None or isinstance(value, (str, int, float, bool)):
                scalars[value_json] = value     # immutable: safe to share
    by_steps: dict[int, dict[int, float]] = defaultdict(dict)
    convert = models.TrialIntermediateValueModel.stored_repr_to_intermediate_value
    for tid, step, value, kind in steps:
        by_steps[tid][step] = convert(value, kind)
    out_trials = []
    for tid, number, state, start, complete in rows:
        vals = by_values.get(tid)
        ps = by_params.get(tid, [])
        out_trials.append(FrozenTrial(
            number=number, state=state, value=None,
            values=[vals[i] for i in range(len(vals))] if vals else None,
            datetime_start=_local(start), datetime_complete=_local(complete),
            params={n: d.to_external_repr(v) for n, v, d in ps},
            distributions={n: d for n, _, d in ps},
            user_attrs=attrs[0].get(tid, {}), system_attrs=attrs[1].get(tid, {}),
            intermediate_values=by_steps.get(tid, {}), trial_id=tid))
    return out_trials
