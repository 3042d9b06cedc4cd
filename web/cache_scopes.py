"""What a commit changed, for the page cache (web/page_cache.py): :func:`watch` listens to a
session factory and, after each commit that wrote a watched table, tells the cache (and,
through ``publish``, the other web processes) which scopes changed.

Submissions are told apart: one written through the ORM names its owner and whether it is
(or was) shared; one written by an UPDATE statement (the queue's steps) is named by the
``Submission.id == ...`` or ``Submission.id.in_(...)`` of its WHERE clause and looked up
before the commit. A statement whose rows cannot be told (a DELETE, an INSERT, an UPDATE
without such a term or one that sets ``share``), and every write of another watched
table, changes everything.

The queue's tables change narrower scopes, never everything: a progress event added to a
submission's job changes that submission; any other write of ``jobs`` or ``job_events``
changes :data:`~web.page_cache.QUEUE`, except one that only renews or checks a lease
(the columns in :data:`LEASE_ONLY`), which the status shown does not depend on.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Hashable
from typing import Any

from sqlalchemy import event, inspect, select
from sqlalchemy.orm import ORMExecuteState, Session, sessionmaker
from sqlalchemy.sql import operators
from sqlalchemy.sql.elements import BinaryExpression, BindParameter, BooleanClauseList

from web.models import Job, JobEvent, Submission
from web.page_cache import QUEUE, PageCache

WATCHED = frozenset({"submissions", "users", "api_tokens", "problem_versions"})
QUEUE_TABLES = frozenset({"jobs", "job_events"})
LEASE_ONLY = frozenset({"lease_token", "lease_expires_at"})
NOTES = "page_cache_changes"  # Session.info: {"scopes": set | None, "ids": set}


def submission_scopes(sid: int, user_id: int, shared: bool, standings: bool) -> set[Hashable]:
    """What a write of this submission changes: ``standings`` unless it only queued the
    submission or moved it between queued and running (the leaderboard and the acceptance
    rates count judged submissions only)."""
    scopes: set[Hashable] = {("user", user_id), ("submission", sid)}
    if shared:
        scopes.add("shared")
    if standings:
        scopes.add("standings")
    return scopes


def _changed_columns(obj: Any) -> set[str]:
    return {attr.key for attr in inspect(obj).attrs if attr.history.has_changes()}


def ids_named(where: Any) -> set[int] | None:
    """The submission ids a WHERE clause keeps a statement to (``Submission.id == v`` or
    ``Submission.id.in_([...])`` among its ANDed terms), or None when it names none."""
    if where is None:
        return None
    terms = (where.clauses if isinstance(where, BooleanClauseList)
             and where.operator is operator.and_ else [where])
    for term in terms:
        if not isinstance(term, BinaryExpression) or not isinstance(term.right, BindParameter):
            continue
        column = term.left
        if getattr(column, "key", None) != "id" or getattr(
                getattr(column, "table", None), "name", None) != "submissions":
            continue
        value = term.right.effective_value
        if term.operator is operators.eq and isinstance(value, int):
            return {value}
        if term.operator is operators.in_op and isinstance(value, list | tuple) and all(
                isinstance(v, int) for v in value):
            return set(value)
    return None


def _note(session: Session, scopes: set[Hashable] | None = None,
          ids: set[int] | None = None) -> None:
    notes = session.info.setdefault(NOTES, {"scopes": set(), "ids": set()})
    if notes["scopes"] is None:
        return
    if scopes is None and ids is None:
        notes["scopes"] = None
        return
    notes["scopes"] |= scopes or set()
    notes["ids"] |= ids or set()


def _table(statement: Any) -> str | None:
    return getattr(getattr(statement, "table", None), "name", None)


def _columns_set(statement: Any) -> set[str]:
    """The columns an UPDATE sets (an unknown form: all of them, as far as we know)."""
    values = getattr(statement, "_values", None)
    if not isinstance(values, dict):
        return {"share"}
    return {getattr(k, "key", str(k)) for k in values}


def _note_object(session: Session, obj: Any) -> None:
    """What a flushed object changes (see the module's docstring)."""
    table = getattr(obj, "__tablename__", None)
    if isinstance(obj, Submission) and obj.id is not None and obj.user_id is not None:
        new = obj in session.new
        columns = set() if new else _changed_columns(obj)
        standings = (obj.verdict is not None if new else obj in session.deleted
                     or bool(columns - {"status"}))
        shared = bool(obj.share) or "share" in columns  # or no longer shared
        _note(session, submission_scopes(obj.id, obj.user_id, shared, standings))
    elif isinstance(obj, JobEvent) and obj in session.new:
        _note(session, {("submission", obj.submission_id)} if obj.submission_id else set())
    elif isinstance(obj, Job):
        if obj in session.new or obj in session.deleted or (
                _changed_columns(obj) - LEASE_ONLY):
            _note(session, {QUEUE})
    elif table in QUEUE_TABLES:
        _note(session, {QUEUE})
    elif table in WATCHED:
        _note(session)


def _note_statement(state: ORMExecuteState) -> None:
    """What an UPDATE, DELETE or INSERT statement changes (see the module's docstring)."""
    table = _table(state.statement)
    columns = _columns_set(state.statement)
    if table == "submissions" and state.is_update and "share" not in columns:
        ids = ids_named(getattr(state.statement, "whereclause", None))
        if ids:  # whose they are: looked up before the commit
            _note(state.session, {"standings"} if columns - {"status"} else set(), ids)
        else:
            _note(state.session)
    elif table in QUEUE_TABLES:
        if not (table == "jobs" and state.is_update and columns <= LEASE_ONLY):
            _note(state.session, {QUEUE})
    elif table in WATCHED:
        _note(state.session)


def watch(sessions: sessionmaker[Session], cache: PageCache,
          publish: Callable[[set[Hashable] | None], None] | None = None) -> None:
    """After every commit of these sessions that wrote a watched table, tell ``cache``
    what changed; ``publish`` tells the other processes."""

    @event.listens_for(sessions, "after_flush")
    def _flushed(session: Session, _context) -> None:
        for obj in (*session.new, *session.dirty, *session.deleted):
            _note_object(session, obj)

    @event.listens_for(sessions, "do_orm_execute")
    def _executed(state: ORMExecuteState) -> None:
        if state.is_update or state.is_delete or state.is_insert:
            _note_statement(state)

    @event.listens_for(sessions, "before_commit")
    def _resolve(session: Session) -> None:
        notes = session.info.get(NOTES)
        if notes and notes["scopes"] is not None and notes["ids"]:
            rows = session.execute(select(Submission.id, Submission.user_id, Submission.share)
                                   .where(Submission.id.in_(sorted(notes["ids"]))))
            for sid, user_id, shared in rows:
                notes["scopes"] |= submission_scopes(sid, user_id, bool(shared), False)
            notes["ids"] = set()

    @event.listens_for(sessions, "after_commit")
    def _committed(session: Session) -> None:
        notes = session.info.pop(NOTES, None)
        if notes is None:
            return
        scopes = notes["scopes"]
        if scopes is not None and notes["ids"]:  # not looked up (a flush in the commit)
            scopes = None
        if scopes is None or scopes:
            cache.changed(scopes)
            if publish is not None:
                publish(scopes)

    @event.listens_for(sessions, "after_rollback")
    def _rolled_back(session: Session) -> None:
        session.info.pop(NOTES, None)
