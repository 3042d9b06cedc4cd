"""Wake-ups inside the web process. Progress is stored in the database (``job_events``), so
a stream is correct whichever process or thread wrote it; the :class:`Hub` only wakes
waiting streams and long-polling workers early instead of letting them poll the database
every second."""

from __future__ import annotations

import asyncio
from collections.abc import Hashable


class Hub:
    """Wake whoever waits on a key (``("submission", id)``, ``"queue"``). ``notify`` may
    be called from any thread; ``wait`` runs on the event loop."""

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.waiters: dict[Hashable, set[asyncio.Future]] = {}

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop

    def notify(self, key: Hashable) -> None:
        loop = self.loop
        if loop is None or loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._wake(key)
        else:
            loop.call_soon_threadsafe(self._wake, key)

    def _wake(self, key: Hashable) -> None:
        for fut in self.waiters.pop(key, set()):
            if not fut.done():
                fut.set_result(None)

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
