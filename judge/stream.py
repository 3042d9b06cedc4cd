"""A call's conversation as it happens (:class:`Stream`, :class:`Event`): what the
grader's side of a runner (:mod:`judge.session`, which re-exports them) reads of one call,
its events and questions, until its answer."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from judge.calls import Budget, CallResult
from sandbox.launch import ExitReason
from sandbox.protocol import ChannelTimeout, Kind, ProtocolError

START_TIMEOUT_S = 60.0  # importing torch and the submission, on a loaded machine
# Sending is the grader's own work and is not charged to the case, but a runner must take
# what it is sent within the case's remaining budget and this much more.
SEND_GRACE_S = 2.0


def drained(stream: Stream) -> CallResult:
    """A call's result, its events ignored and its questions answered None."""
    for event in stream:
        if event.kind is Kind.ASK:
            event.reply(None)
    assert stream.result is not None
    return stream.result


class Event:
    """An EVENT or ASK from a running call. Answer an ASK with :meth:`reply`."""

    def __init__(self, stream: Stream, kind: Kind, data: Any) -> None:
        self.kind = kind
        self.data = data
        self._stream = stream
        self.answered = False

    def reply(self, data: Any = None) -> None:
        if self.kind is not Kind.ASK or self.answered:
            raise RuntimeError("only an unanswered ASK can be replied to")
        self.answered = True
        session = self._stream.session
        process = session.process
        assert process is not None
        budget = self._stream.budget
        try:
            process.channel.send(Kind.REPLY, data,
                                 deadline=self._stream.deadline + SEND_GRACE_S)
        except ChannelTimeout:
            # It asks and asks but does not read the answers: out of time, not a hang.
            process.kill(ExitReason.WALL)
            raise session._lose(budget.seconds) from None
        except ProtocolError:
            pass  # the process died meanwhile; the next recv says how


class Stream:  # its session: a judge.session.RunnerSession, which imports this module
    """Iterates over a call's events; afterwards ``result`` holds its CallResult."""

    def __init__(self, session: Any, sent: tuple[list, dict] | None = None
                 ) -> None:
        self.session = session
        self.sent = sent  # the arguments of a call that asked for them back
        self.result: CallResult | None = None
        self.started = time.monotonic()
        self.budget = session.budget or Budget(START_TIMEOUT_S)
        self.deadline = self.budget.deadline(self.started)

    def __iter__(self) -> Iterator[Event]:
        s = self.session
        budget = self.budget
        start = time.monotonic()
        self.deadline = budget.deadline(start)
        try:
            while True:
                msg = s._recv(self.deadline, budget.seconds)
                if msg.kind in (Kind.EVENT, Kind.ASK):
                    event = Event(self, msg.kind, msg.body)
                    yield event
                    if event.kind is Kind.ASK and not event.answered:
                        event.reply(None)
                    continue
                self.result = s._result(msg, time.monotonic() - start, self.sent)
                return
        finally:
            elapsed = time.monotonic() - start
            budget.used += elapsed
            s.busy_s += elapsed

