"""What the busiest pages show, computed once per change instead of once per request.

The leaderboard, the acceptance rates, a learner's progress and a judged submission's view
change only when a submission, a user or a problem version is written. :func:`watch`
listens to the app's sessions: a commit that wrote one of those tables (an ORM flush, or
an UPDATE/DELETE statement) starts a new *generation*, and every cached value of an older
generation is rebuilt on its next read. On PostgreSQL the change is also published through
the hub's relay (LISTEN/NOTIFY), so every web process starts a new generation at once.
Several processes on one SQLite database hear of each other's commits through
web/local_relay.py. Without a relay (a commit from another program) a value is also
rebuilt once it is :data:`TTL_S` old: nothing is shown staler than that.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Hashable
from contextvars import ContextVar
from typing import Any, TypeVar

from sqlalchemy import event
from sqlalchemy.orm import ORMExecuteState, Session, sessionmaker

TTL_S = 2.0
MAX_ENTRIES = 4096  # a crude bound: past it, the oldest half is dropped
CHANGED = "page-cache"  # the hub key (and relay payload) of a new generation
WATCHED = frozenset({"submissions", "users", "api_tokens", "problem_versions"})

V = TypeVar("V")
MISSING: Any = object()  # what peek answers for a key it holds no valid value of

# Set by whoever wants to know (web/response_cache.py): marked when a read got the previous
# value of a key that another reader is rebuilding (contextvars reach the route's thread)
STALE: ContextVar[list[bool] | None] = ContextVar("page_cache_stale", default=None)


Stamp = tuple[int, float, float]  # (generation, when, the share of the TTL it may live)


class PageCache:
    """A keyed memo, valid for one generation and at most ``ttl`` seconds.

    Each value lives a random 50-100 % of the TTL: values built together (by readers who
    came together, or after a new generation) do not all expire at once, so their
    rebuilds are spread out instead of arriving as one burst every ``ttl`` seconds."""

    def __init__(self, ttl: float = TTL_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl, self.clock = ttl, clock
        self.generation = 0
        self.entries: dict[Hashable, tuple[Stamp, Any]] = {}
        self.lock = threading.Lock()
        self.hits = self.misses = 0
        self.building: set[Hashable] = set()

    def changed(self) -> None:
        with self.lock:
            self.generation += 1

    def stamp(self) -> Stamp:
        """Now: what a value built from here on is valid for (:meth:`current`)."""
        return self.generation, self.clock(), 0.5 + 0.5 * random.random()

    def current(self, stamp: Stamp) -> bool:
        """A value stamped so is still valid: same generation, young enough."""
        generation, when, share = stamp
        return generation == self.generation and self.clock() - when < self.ttl * share

    def peek(self, key: Hashable) -> Any:
        """The value for ``key`` if it is valid, else :data:`MISSING` (nothing is built:
        for callers that must not wait)."""
        entry = self.entries.get(key)
        if entry is not None and self.current(entry[0]):
            self.hits += 1
            return entry[1]
        return MISSING

    def get(self, key: Hashable, build: Callable[[], V],
            keep: Callable[[V], bool] | None = None) -> V:
        """The value for ``key``, built if missing, of an older generation or too old;
        kept for the next reads unless ``keep(value)`` says otherwise."""
        with self.lock:
            stamp = self.stamp()
            entry = self.entries.get(key)
            if entry is not None and self.current(entry[0]):
                self.hits += 1
                return entry[1]
            if entry is not None and key in self.building:
                # Another reader is rebuilding it: the previous value meanwhile, not fifty
                # rebuilds at once when it expires under load (a stampede).
                self.hits += 1
                if (stale := STALE.get()) is not None:
                    stale.append(True)
                return entry[1]
            self.misses += 1
            self.building.add(key)
        try:
            value = build()  # outside the lock
        finally:
            with self.lock:
                self.building.discard(key)
        if keep is not None and not keep(value):
            return value
        with self.lock:
            if len(self.entries) >= MAX_ENTRIES:
                for old in sorted(self.entries, key=lambda k: self.entries[k][0][1])[
                        :MAX_ENTRIES // 2]:
                    del self.entries[old]
            self.entries[key] = (stamp, value)
        return value


def _tables_written(statement: Any) -> set[str]:
    table = getattr(statement, "table", None)
    name = getattr(table, "name", None)
    return {name} if name else set()


def watch(sessions: sessionmaker[Session], cache: PageCache,
          publish: Callable[[], None] | None = None) -> None:
    """Start a new generation after every commit of these sessions that wrote a watched
    table; ``publish`` tells the other processes."""

    @event.listens_for(sessions, "after_flush")
    def _flushed(session: Session, _context) -> None:
        for obj in (*session.new, *session.dirty, *session.deleted):
            table = getattr(obj, "__tablename__", None)
            if table in WATCHED:
                session.info["page_cache_dirty"] = True
                return

    @event.listens_for(sessions, "do_orm_execute")
    def _executed(state: ORMExecuteState) -> None:
        if (state.is_update or state.is_delete or state.is_insert) and (
                _tables_written(state.statement) & WATCHED):
            state.session.info["page_cache_dirty"] = True

    @event.listens_for(sessions, "after_commit")
    def _committed(session: Session) -> None:
        if session.info.pop("page_cache_dirty", False):
            cache.changed()
            if publish is not None:
                publish()

    @event.listens_for(sessions, "after_rollback")
    def _rolled_back(session: Session) -> None:
        session.info.pop("page_cache_dirty", None)
