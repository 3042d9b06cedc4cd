"""The socket between the grader and a runner: whole frames of :mod:`sandbox.protocol`,
sent and received against a deadline."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

from sandbox.protocol import (
    HEADER,
    MAX_BLOB_BYTES,
    ChannelClosed,
    ChannelTimeout,
    Frame,
    Kind,
    Message,
    check_header,
    decode,
    encode,
)

# What one end of a runner's channel may have in flight (SO_SNDBUF; the kernel doubles it,
# and caps what it is asked at net.core.wmem_max). Linux's default, 208 KiB, is less than
# one answer of padding-collate's larger batch (128 samples padded: 351 KB): sending it
# took two or three wake-ups of each side, and a wake-up waits up to a scheduler tick (4
# ms here) when the other process is not at once on a CPU. With 4 MiB the answer goes in
# one write: 20 judgings of padding-collate's correctness cases with a head start,
# alternated three times, p50 89.5 -> 79.5 ms, p90 113 -> 89 ms (2026-12-03, quiet).
CHANNEL_BUFFER_BYTES = 4 * 2**20


def channel_pair() -> tuple[socket.socket, socket.socket]:
    """A connected pair of stream sockets for a runner's channel (the grader's end, the
    runner's end), each able to send a large answer in one write."""
    ends = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    for end in ends:
        try:
            end.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, CHANNEL_BUFFER_BYTES)
        except OSError:  # refused: the default size works, only slower
            pass
    return ends


class Channel:
    """One end of a connected stream socket, sending and receiving whole frames.

    ``max_blob`` caps what this end accepts; the grader lowers it for the runner's side.
    ``recv`` and ``send`` honour an absolute ``deadline`` (time.monotonic()) so that a
    silent peer, or one that stops reading, cannot hang the grader: past it they raise
    :class:`ChannelTimeout`. A send cut short leaves half a frame on the wire: the channel
    is then unusable (the grader kills the runner).
    """

    def __init__(self, sock: socket.socket, *, max_blob: int = MAX_BLOB_BYTES,
                 strict: bool = True) -> None:
        self.sock = sock
        self.max_blob = max_blob
        self.strict = strict

    def send(self, kind: Kind, body: Any = None, deadline: float | None = None) -> None:
        self.send_frame(encode(kind, body, strict=self.strict), deadline)

    def send_frame(self, frame: Frame, deadline: float | None = None) -> None:
        """Send an encoded frame (one frame may go to several channels: the same inputs
        to both runners of a timed pair, encoded once)."""
        try:
            for buf in coalesced(frame.buffers):
                if deadline is None:
                    self.sock.settimeout(None)
                else:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise ChannelTimeout("the other end did not take the message in time")
                    # Since Python 3.5 the timeout bounds the whole sendall.
                    self.sock.settimeout(left)
                self.sock.sendall(buf)
        except TimeoutError:
            raise ChannelTimeout("the other end did not take the message in time") from None
        except OSError as e:  # BrokenPipeError, ConnectionResetError, a closed socket
            raise ChannelClosed(f"the other end is gone: {e}") from None

    def recv(self, deadline: float | None = None) -> Message:
        return decode(*self.recv_raw(deadline), max_blob=self.max_blob)

    def recv_raw(self, deadline: float | None = None) -> tuple[bytes, bytearray]:
        """Read one whole frame without decoding it (timing stops when the last byte is
        in; the decoding that follows is the grader's own cost, not the submission's)."""
        header = self._exactly(HEADER.size, deadline)
        json_len, blob_len = check_header(bytes(header), self.max_blob)
        data = bytes(self._exactly(json_len, deadline))
        return data, self._exactly(blob_len, deadline)

    def _exactly(self, n: int, deadline: float | None) -> bytearray:
        buf = bytearray(n)
        view = memoryview(buf)
        got = 0
        while got < n:
            if deadline is None:
                self.sock.settimeout(None)
            else:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ChannelTimeout("no answer before the deadline")
                self.sock.settimeout(left)
            try:
                k = self.sock.recv_into(view[got:], min(n - got, 1 << 20))
            except TimeoutError:
                raise ChannelTimeout("no answer before the deadline") from None
            except (ConnectionResetError, OSError) as e:
                raise ChannelClosed(f"channel broke: {e}") from None
            if k == 0:
                raise ChannelClosed("the other end closed the channel")
            got += k
        return buf

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


COALESCE_BYTES = 1 << 20


def coalesced(buffers: list[bytes | memoryview]) -> Iterator[bytes | memoryview]:
    """A frame's buffers with the small ones joined (up to ``COALESCE_BYTES`` a piece): a
    batch of 256 short sequences is 500 buffers, and one system call (and one timeout set)
    per buffer cost more than copying them. Large buffers go as they are, uncopied."""
    small: list[bytes | memoryview] = []
    size = 0
    for buf in buffers:
        n = memoryview(buf).nbytes
        if n >= COALESCE_BYTES:
            if small:
                yield b"".join(small)
                small, size = [], 0
            yield buf
            continue
        small.append(buf)
        size += n
        if size >= COALESCE_BYTES:
            yield b"".join(small)
            small, size = [], 0
    if small:
        yield b"".join(small) if len(small) > 1 else small[0]
