"""The vocabulary of :mod:`sandbox.protocol`: message kinds, its errors and the values a
frame decodes to. Standard library only; the runner imports it inside the sandbox."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


class Kind(enum.StrEnum):
    """Message kinds. Grader to runner: HELLO, CALL, STAGE, RUN, REPLY, BYE.
    Runner to grader: READY, IMPORT_ERROR, RESULT, ERROR, EVENT, ASK, DONE."""

    HELLO = "hello"
    CALL = "call"
    STAGE = "stage"
    RUN = "run"
    REPLY = "reply"
    BYE = "bye"
    READY = "ready"
    IMPORT_ERROR = "import_error"
    RESULT = "result"
    ERROR = "error"
    EVENT = "event"
    ASK = "ask"
    DONE = "done"


class ProtocolError(Exception):
    """A frame that is malformed, oversized or of an unexpected kind."""


class ChannelClosed(ProtocolError):
    """The other end closed the channel (usually: the process died)."""


class ChannelTimeout(ProtocolError):
    """No complete frame arrived before the deadline."""


@dataclass(frozen=True)
class Unencodable:
    """Stands for a value the runner could not send: its type name, a short repr and, when
    the sender knows, why (``dtype torch.uint16``, ``layout torch.sparse_coo``, ...)."""

    type: str
    repr: str
    why: str = ""


@dataclass
class Message:
    kind: Kind
    body: Any = None
    nbytes: int = field(default=0, compare=False)
