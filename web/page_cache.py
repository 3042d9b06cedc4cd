"""What the busiest pages show, computed once per change instead of once per request.

The leaderboard, the acceptance rates, a learner's progress and a judged submission's view
change only when a submission, a user, a token or a problem version is written, or the
catalog changes. :func:`web.cache_scopes.watch` listens to the app's sessions and tells
the cache after every commit that wrote one of those tables what changed:

- a write of submissions changes the *scopes* ``("user", id)`` of their owners,
  ``("submission", id)`` of each, ``"standings"`` (the leaderboard, acceptance rates)
  and, when one is shared with those who solved its problem, ``"shared"``;
- a progress event of a submission's job changes ``("submission", id)``; a job queued,
  claimed, given back or finished changes :data:`QUEUE` (everyone's queue position), a
  lease renewed nothing;
- anything else (a user, a token, a version, the catalog, a statement whose rows cannot be
  told) changes *everything*.

A value read with ``scopes`` is rebuilt on its next read after a change of one of them or
of everything; a value read without (the default) after any change at all. So a verdict
for one learner rebuilds the leaderboard but not another learner's problem page. The
changes reach the other web processes through the hub's relay (PostgreSQL's
LISTEN/NOTIFY, or web/local_relay.py on SQLite). In case a change is not announced (a
commit by another program) a value is also rebuilt once it is :data:`TTL_S` old: nothing
is shown staler than that.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Hashable, Iterable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar

TTL_S = 2.0
MAX_ENTRIES = 4096  # a crude bound: past it, the oldest half is dropped
CHANGED = "page-cache"  # the hub key (and relay payload) of a change of everything
EVERYTHING = "*"
QUEUE = "queue"  # the scope of the jobs' states: queue positions, a job's own state

V = TypeVar("V")
MISSING: Any = object()  # what peek answers for a key it holds no valid value of
Scopes = frozenset[Hashable] | None  # None: the value changes with anything
Stamp = tuple[int, float, float]  # (changes so far, when, the share of the TTL it may live)


@dataclass
class Reads:
    """What one request read from the page cache: the scopes its answer depends on (None:
    something that changes with anything) and whether it got a value being rebuilt."""

    scopes: set[Hashable] | None = field(default_factory=set)
    stale: bool = False

    def add(self, scopes: Scopes) -> None:
        if scopes is None:
            self.scopes = None
        elif self.scopes is not None:
            self.scopes |= scopes


# Set by whoever wants to know (web/response_cache.py); contextvars reach the route's thread
READS: ContextVar[Reads | None] = ContextVar("page_cache_reads", default=None)


class PageCache:
    """A keyed memo, valid until a change of what it depends on, and at most ``ttl``
    seconds.

    Each value lives a random 50-100 % of the TTL: values built together (by readers who
    came together, or after a change) do not all expire at once, so their rebuilds are
    spread out instead of arriving as one burst every ``ttl`` seconds."""

    def __init__(self, ttl: float = TTL_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl, self.clock = ttl, clock
        self.changes = 0
        self.last: dict[Hashable, int] = {}  # scope -> the number of its last change
        self.entries: dict[Hashable, tuple[Stamp, Scopes, Any]] = {}
        self.lock = threading.Lock()
        self.hits = self.misses = 0
        self.building: set[Hashable] = set()

    @property
    def generation(self) -> int:
        """Changes so far (of any scope)."""
        return self.changes

    def changed(self, scopes: Iterable[Hashable] | None = None) -> None:
        """A commit changed these scopes (None: everything)."""
        with self.lock:
            self.changes += 1
            for scope in (EVERYTHING,) if scopes is None else scopes:
                self.last[scope] = self.changes

    def heard(self, key: Hashable) -> None:
        """A key another process relayed: a change of some scopes when it is one."""
        scopes = decode(key)
        if scopes:
            self.changed(scopes)

    def stamp(self) -> Stamp:
        """Now: what a value built from here on is valid for (:meth:`current`)."""
        return self.changes, self.clock(), 0.5 + 0.5 * random.random()

    def current(self, stamp: Stamp, scopes: Scopes) -> bool:
        """A value stamped so, depending on ``scopes``, is still valid: young enough, and
        nothing it depends on changed since."""
        changes, when, share = stamp
        if self.clock() - when >= self.ttl * share:
            return False
        if scopes is None:
            return self.changes == changes
        last = self.last
        return last.get(EVERYTHING, 0) <= changes and all(
            last.get(scope, 0) <= changes for scope in scopes)

    def peek(self, key: Hashable) -> Any:
        """The value for ``key`` if it is valid, else :data:`MISSING` (nothing is built:
        for callers that must not wait)."""
        entry = self.entries.get(key)
        if entry is not None and self.current(entry[0], entry[1]):
            self.hits += 1
            _read(entry[1])
            return entry[2]
        return MISSING

    def get(self, key: Hashable, build: Callable[[], V],
            keep: Callable[[V], bool] | None = None,
            scopes: Iterable[Hashable] | Callable[[V], Iterable[Hashable] | None] | None = None
            ) -> V:
        """The value for ``key``, built if missing or no longer valid; kept for the next
        reads unless ``keep(value)`` says otherwise. ``scopes``: what it depends on (None:
        anything), or a function that tells it from the value built."""
        with self.lock:
            stamp = self.stamp()
            entry = self.entries.get(key)
            if entry is not None and self.current(entry[0], entry[1]):
                self.hits += 1
                _read(entry[1])
                return entry[2]
            if entry is not None and key in self.building:
                # Another reader is rebuilding it: the previous value meanwhile, not fifty
                # rebuilds at once when it expires under load (a stampede).
                self.hits += 1
                _read(entry[1], stale=True)
                return entry[2]
            self.misses += 1
            self.building.add(key)
        try:
            value = build()  # outside the lock
        finally:
            with self.lock:
                self.building.discard(key)
        named = scopes(value) if callable(scopes) else scopes
        depends: Scopes = None if named is None else frozenset(named)
        _read(depends)
        if keep is not None and not keep(value):
            return value
        with self.lock:
            if len(self.entries) >= MAX_ENTRIES:
                for old in sorted(self.entries, key=lambda k: self.entries[k][0][1])[
                        :MAX_ENTRIES // 2]:
                    del self.entries[old]
            self.entries[key] = (stamp, depends, value)
        return value


def _read(scopes: Scopes, stale: bool = False) -> None:
    reads = READS.get()
    if reads is not None:
        reads.add(scopes)
        reads.stale = reads.stale or stale


def encode(scopes: Iterable[Hashable] | None) -> str:
    """The relay's payload for a change: ``page-cache`` (everything) or
    ``page-cache:user:3|submission:17|standings``."""
    if scopes is None:
        return CHANGED
    parts = [":".join(map(str, s)) if isinstance(s, tuple) else str(s) for s in scopes]
    payload = f"{CHANGED}:{'|'.join(sorted(parts))}"
    return payload if len(payload) <= 900 else CHANGED  # a datagram's, a NOTIFY's room


def decode(payload: Any) -> frozenset[Hashable] | None:
    """The scopes of a relayed change; None when the payload is not a scoped change."""
    if not isinstance(payload, str) or not payload.startswith(f"{CHANGED}:"):
        return None
    scopes: set[Hashable] = set()
    for part in payload.removeprefix(f"{CHANGED}:").split("|"):
        kind, _, ident = part.partition(":")
        scopes.add((kind, int(ident)) if ident.isdigit() else part)
    return frozenset(scopes)
