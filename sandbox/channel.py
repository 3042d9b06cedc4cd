"""The socket between the grader and a runner: whole frames of :mod:`sandbox.protocol`,
sent and received against a deadline."""

from __future__ import annotations

import socket
import time
from typing import Any

from sandbox.protocol import (
    HEADER,
    MAX_BLOB_BYTES,
    ChannelClosed,
    ChannelTimeout,
    Kind,
    Message,
    check_header,
    decode,
    encode,
)


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
        frame = encode(kind, body, strict=self.strict)
        try:
            for buf in frame.buffers:
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
