"""Wake-ups for waiting streams and long-polling workers. Progress is stored in the
database (``job_events``), so a stream is correct whichever process or thread wrote it;
the :class:`Hub` only wakes waiters early instead of letting them poll the database every
second. Within a process it wakes them directly; on PostgreSQL a relay
(:mod:`web.pg_relay`, LISTEN/NOTIFY) carries every wake-up to the other web processes of
the same database too, so a stream on one process follows events posted to another as
promptly. On SQLite (one machine, usually one process) the poll is the fallback."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable
from typing import Protocol


class Relay(Protocol):
    def publish(self, key: Hashable) -> None: ...


class Hub:
    """Wake whoever waits on a key (``("submission", id)``, ``"queue"``). ``notify`` and
    ``wake_local`` may be called from any thread; ``wait`` runs on the event loop."""

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.waiters: dict[Hashable, set[asyncio.Future]] = {}
        self.relay: Relay | None = None
        # called (in the waking thread, thread-safe) whenever a key is woken here or by the
        # relay: web.page_cache's new generation
        self.listeners: dict[Hashable, list[Callable[[], None]]] = {}
        self.any_key: list[Callable[[Hashable], None]] = []  # called with every key

    def on(self, key: Hashable, listener: Callable[[], None]) -> None:
        self.listeners.setdefault(key, []).append(listener)

    def on_any(self, listener: Callable[[Hashable], None]) -> None:
        """``listener(key)`` for every key woken here (web.page_cache's scoped changes)."""
        self.any_key.append(listener)

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop

    def notify(self, key: Hashable) -> None:
        """Wake this key's waiters here and, through the relay, in the other processes."""
        self.wake_local(key)
        if self.relay is not None:
            self.relay.publish(key)

    def wake_local(self, key: Hashable) -> None:
        for listener in self.listeners.get(key, ()):
            listener()  # at once, in the caller's thread (the relay's)
        for heard in self.any_key:
            heard(key)
        self._on_loop(self._wake, key)

    def wake_all(self) -> None:
        """Every waiter of this process (the relay missed an unknown number of wake-ups)."""
        for group in list(self.listeners.values()):
            for listener in group:
                listener()
        self._on_loop(self._wake_all)

    def _on_loop(self, fn, *args) -> None:
        loop = self.loop
        if loop is None or loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            fn(*args)
        else:
            try:
                loop.call_soon_threadsafe(fn, *args)
            except RuntimeError:  # the loop closed meanwhile (shutting down)
                pass

    def _wake(self, key: Hashable) -> None:
        for fut in self.waiters.pop(key, set()):
            if not fut.done():
                fut.set_result(None)

    def _wake_all(self) -> None:
        for key in list(self.waiters):
            self._wake(key)

    async def wait(self, key: Hashable, timeout: float) -> None:
        fut = asyncio.get_running_loop().create_future()
        self.waiters.setdefault(key, set()).add(fut)
        try:
            await asyncio.wait_for(fut, timeout)
        except TimeoutError:
            pass
        finally:
            group = self.waiters.get(key)
            if group is not None:
                group.discard(fut)
                if not group:
                    self.waiters.pop(key, None)
