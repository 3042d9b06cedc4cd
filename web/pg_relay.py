"""Wake-ups across web processes on PostgreSQL: LISTEN/NOTIFY.

Several web processes behind a load balancer share one database; a worker posts a job's
events to one of them and a learner's stream may hang on another. The events themselves
are in the database (``job_events``), so any process serves them correctly; what this
relay adds is promptness: every :meth:`web.hub.Hub.notify` in one process is sent as a
``NOTIFY`` on :data:`CHANNEL`, and a listening connection in every process wakes its own
waiters when it arrives. PostgreSQL delivers a notification only once the transaction
that sent it commits, and in the order sent; this relay sends it after the data it
announces was committed, so a woken reader finds it.

Nothing depends on delivery: a notification lost while the database restarts, or while
the listener reconnects, costs at most the streams' one-second poll (``web.streams.POLL_S``),
and after every (re)connect the listener wakes every waiter of its process once, because
it cannot know what it missed. Channels are per database, not per schema: two apps on
schemas of one database wake each other's waiters for nothing, which is harmless.

Two threads per process: a publisher with its own connection (``notify`` never waits for
the network, it only queues a key) and a listener (``LISTEN``, then ``notifies()``).
Both reconnect with a bounded back-off; the app's engine provides their connections.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Hashable
from typing import Any

from sqlalchemy import Engine

log = logging.getLogger("web.pg_relay")

CHANNEL = "torch_judge_hub"
RECONNECT_MAX_S = 2.0
BATCH_MAX = 200


def encode(key: Hashable) -> str:
    """``"queue"`` -> ``queue``; ``("submission", 5)`` -> ``submission:5``."""
    if isinstance(key, tuple):
        return ":".join(str(part) for part in key)
    return str(key)


def decode(payload: str) -> Hashable:
    kind, _, ident = payload.partition(":")
    if ident.isdigit():
        return (kind, int(ident))
    return payload


class PgRelay:
    """Sends this process's wake-ups to the others and wakes its own on theirs."""

    def __init__(self, engine: Engine, wake: Callable[[Hashable], None],
                 wake_all: Callable[[], None]) -> None:
        self.engine, self.wake, self.wake_all = engine, wake, wake_all
        self.outbox: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self.stopping = threading.Event()
        self.listening = threading.Event()  # set while LISTEN is in effect (tests wait on it)
        self.threads = [threading.Thread(target=self._publish, name="pg-relay-publish",
                                         daemon=True),
                        threading.Thread(target=self._listen, name="pg-relay-listen",
                                         daemon=True)]

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def stop(self) -> None:
        self.stopping.set()
        self.outbox.put(None)
        for thread in self.threads:
            thread.join(timeout=5)

    def publish(self, key: Hashable) -> None:
        self.outbox.put(encode(key))

    def _connect(self) -> Any:
        """A psycopg connection of its own (not returned to the pool), in autocommit."""
        raw = self.engine.raw_connection()
        conn: Any = raw.driver_connection
        raw.detach()
        conn.rollback()  # the pool's ping may have opened a transaction
        conn.autocommit = True
        return conn

    def _publish(self) -> None:
        conn, delay = None, 0.1
        while not self.stopping.is_set():
            first = self.outbox.get()
            if first is None:
                break
            batch = [first]
            while len(batch) < BATCH_MAX:
                try:
                    more = self.outbox.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    self.stopping.set()
                    break
                batch.append(more)
            keys = list(dict.fromkeys(batch))  # once each, in first-seen order
            try:
                if conn is None:
                    conn = self._connect()
                with conn.cursor() as cur:
                    cur.execute("select pg_notify(%s, k) from unnest(%s::text[]) as k",
                                (CHANNEL, keys))
                delay = 0.1
            except Exception as e:  # the database restarts: these wake-ups fall to the poll
                log.warning("cannot send wake-ups to the other web processes (%s); "
                            "their streams poll meanwhile", e)
                _close(conn)
                conn = None
                self.stopping.wait(delay)
                delay = min(delay * 2, RECONNECT_MAX_S)
        _close(conn)

    def _listen(self) -> None:
        delay = 0.1
        while not self.stopping.is_set():
            conn = None
            try:
                conn = self._connect()
                conn.execute(f"LISTEN {CHANNEL}")
                self.listening.set()
                self.wake_all()  # whatever was announced while nobody listened
                delay = 0.1
                while not self.stopping.is_set():
                    for note in conn.notifies(timeout=0.5):
                        self.wake(decode(note.payload))
            except Exception as e:
                if not self.stopping.is_set():
                    log.warning("lost the wake-ups of the other web processes (%s); "
                                "reconnecting, streams poll meanwhile", e)
            finally:
                self.listening.clear()
                _close(conn)
            self.stopping.wait(delay)
            delay = min(delay * 2, RECONNECT_MAX_S)


def _close(conn: Any) -> None:
    if conn is None:
        return
    try:
        conn.close()
    except Exception:
        log.debug("closing a relay connection failed", exc_info=True)


def notify_once(engine: Engine, key: Hashable) -> None:
    """A wake-up to every web process of this database, from a process without a relay
    (the admin commands)."""
    from sqlalchemy import text

    with engine.connect() as conn:
        conn.execute(text("select pg_notify(:channel, :key)"),
                     {"channel": CHANNEL, "key": encode(key)})
        conn.commit()
