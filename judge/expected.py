"""Recorded expectations for public cases, so a practice pack needs no reference solution.

The practice pack holds the public parts of a problem only. Its public cases still call
``t.ref`` for expected values: at pack time :func:`judge.pack.record_public` runs every
public case (the reference standing in for the submission too) and a
:class:`RecordingSession` records each reference call's result, with a digest of its
arguments, into ``expected.bin`` (one protocol frame: data only, no pickle). On the
learner's machine :class:`ReplaySession` answers the same calls from the recording. Public
cases use a fixed seed, so their inputs are the same on every machine; if a different
torch builds different inputs, the digests differ and the case says so instead of
comparing against the wrong values. Both implement :class:`judge.session.Session`.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from judge.session import Budget, CallResult, Session
from sandbox.protocol import Kind, ProtocolError, decode_frame, encode

FILE = "expected.bin"


class ReplayMismatch(Exception):
    """The case asked the reference something the recording does not hold."""


def digest(target: str, fn: str, args: list, kwargs: dict) -> str:
    frame = encode(Kind.CALL, {"target": target, "fn": fn, "args": args, "kwargs": kwargs})
    return hashlib.sha256(frame.tobytes()).hexdigest()


class RecordingSession:
    """Wraps a real reference session and records what each call returned (for
    :func:`judge.pack.record_public`); everything else goes to the session it wraps."""

    def __init__(self, inner: Session, log: dict[str, list]) -> None:
        self.inner = inner
        self.log = log
        self.case = ""

    @property
    def budget(self) -> Budget | None:
        return self.inner.budget

    @budget.setter
    def budget(self, budget: Budget | None) -> None:
        self.inner.budget = budget

    @property
    def alive(self) -> bool:
        return self.inner.alive

    def start(self) -> None:
        self.inner.start()

    def ready(self) -> dict[str, Any]:
        return self.inner.ready()

    def output_mark(self) -> int:
        return self.inner.output_mark()

    def output_since(self, mark: int) -> str:
        return self.inner.output_since(mark)

    def memory_bytes(self) -> int | None:
        return self.inner.memory_bytes()

    def close(self) -> None:
        self.inner.close()

    def call(self, target: str, fn: str, args: list, kwargs: dict, *,
             return_args: bool = False) -> CallResult:
        result = self.inner.call(target, fn, args, kwargs, return_args=return_args)
        self.log.setdefault(self.case, []).append(
            {"digest": digest(target, fn, args, kwargs), "value": result.value})
        return result


class ReplaySession:
    """Stands in for the reference's runner: answers calls from a recording."""

    def __init__(self, recording: dict[str, list]) -> None:
        self.recording = recording
        self.case = ""
        self.position = 0
        self.budget: Budget | None = None
        self.alive = True

    def start_case(self, name: str) -> None:
        self.case, self.position = name, 0

    def ready(self) -> dict[str, Any]:
        return {}

    def start(self) -> None:
        pass

    def output_mark(self) -> int:
        return 0

    def output_since(self, mark: int) -> str:
        return ""

    def memory_bytes(self) -> int | None:
        return None  # nothing runs: there is nothing to measure

    def close(self) -> None:
        pass

    def call(self, target: str, fn: str, args: list, kwargs: dict, *,
             return_args: bool = False) -> CallResult:
        calls = self.recording.get(self.case, [])
        if self.position >= len(calls):
            raise ReplayMismatch(f"no recorded reference answer for call {self.position + 1}")
        entry = calls[self.position]
        self.position += 1
        if entry["digest"] != digest(target, fn, args, kwargs):
            raise ReplayMismatch("the inputs differ from the recorded ones")
        return CallResult(entry["value"])


def decode_recording(data: bytes, where: str = "expected.bin") -> dict[str, list]:
    """A recording's contents (validated like any protocol frame); ValueError otherwise."""
    try:
        msg = decode_frame(data)
    except ProtocolError as e:
        raise ValueError(f"{where}: {e}") from None
    if msg.kind is not Kind.RESULT or not isinstance(msg.body, dict):
        raise ValueError(f"{where}: not a recording of expected values")
    return msg.body


def load_recording(path: Path) -> dict[str, list]:
    """Read expected.bin (validated like any protocol frame)."""
    return decode_recording(path.read_bytes(), str(path))
