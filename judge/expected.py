"""Recorded expectations for public cases, so a practice pack needs no reference solution.

The practice pack holds the public parts of a problem only. Its public cases still call
``t.ref`` for expected values: at pack time :func:`record_public` runs every public case
(the reference standing in for the submission too) and records each reference call's
result, with a digest of its arguments, into ``expected.bin`` (one protocol frame: data
only, no pickle). On the learner's machine :class:`ReplaySession` answers the same calls
from the recording. Public cases use a fixed seed, so their inputs are the same on every
machine; if a different torch builds different inputs, the digests differ and the case
says so instead of comparing against the wrong values.
"""

from __future__ import annotations

import contextlib
import hashlib
from pathlib import Path
from typing import Any

from judge.session import Budget, CallResult
from judge.workdirs import job_root
from sandbox.protocol import Kind, ProtocolError, decode_frame, encode

FILE = "expected.bin"


class ReplayMismatch(Exception):
    """The case asked the reference something the recording does not hold."""


def digest(target: str, fn: str, args: list, kwargs: dict) -> str:
    frame = encode(Kind.CALL, {"target": target, "fn": fn, "args": args, "kwargs": kwargs})
    return hashlib.sha256(frame.tobytes()).hexdigest()


class RecordingSession:
    """Wraps a real reference session and records what each call returned."""

    def __init__(self, inner: Any, log: dict[str, list]) -> None:
        self.inner = inner
        self.log = log
        self.case = ""

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

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
        self.busy_s = 0.0
        self.alive = True
        self.lost = None

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


def record_public(problem: Any, launcher: Any, root: Path | None = None) -> bytes:
    """Run the public cases with the reference on both sides; return expected.bin. The
    job folders go in a fresh folder, or in ``root`` (a grader box's ``/jobs``)."""
    with contextlib.ExitStack() as stack:
        if root is None:
            root = stack.enter_context(job_root(launcher, prefix="judge-record-"))
        return _record(problem, launcher, root)
    raise AssertionError("unreachable")


def _record(problem: Any, launcher: Any, root: Path) -> bytes:
    from judge.grader import Options, Sessions, run_case  # the grader imports this module

    log: dict[str, list] = {}
    sessions = Sessions(launcher, problem, root, problem.read("reference.py"), "cpu")
    recorder = RecordingSession(sessions.get("ref"), log)
    sessions.current["ref"] = recorder  # type: ignore[assignment]
    try:
        for spec in problem.tests.select(public_only=True):
            recorder.case = spec.name
            result = run_case(problem, spec, sessions, 0, Options())
            if str(result.verdict) != "accepted":
                raise RuntimeError(f"{problem.slug}/{spec.name}: the reference got "
                                   f"{result.verdict}: {result.message.en}")
    finally:
        sessions.close()
    return encode(Kind.RESULT, log).tobytes()


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
