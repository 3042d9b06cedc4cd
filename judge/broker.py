"""The worker's side of a grader box's link: a launch broker (see judge/graderbox.py).

The box asks, the broker answers: it starts runners on the judging's two job folders only,
with its own limits and device, and hands each runner's channel over as a descriptor; it
kills, pauses and waits for them, reads their output, OOM counts and memory; it holds
judge.throughput's machine-wide lock while the box measures. Everything the box sends is
checked as data (:class:`Refused` answers a request it may not make), and its progress
events are passed on only when they read as grading events.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import socket
import time
from pathlib import Path
from typing import Any

from judge.boxwire import Link, LinkClosed, LinkTimeout
from judge.events import GRADING, EventKind, event_from_json, kind_of
from sandbox.launch import Exit, ExitReason, Job, Launcher, Limits, RunnerProcess

log = logging.getLogger("judge.broker")

BOX_MODULE = "judge.boxed"
JUDGE_CODE = Path(__file__).resolve().parent
MAX_RUNNERS = 500  # runners one judging may start (resumable-training starts dozens)
MAX_LIVE_RUNNERS = 6
MAX_EVENTS = 5000
MAX_WAIT_S = 30.0
FINAL = ("report", "packed", "failed")  # what a box's last message says


class BoxFailed(Exception):
    """The grader box did not finish its job: the package's fault (internal_error)."""

    def __init__(self, why: str, output: str = "") -> None:
        super().__init__(why)
        self.why, self.output = why, output



class Broker:
    """Serves one box: starts runners on its two folders, answers about them, passes on
    its events, and keeps its clock."""

    def __init__(self, launcher: Launcher, folders: dict[str, Path], limits: Limits,
                 device: str, emit, lock_s: float = 0.0) -> None:
        """``limits`` and ``device``: the runners'. ``lock_s``: how long the box may hold
        the throughput lock at a time (0: never; the problem has no speed check), so that
        a package cannot keep every other slot's speed checks waiting."""
        self.lock_s, self.locked_at = lock_s, 0.0
        self.launcher, self.folders, self.limits, self.device = launcher, folders, limits, device
        self.emit = emit
        self.runners: dict[int, RunnerProcess] = {}
        self.started = 0
        self.events = 0
        self.lock = contextlib.ExitStack()
        self.locked = False
        self.box: RunnerProcess | None = None
        self.link: Link | None = None

    def run(self, root: Path, job: dict[str, Any], limits: Limits) -> dict[str, Any]:
        """Start a box with ``limits`` on the judging folder ``root`` and send it ``job``;
        serve it until its last message (see FINAL), which is returned. Raises BoxFailed."""
        from sandbox.box import code_snapshot, start_box
        from sandbox.template import SandboxError

        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            binds = [(code_snapshot(self.launcher, "judge", JUDGE_CODE),  # type: ignore
                      "/opt/torch-judge/judge", False),
                     (root / "problem", "/problem", False), (root / "jobs", "/jobs", True)]
            self.box = start_box(self.launcher, module=BOX_MODULE, args=[],  # type: ignore
                                 link=(ours, theirs), binds=binds, limits=limits,
                                 folder=root)
        except (SandboxError, OSError) as e:
            ours.close()
            raise BoxFailed(f"it could not be started: {e}") from None
        finally:
            theirs.close()
        self.link = Link(ours)
        deadline = time.monotonic() + limits.lifetime_s + 10
        try:
            self.link.send(job)
            return self.serve(deadline)
        except LinkClosed as e:
            raise BoxFailed(self._how_it_ended(str(e)), self._output()) from None
        except LinkTimeout:
            raise BoxFailed(f"it took longer than {limits.lifetime_s:.0f} s",
                            self._output()) from None

    def serve(self, deadline: float) -> dict[str, Any]:
        assert self.link is not None and self.box is not None
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise LinkTimeout()
            ready, _, _ = select.select([self.link.sock], [], [], min(left, 1.0))
            if self.locked and time.monotonic() - self.locked_at > self.lock_s:
                log.warning("a grader box held the throughput lock for over %.0f s: "
                            "let go", self.lock_s)
                self.lock.close()
                self.locked = False
            if not ready:
                continue
            message, fds = self.link.recv(deadline)
            for fd in fds:  # the box has nothing to hand us
                os.close(fd)
            op = message.get("op")
            if op in FINAL:
                return message
            if op == "event":
                self._event(message.get("event"))
                continue
            try:
                value, out = self.answer(op, message)
            except Refused as e:
                self.link.send({"error": str(e)})
                continue
            except Exception as e:  # the launcher failed: the judge's own error
                log.exception("the broker could not serve %r", op)
                self.link.send({"error": f"{type(e).__name__}: {e}"})
                continue
            self.link.send({"value": value}, out)

    def answer(self, op: Any, m: dict[str, Any]) -> tuple[Any, list[int]]:
        """The answer to one request, and the descriptors that go with it."""
        if op == "start":
            return self._start(m)
        if op == "lock":
            if self.lock_s <= 0:
                raise Refused("this problem has no speed check")
            if not self.locked:
                from judge import throughput

                self.lock.enter_context(throughput.measuring_alone())
                self.locked, self.locked_at = True, time.monotonic()
            return None, []
        if op == "unlock":
            self.lock.close()
            self.locked = False
            return None, []
        runner = self.runners.get(m.get("id"))  # type: ignore[arg-type]
        if runner is None:
            raise Refused("no such runner")
        if op == "kill":
            runner.kill(_reason(m.get("reason")))
            return None, []
        if op == "pause":
            away = m.get("away_from")
            if away is not None and not (type(away) is int and 0 <= away < 4096):
                raise Refused("away_from is a CPU number")
            return bool(runner.pause(bool(m.get("paused")), away)), []
        if op == "cpu":
            return runner.cpu_time_ns(), []
        if op == "alive":
            return runner.alive, []
        if op == "settle":
            return runner.settle_output(), []
        if op == "since":
            return runner.output_since(_int(m.get("mark"))), []
        if op == "wait":
            return _exit_json(runner.wait(_seconds(m.get("timeout")))), []
        if op == "oom":
            return runner.oom_kills(), []
        if op == "memory":
            return runner.memory_bytes(), []
        raise Refused(f"unknown request {op!r}")

    def _start(self, m: dict[str, Any]) -> tuple[Any, list[int]]:
        role, hash_seed = m.get("role"), m.get("hash_seed")
        if role not in self.folders:
            raise Refused(f"no job folder {role!r}")
        if hash_seed is not None and not (type(hash_seed) is int and 0 <= hash_seed < 2**32):
            raise Refused("a hash seed is an integer in [0, 2**32)")
        if self.started >= MAX_RUNNERS:
            raise Refused(f"a judging may start at most {MAX_RUNNERS} runners")
        if sum(r.alive for r in self.runners.values()) >= MAX_LIVE_RUNNERS:
            raise Refused(f"at most {MAX_LIVE_RUNNERS} runners may run at once")
        runner = self.launcher.start(Job(self.folders[role], self.limits, self.device,
                                         hash_seed))
        self.started += 1
        self.runners[self.started] = runner
        return ({"id": self.started, "inside": str(runner.inside),
                 "max_blob": runner.channel.max_blob}, [runner.channel.sock.fileno()])

    def _event(self, data: Any) -> None:
        kind = kind_of(data)
        if kind is None or kind not in GRADING or kind is EventKind.DONE:
            return
        self.events += 1
        if self.events > MAX_EVENTS:
            return
        try:
            event = event_from_json(data)
        except (KeyError, TypeError, ValueError, AttributeError):
            log.warning("a grader box sent an event that does not read as one")
            return
        self.emit(event)

    def _how_it_ended(self, why: str) -> str:
        if self.box is None:
            return why
        # A box that ended shut its link down just before it was marked as ended; one
        # that is still alive sent something that is not a message.
        ended = self.box.wait(2.0)
        if ended is None:
            return f"its link broke ({why})"
        if ended.reason is ExitReason.MEMORY:
            return f"it ran out of memory ({self.box.job.limits.memory_mb} MB)"
        if ended.reason is ExitReason.WALL:
            return f"it took longer than {self.box.job.limits.lifetime_s:.0f} s"
        if ended.reason is ExitReason.OUTPUT:
            return "it printed too much"
        return f"it ended without a report ({ended.describe()})"

    def _output(self) -> str:
        return self.box.output if self.box is not None else ""

    def close(self) -> None:
        """Kill the box and every runner it had, and drop the lock (whatever happened)."""
        if self.box is not None:
            self.box.kill(ExitReason.KILLED)
            self.box.wait(5.0)
        for runner in self.runners.values():
            runner.kill(ExitReason.KILLED)
        for runner in self.runners.values():
            runner.wait(5.0)
        self.lock.close()
        if self.link is not None:
            self.link.close()


class Refused(Exception):
    """A request the box may not make."""


def _reason(value: Any) -> ExitReason:
    try:
        return ExitReason(value)
    except ValueError:
        raise Refused(f"no exit reason {value!r}") from None


def _int(value: Any) -> int:
    if type(value) is not int:
        raise Refused("expected an integer")
    return value


def _seconds(value: Any) -> float:
    if type(value) not in (int, float) or not value >= 0:
        raise Refused("expected a number of seconds")
    return min(float(value), MAX_WAIT_S)


def _exit_json(ended: Exit | None) -> dict[str, Any] | None:
    if ended is None:
        return None
    return {"reason": str(ended.reason), "returncode": ended.returncode,
            "signal": ended.signal, "cpu_s": ended.cpu_s, "max_rss_mb": ended.max_rss_mb}
