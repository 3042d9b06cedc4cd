"""Whole answers of the busiest GETs, kept until what they show changes (web/page_cache.py).

The problem page, the leaderboard and a judged submission's status change only when a
watched table is written (a verdict, a version, a user) or the catalog changes. A route
whose answer depends only on the request's *key* and on what it read through the page
cache calls :func:`keep`; this middleware, outermost, stores the answer's bytes under that
key, with the scopes of every page-cache value the route read (web.page_cache.Reads), and
sends them again to the next identical request without running anything else (no
session decoding, no dependencies, no thread, no template: about a tenth of a
millisecond instead of several) until one of those scopes changes, or everything does.

The key is the method, path and query, the scheme, and the headers a page may read:
``Host``, ``Cookie`` (the signed session and the language cookie), ``Authorization`` and
``Accept-Language``. So an answer goes back only to a request carrying the same
credentials: never someone else's page, and the same page only until a write it depends
on (in this process, or announced by the relay) or the cache's TTL
(``JUDGE_PAGE_CACHE_SECONDS``). Kept only: status 200, no ``Set-Cookie`` (a new session or
language cookie is per visitor), a route that called :func:`keep`, and no value used that
the page cache was still rebuilding (it serves the previous one meanwhile).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from web.page_cache import READS, PageCache, Reads, Scopes, Stamp

KEEP = "response_cache_keep"  # the request.state flag a route sets
VARY = frozenset({b"host", b"cookie", b"authorization", b"accept-language"})
MAX_BYTES = 64 * 2**20  # past it, the older half of the entries is dropped
MAX_BODY = 2**20  # a larger answer is sent as it is, not kept


def keep(request: Request) -> None:
    """This answer may be sent again to the same request until the generation changes."""
    setattr(request.state, KEEP, True)


def request_key(scope: Scope) -> tuple:
    headers = tuple(sorted((k, v) for k, v in scope["headers"] if k in VARY))
    return scope["path"], scope["query_string"], scope.get("scheme"), headers


class KeptResponses:
    """The kept answers of one app (``app.state.responses``), valid per the page cache's
    generations and TTL."""

    def __init__(self, cache: PageCache, enabled: Callable[[], bool] = lambda: True) -> None:
        self.cache, self.enabled = cache, enabled
        self.entries: dict[tuple, tuple[Stamp, Scopes, Message, bytes]] = {}
        self.size = 0
        self.hits = self.misses = 0

    def find(self, key: tuple) -> tuple[Message, bytes] | None:
        entry = self.entries.get(key)
        if entry is not None and self.cache.current(entry[0], entry[1]):
            self.hits += 1
            return entry[2], entry[3]
        self.misses += 1
        return None

    def store(self, key: tuple, stamp: Stamp, reads: Reads, start: Message,
              body: bytes) -> None:
        old = self.entries.pop(key, None)
        if old is not None:
            self.size -= len(old[3])
        if self.size + len(body) > MAX_BYTES:
            for k in list(self.entries)[:len(self.entries) // 2 + 1]:
                self.size -= len(self.entries.pop(k)[3])
        scopes = None if reads.scopes is None else frozenset(reads.scopes)
        self.entries[key] = (stamp, scopes, start, body)
        self.size += len(body)


class ResponseCache:
    """The pure ASGI middleware (see the module's docstring)."""

    def __init__(self, app: ASGIApp, kept: KeptResponses) -> None:
        self.app, self.kept = app, kept

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "GET" or not self.kept.enabled():
            return await self.app(scope, receive, send)
        key = request_key(scope)
        found = self.kept.find(key)
        if found is not None:
            await send(found[0])
            await send({"type": "http.response.body", "body": found[1]})
            return
        scope.setdefault("state", {})  # request.state: shared with the route's Request
        reads = Reads()
        token = READS.set(reads)
        try:
            await self.app(scope, receive, _Recorder(self.kept, scope, send, key,
                                                     self.kept.cache.stamp(), reads))
        finally:
            READS.reset(token)


class _Recorder:
    """The ``send`` of a request that missed: passes the answer on, and keeps a copy
    when the route asked for it and nothing forbids it."""

    def __init__(self, owner: KeptResponses, scope: Scope, send: Send, key: tuple,
                 stamp: Stamp, reads: Reads) -> None:
        self.owner, self.scope, self.send = owner, scope, send
        self.key, self.stamp, self.reads = key, stamp, reads
        self.start: Message | None = None
        self.parts: list[bytes] | None = None

    async def __call__(self, message: Message) -> None:
        kind = message["type"]
        if kind == "http.response.start":
            if self._keepable(message):
                self.start, self.parts = message, []
        elif kind == "http.response.body" and self.parts is not None:
            self.parts.append(message.get("body", b""))
            if sum(map(len, self.parts)) > MAX_BODY:
                self.parts = None
            elif not message.get("more_body", False) and not self.reads.stale:
                assert self.start is not None
                self.owner.store(self.key, self.stamp, self.reads, self.start,
                                 b"".join(self.parts))
        await self.send(message)

    def _keepable(self, start: Message) -> bool:
        state: dict[str, Any] = self.scope.get("state") or {}
        return (bool(state.get(KEEP)) and start.get("status") == 200
                and all(name.lower() != b"set-cookie" for name, _ in start.get("headers", ())))
