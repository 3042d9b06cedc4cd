"""Wake-ups across web processes of one machine on SQLite: Unix datagram sockets.

``python -m judge serve --web-processes N`` runs N processes on one SQLite database. As
with PostgreSQL's relay (:mod:`web.pg_relay`), what a process announces on its hub (a
submission's new events, a job queued, cached pages out of date) must reach the other
processes' waiters: a worker long-polling one process for a job learns at once of a
submission posted to another. Each process binds a datagram socket ``<pid>.sock`` in one
folder of the data directory and sends each key to every other socket there. A datagram
to a process that died is refused, and its socket file removed.

As with the PostgreSQL relay nothing depends on delivery: a lost wake-up costs at most a
stream's one-second poll. The same :class:`web.hub.Relay` interface: ``publish(key)``.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Hashable
from pathlib import Path

from web.pg_relay import decode, encode

log = logging.getLogger("web.local_relay")

PEERS_REFRESH_S = 1.0
MAX_DATAGRAM = 1024
MAX_SOCKET_PATH = 100  # AF_UNIX paths are limited to 108 bytes


def relay_folder(data_dir: Path) -> Path:
    """``<data>/relay``, or where that path is too long for a socket, a folder in /tmp
    named after it (every process of the data directory finds the same one)."""
    folder = data_dir.resolve() / "relay"
    if len(str(folder / "4194304.sock")) <= MAX_SOCKET_PATH:
        return folder
    digest = hashlib.sha256(str(folder).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"torch-judge-relay-{digest}"


class LocalRelay:
    """Sends this process's wake-ups to the other processes using ``folder`` and wakes its
    own on theirs."""

    def __init__(self, folder: Path, wake: Callable[[Hashable], None],
                 wake_all: Callable[[], None], name: str | None = None) -> None:
        self.folder, self.wake, self.wake_all = folder, wake, wake_all
        self.path = folder / f"{name or os.getpid()}.sock"
        self.sock: socket.socket | None = None
        self.peers: list[Path] = []
        self.peers_at = 0.0
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._listen, name="local-relay", daemon=True)

    def start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()  # a process of the same pid that died before
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(self.path))
        self.sock.settimeout(0.5)
        self.thread.start()

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=5)
        if self.sock is not None:
            self.sock.close()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    def publish(self, key: Hashable) -> None:
        if self.sock is None:
            return
        payload = encode(key).encode()[:MAX_DATAGRAM]
        for peer in self._peers():
            try:
                self.sock.sendto(payload, str(peer))
            except (ConnectionRefusedError, FileNotFoundError):
                with contextlib.suppress(FileNotFoundError):
                    peer.unlink()  # its process is gone
                self.peers_at = 0.0
            except (BlockingIOError, OSError) as e:  # its queue is full: it will poll
                log.debug("wake-up to %s dropped: %s", peer, e)

    def _peers(self) -> list[Path]:
        now = time.monotonic()
        with self.lock:
            if now - self.peers_at > PEERS_REFRESH_S:
                self.peers = [p for p in self.folder.glob("*.sock") if p != self.path]
                self.peers_at = now
            return self.peers

    def _listen(self) -> None:
        self.wake_all()  # whatever was announced before this process listened
        while not self.stopping.is_set():
            try:
                data = self.sock.recv(MAX_DATAGRAM) if self.sock else b""
            except TimeoutError:
                continue
            except OSError:
                if not self.stopping.is_set():
                    log.warning("the local wake-up socket failed; streams poll meanwhile")
                return
            if data:
                self.wake(decode(data.decode(errors="replace")))


def send_once(folder: Path, key: Hashable) -> None:
    """A wake-up to every web process using ``folder``, from a process that does not
    listen (the admin commands: ``python -m judge admin disable`` takes effect at once)."""
    payload = encode(key).encode()[:MAX_DATAGRAM]
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        for peer in folder.glob("*.sock"):
            with contextlib.suppress(OSError):
                sock.sendto(payload, str(peer))
