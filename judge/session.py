"""The grader's side of one runner process: start it, call into it, keep its clock.

Everything the runner says is data. Time is measured here, from outside; when a call does
not answer before its deadline the process is killed and the call ends in
:class:`RunnerLost` with the verdict that its end deserves. Sending has a deadline too (the
case's remaining budget, plus :data:`SEND_GRACE_S`): a runner that stops reading is killed
and the case ends as ``time_limit_exceeded``, instead of blocking the grader. How a call
ends other than with its result (the exceptions, the caps on what a runner may say about
them) is :mod:`judge.runner_errors`, re-exported here.

:class:`Session` is what the grader and a case's ``Ctx`` use of a runner, whatever stands
behind it: a :class:`RunnerSession` (a process), a practice pack's replay of recorded
reference answers, or the recorder that makes them (both in :mod:`judge.expected`). A fresh
runner a case asks for (``t.fresh()``) is always a real process.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Callable
from typing import Any, Literal, Protocol, overload

from judge.calls import Budget, CallResult, Session
from judge.i18n import T
from judge.runner_errors import (
    MAX_MESSAGE_CHARS,
    MAX_MISSING_NAMES,
    MAX_TRACEBACK_CHARS,
    MAX_TYPE_CHARS,
    ImportFailed,
    Killed,
    RunnerLost,
    SubmissionError,
    lost_verdict,
)
from judge.stream import SEND_GRACE_S, START_TIMEOUT_S, Event, Stream, drained
from judge.verdict import Verdict
from sandbox.launch import Exit, ExitReason, Job, Launcher, RunnerProcess
from sandbox.protocol import (
    ChannelClosed,
    ChannelTimeout,
    Frame,
    Kind,
    ProtocolError,
    decode,
    encode,
)

__all__ = ["BYE_TIMEOUT_S", "MAX_MESSAGE_CHARS", "MAX_MISSING_NAMES", "MAX_TRACEBACK_CHARS",
           "MAX_TYPE_CHARS", "SEND_GRACE_S", "START_TIMEOUT_S", "Budget", "CallResult",
           "Event", "ImportFailed", "Killed", "RunnerLost", "RunnerSession", "Session",
           "SessionSource", "Stream", "SubmissionError", "lost_verdict"]

BYE_TIMEOUT_S = 1.0
# Calls begun and not yet answered, at most (RunnerSession.begin): their frames stay well
# inside a local socket's send buffer (208 KiB by default on Linux, each small frame
# counting about 1 KiB more; a quarter of SO_SNDBUF where that is less), so that sending
# one never waits for the runner to read.
MAX_IN_FLIGHT = 32
IN_FLIGHT_BYTES = 64 * 1024


class SessionSource(Protocol):
    """How a ``Ctx`` gets a runner (``judge.sessions.Sessions.get``): the role's shared one,
    or with ``fresh`` a new process of its own (with ``hash_seed``, its PYTHONHASHSEED)."""

    @overload
    def __call__(self, role: str, fresh: Literal[False] = False) -> Session: ...

    @overload
    def __call__(self, role: str, fresh: Literal[True], *,
                 hash_seed: int | None = None) -> RunnerSession: ...


class RunnerSession:
    """One runner process for one role (``sub`` or ``ref``) of one job."""

    def __init__(self, launcher: Launcher, job: Job, hello: dict[str, Any]) -> None:
        self.launcher = launcher
        self.job = job
        self.hello = hello
        self.process: RunnerProcess | None = None
        self.info: dict[str, Any] | None = None
        self.busy_s = 0.0
        self.budget: Budget | None = None
        self.lost: RunnerLost | None = None
        self.last_stage_s = 0.0  # see timed_run
        self.last_stage_cpu_s: float | None = None
        self.last_run_cpu_s: float | None = None
        self.bye_sent = False
        # Calls begun and not yet read, oldest first, with their frames' sizes (see begin)
        self.pending: list[tuple[Callable[[], CallResult], int]] = []
        self._cap: int | None = None  # see _in_flight_cap
        self.greeted = False  # HELLO sent (see greet)

    # ---------------------------------------------------------------- life
    def start(self, *, greet: bool = True) -> None:
        """Spawn the process and send HELLO (without ``greet``: later, see :meth:`greet`);
        does not wait for it to import."""
        self.process = self.launcher.start(self.job)
        if greet:
            self.greet()

    def greet(self) -> None:
        """Send HELLO: the runner imports the submission (its file must be in place by
        now); :meth:`ready` waits for that."""
        assert self.process is not None
        self.greeted = True
        hello = dict(self.hello)
        for key in ("submission", "fixture"):
            if hello.get(key):
                hello[key] = self.process.path_inside(hello[key])
        try:
            self.process.channel.send(Kind.HELLO, hello,
                                      deadline=time.monotonic() + START_TIMEOUT_S)
        except ChannelTimeout:
            self.process.kill(ExitReason.WALL)  # ready() says how it ended
        except ChannelClosed:
            pass  # the process died at once: ready() says how

    def ready(self) -> dict[str, Any]:
        """Wait for READY. Raises ImportFailed or RunnerLost."""
        if self.info is not None:
            return self.info
        if self.process is None:
            self.start()
        elif not self.greeted:
            self.greet()
        assert self.process is not None
        msg = self._recv(time.monotonic() + START_TIMEOUT_S, START_TIMEOUT_S)
        if msg.kind is Kind.IMPORT_ERROR:
            raise ImportFailed(msg.body if isinstance(msg.body, dict) else {})
        if msg.kind is not Kind.READY or not isinstance(msg.body, dict):
            raise self._broken(f"expected READY, got {msg.kind}")
        self.info = msg.body
        return self.info

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.alive and self.lost is None

    def output_mark(self) -> int:
        """Where the output stands now (bytes kept), everything printed so far included."""
        return self.process.settle_output() if self.process else 0

    def output_since(self, mark: int) -> str:
        if self.process is None:
            return ""
        self.process.settle_output()
        return self.process.output_since(mark)

    def say_bye(self) -> None:
        """Ask the runner to exit, without waiting for it (``close`` waits): a judging's
        runners then end together, not one after the other."""
        p = self.process
        if p is None or self.bye_sent or not p.alive or self.lost is not None:
            return
        self.bye_sent = True
        try:
            p.channel.send(Kind.BYE, deadline=time.monotonic() + BYE_TIMEOUT_S)
        except ProtocolError:  # it stopped reading, or is gone: close() kills it
            pass

    def close(self) -> None:
        p = self.process
        if p is None:
            return
        if p.alive and self.lost is None:
            self.say_bye()
            if p.wait(1.0) is None:
                p.kill()
        else:
            p.kill()
        p.wait(5.0)

    def kill(self) -> Exit | None:
        """End the process on purpose (the grader's choice, not a verdict)."""
        if self.process is None:
            return None
        self.process.kill(ExitReason.KILLED)
        self.lost = RunnerLost(Verdict.SKIPPED, T("已被评测程序结束", "ended by the judge"))
        return self.process.wait(5.0)

    # ---------------------------------------------------------------- calls
    def call(self, target: str, fn: str, args: list, kwargs: dict, *,
             return_args: bool = False) -> CallResult:
        """Call ``fn`` and wait for its RESULT; events are ignored and questions answered
        with None. Raises SubmissionError, RunnerLost or ImportFailed."""
        return drained(self.stream(target, fn, args, kwargs, return_args=return_args))

    def begin(self, target: str, fn: str, args: list, kwargs: dict, *,
              return_args: bool = False) -> Callable[[], CallResult]:
        """Send a call now and take its result later, from the function this returns
        (events ignored, questions answered None; it raises what ``call`` would): the
        grader does other work meanwhile, such as the other runner's call of the same
        inputs, and both runners compute at once. Calls begun one after the other are
        all sent at once (up to :data:`MAX_IN_FLIGHT` calls and :data:`IN_FLIGHT_BYTES`):
        the runner takes the next from its socket as soon as it has answered one, without
        a round trip each. Answers come in order, so taking one first takes those begun
        before it (kept for their own look); a plain call (``call``, ``stream``) takes
        all of them first."""
        frame = _call_frame(target, fn, args, kwargs, return_args)
        size = frame.nbytes
        cap = self._in_flight_cap()
        while self.pending and (len(self.pending) >= MAX_IN_FLIGHT
                                or self.in_flight_bytes + size > cap):
            # Unanswered calls must fit in the socket's buffer: a grader blocked sending
            # while the runner is blocked sending an answer nobody reads is a deadlock.
            self._settle_first()
        stream = self._open(frame, (args, kwargs) if return_args else None)
        outcome: list[CallResult | Exception] = []

        def finish() -> CallResult:
            if not outcome:
                while self.pending and self.pending[0][0] is not finish:
                    self._settle_first()  # the answers begun before this one come first
                if self.pending:
                    self.pending.pop(0)
                try:
                    outcome.append(drained(stream))
                except Exception as e:  # kept for whoever asks for the result
                    outcome.append(e)
            if isinstance(outcome[0], Exception):
                raise outcome[0]
            return outcome[0]

        self.pending.append((finish, size))
        return finish

    @property
    def in_flight_bytes(self) -> int:
        """The frames' bytes of the calls begun and not yet read."""
        return sum(size for _, size in self.pending)

    def _in_flight_cap(self) -> int:
        """The bytes of begun calls' frames that may wait unanswered (see begin), read
        once from the channel's send buffer, which does not change."""
        if self._cap is None:
            sock = getattr(getattr(self.process, "channel", None), "sock", None)
            try:
                sndbuf = sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) if sock else 0
            except OSError:  # closed: the next send says so
                sndbuf = 0
            self._cap = min(IN_FLIGHT_BYTES, sndbuf // 4) if sndbuf > 0 else IN_FLIGHT_BYTES
        return self._cap

    def _settle_first(self) -> None:
        """Take the answer of the oldest call begun and not yet finished (see begin)."""
        with contextlib.suppress(Exception):  # raised again to whoever asks for it
            self.pending[0][0]()

    def _settle(self) -> None:
        """Take the answers of every call begun and not yet finished (see begin)."""
        while self.pending:
            self._settle_first()

    def stream(self, target: str, fn: str, args: list, kwargs: dict, *,
               return_args: bool = False) -> Stream:
        """Start a call and iterate over the events it sends before its RESULT."""
        self._settle()
        return self._open(_call_frame(target, fn, args, kwargs, return_args),
                          (args, kwargs) if return_args else None)

    def _open(self, frame: Frame, sent: tuple[list, dict] | None) -> Stream:
        """Send a CALL frame: its Stream."""
        self._check_usable()
        self.ready()
        assert self.process is not None
        budget = self.budget or Budget(START_TIMEOUT_S)
        self._send_frame(frame, budget.deadline(time.monotonic()) + SEND_GRACE_S,
                         budget.seconds)
        return Stream(self, sent)

    def timed_run(self, target: str, fn: str, args: list, kwargs: dict, deadline_s: float,
                  *, prepare: str | None = None, cpu: int | None = None,
                  staged: Frame | None = None) -> tuple[CallResult, float]:
        """Stage the inputs (untimed; with ``prepare``, the fixture builds its state from
        them), then time RUN until the whole RESULT has arrived. With ``cpu``, the runner
        pins itself to that CPU first (both sides of a comparison share one core).
        ``staged``: the STAGE frame of these very arguments, encoded once for both sides
        (:func:`stage_frame`)."""
        self._settle()
        self._check_usable()
        self.ready()
        assert self.process is not None
        ch = self.process.channel
        frame = staged or stage_frame(target, fn, args, kwargs, prepare, cpu)
        cpu_before = self.process.cpu_time_ns()
        staged_at = time.perf_counter()
        self._send_frame(frame, time.monotonic() + deadline_s + SEND_GRACE_S, deadline_s)
        # Staging with ``prepare`` builds the scenario's state (a model, data): up to the
        # start-up allowance. Without, the runner only takes the inputs in; one that does
        # not answer in time has stopped reading (a thread holding the GIL, say).
        wait_s = START_TIMEOUT_S if prepare else max(deadline_s, 10.0) + SEND_GRACE_S
        msg = self._recv(time.monotonic() + wait_s, deadline_s)
        if msg.kind is Kind.ERROR:
            raise self._error(msg.body)
        if msg.kind is not Kind.DONE:
            raise self._broken(f"expected DONE, got {msg.kind}")
        start = time.perf_counter()
        # What staging took: the submission's runner could do the work while staging (it
        # has the inputs then), so the throughput check charges what it takes beyond the
        # reference's staging of the same inputs. The CPU time of the runner's cgroup (all
        # its processes), where the launcher counts it: unlike the wall clock it does not
        # wait for a busy machine, so honest staging hardly varies.
        self.last_stage_s = start - staged_at
        cpu_after = self.process.cpu_time_ns()
        self.last_stage_cpu_s = (None if cpu_before is None or cpu_after is None
                                 else (cpu_after - cpu_before) / 1e9)
        self._send(Kind.RUN, {"id": 1}, time.monotonic() + deadline_s, deadline_s)
        raw = self._recv(time.monotonic() + deadline_s, deadline_s, raw=True)
        elapsed = time.perf_counter() - start
        cpu_done = self.process.cpu_time_ns()
        self.last_run_cpu_s = (None if cpu_after is None or cpu_done is None
                               else (cpu_done - cpu_after) / 1e9)
        try:
            # The blob was just received and is ours alone: its tensors may view it.
            msg = decode(*raw, max_blob=ch.max_blob, copy=False)
        except ProtocolError:
            raise self._broken("undecodable result") from None
        return self._result(msg, elapsed), elapsed

    # ---------------------------------------------------------------- internals
    def _check_usable(self) -> None:
        if self.lost is not None:
            raise self.lost

    def _send(self, kind: Kind, body: Any, deadline: float, wall_s: float) -> None:
        self._send_frame(encode(kind, body), deadline, wall_s)

    def _send_frame(self, frame: Frame, deadline: float, wall_s: float) -> None:
        """Send, or end the runner: one that does not take a message before ``deadline``
        has stopped reading (held the GIL, hung, flooded us) and is killed for time."""
        assert self.process is not None
        try:
            self.process.channel.send_frame(frame, deadline=deadline)
        except ChannelTimeout:
            self.process.kill(ExitReason.WALL)
            raise self._lose(wall_s) from None
        except ChannelClosed:
            raise self._lose(wall_s) from None

    def _recv(self, deadline: float, wall_s: float, *, raw: bool = False):
        assert self.process is not None
        channel = self.process.channel
        try:
            return channel.recv_raw(deadline) if raw else channel.recv(deadline)
        except ChannelTimeout:
            self.process.kill(ExitReason.WALL)
            raise self._lose(wall_s) from None
        except ChannelClosed:
            raise self._lose(wall_s) from None
        except ProtocolError:
            self.process.kill(ExitReason.KILLED)
            raise self._lose(wall_s) from None

    def _lose(self, wall_s: float | None) -> RunnerLost:
        assert self.process is not None
        ex = self.process.wait(5.0)
        self.lost = lost_verdict(ex, self.job.limits.cpu_s, wall_s)
        return self.lost

    def _broken(self, why: str) -> RunnerLost:
        assert self.process is not None
        self.process.kill(ExitReason.KILLED)
        return self._lose(None)

    def _error(self, body: Any) -> SubmissionError:
        """The submission's exception, marked when the kernel had killed a process of the
        job for memory: a DataLoader worker ended by the OOM killer makes the main process
        raise a RuntimeError, which is the memory limit's doing."""
        error = SubmissionError(body if isinstance(body, dict) else {})
        error.oom_killed = self.process is not None and self.process.oom_kills() > 0
        return error

    def memory_bytes(self) -> int | None:
        """What the runner and every process it started hold now (its memory cgroup);
        None where the launcher cannot tell (no sandbox, or no cgroups)."""
        if self.process is None or not self.process.alive:
            return None
        return self.process.memory_bytes()

    def _result(self, msg, elapsed: float, sent: tuple[list, dict] | None = None
                ) -> CallResult:
        """The CallResult of a RESULT. ``sent``: the arguments of a call that asked for
        them back, for a runner that answers they are unchanged (they encode to the very
        bytes it received: sandbox.runner.Runner.call)."""
        if msg.kind is Kind.ERROR:
            raise self._error(msg.body)
        if msg.kind is not Kind.RESULT or not isinstance(msg.body, dict):
            raise self._broken(f"expected RESULT, got {msg.kind}")
        b = msg.body
        args, kwargs = b.get("args"), b.get("kwargs")
        if b.get("args_unchanged") is True and sent is not None:
            args, kwargs = list(sent[0]), dict(sent[1])
        return CallResult(b.get("value"), args if isinstance(args, list) else [],
                          kwargs if isinstance(kwargs, dict) else {}, elapsed)


def _call_frame(target: str, fn: str, args: list, kwargs: dict, return_args: bool) -> Frame:
    return encode(Kind.CALL, {"target": target, "fn": fn, "args": args, "kwargs": kwargs,
                              "return_args": return_args})


def stage_frame(target: str, fn: str, args: list, kwargs: dict, prepare: str | None = None,
                cpu: int | None = None) -> Frame:
    """The STAGE message of one timed call (the same for both sides of a pair)."""
    return encode(Kind.STAGE, {"id": 1, "target": target, "fn": fn, "args": args,
                               "kwargs": kwargs, "prepare": prepare, "cpu": cpu})
