"""The socket between a worker and its grader box: JSON messages, some with descriptors.

A message is a 4-byte big-endian length and that many bytes of UTF-8 JSON (an object); the
worker passes a runner's channel to the box as a descriptor (``SCM_RIGHTS``) riding on the
message that answers its request. Everything the box sends is the package's data: capped
(:data:`MAX_MESSAGE_BYTES`), parsed as JSON only, and any descriptor it sends is closed.
"""

from __future__ import annotations

import array
import json
import os
import socket
import struct
import threading
import time
from typing import Any

MAX_MESSAGE_BYTES = 16 * 1024 * 1024
MAX_FDS = 4
LENGTH = struct.Struct(">I")


class LinkClosed(Exception):
    """The other end is gone (or sent something that is not a message)."""


class LinkTimeout(Exception):
    """No whole message before the deadline."""


class Link:
    """One end of the box's socket. ``send`` and ``request`` are safe across threads."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._send_lock = threading.Lock()
        self._call_lock = threading.Lock()
        self._fds: list[int] = []

    def send(self, message: dict[str, Any], fds: list[int] = ()) -> None:  # type: ignore[assignment]
        data = json.dumps(message, ensure_ascii=False).encode()
        if len(data) > MAX_MESSAGE_BYTES:
            raise ValueError(f"a message of {len(data)} bytes is over the link's cap")
        frame = LENGTH.pack(len(data)) + data
        ancillary = ([(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))]
                     if fds else [])
        with self._send_lock:
            try:
                self.sock.settimeout(None)
                sent = self.sock.sendmsg([frame], ancillary)
                if sent < len(frame):
                    self.sock.sendall(frame[sent:])
            except OSError as e:
                raise LinkClosed(f"the other end is gone: {e}") from None

    def recv(self, deadline: float | None = None) -> tuple[dict[str, Any], list[int]]:
        """The next message and the descriptors that came with it (the caller owns them)."""
        self._fds = []
        try:
            (size,) = LENGTH.unpack(self._exactly(LENGTH.size, deadline))
            if size > MAX_MESSAGE_BYTES:
                raise LinkClosed(f"a message of {size} bytes is over the link's cap")
            body = self._exactly(size, deadline)
            try:
                message = json.loads(body)
            except (UnicodeDecodeError, ValueError):
                raise LinkClosed("a message that is not JSON") from None
            if not isinstance(message, dict):
                raise LinkClosed("a message that is not a JSON object")
        except BaseException:
            for fd in self._fds:
                os.close(fd)
            raise
        return message, self._fds

    def request(self, message: dict[str, Any]) -> tuple[dict[str, Any], list[int]]:
        """Send and wait for the answer (one request at a time on this link)."""
        with self._call_lock:
            self.send(message)
            return self.recv()

    def _exactly(self, n: int, deadline: float | None) -> bytes:
        buf = bytearray()
        space = socket.CMSG_SPACE(MAX_FDS * array.array("i").itemsize)
        while len(buf) < n:
            if deadline is None:
                self.sock.settimeout(None)
            else:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise LinkTimeout("no message before the deadline")
                self.sock.settimeout(left)
            try:
                data, ancillary, _, _ = self.sock.recvmsg(min(n - len(buf), 1 << 20), space)
            except TimeoutError:
                raise LinkTimeout("no message before the deadline") from None
            except OSError as e:
                raise LinkClosed(f"the link broke: {e}") from None
            for level, kind, payload in ancillary:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    fds = array.array("i")
                    fds.frombytes(payload[:len(payload) - len(payload) % fds.itemsize])
                    self._fds.extend(fds)
            if not data:
                raise LinkClosed("the other end closed the link")
            buf += data
        return bytes(buf)

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
