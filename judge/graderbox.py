"""Judging with a package's own code confined: the worker's side of a grader box.

For a package that did not ship with the judge (``judge.trust``), :func:`grade_in_box` runs
the whole grading — the import of ``tests.py``, its cases, input generation, comparisons
and the clock — in a grader box (``sandbox/box.py``: bubblewrap, a uid of its own, no
network, no token, only this package's files), and this process acts as its launch broker:

* it makes the judging's folder, a size-limited tmpfs of its own (``/run/torch-judge/
  boxes/<pid>-…``): ``problem/`` a copy of the package (read-only, at ``/problem`` inside),
  ``jobs/sub`` and ``jobs/ref`` the two job folders (at ``/jobs``, owned by the box's uid and
  the slot's group; the box cannot rename or replace them, so the launcher's mounts on them
  never follow anything the box made). The folder is a shared mount, so the job folders'
  own tmpfs (``jobdirs``), mounted when a runner starts, appear in the box too;
* it starts, kills, pauses and waits for runners when the box asks (:class:`Broker`), with
  its own limits and device for them, on those two folders only, and hands each runner's
  channel to the box as a descriptor: timed calls never pass through here;
* it takes judge.throughput's machine-wide lock for the box's speed checks;
* it passes the box's progress events on and takes its report, after checking both; what
  the report says of the judging itself (problem, version, seed, isolation, device, torch)
  is this process's. A box that crashes, lies in its messages, or outlives its limits makes
  the report internal_error — the package's fault, never the submission's;
* at the end, whatever happened, it kills the box and every runner, releases the job
  folders and unmounts the judging's folder.

A hostile package still decides the verdicts of its own problem's submissions (its tests
are the judge of them); what it cannot reach is anything else: the worker's token and
memory, other problems, the network, files outside its judging.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import socket
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from judge.boxwire import Link, LinkClosed, LinkTimeout
from judge.events import GRADING, EventKind, event_from_json, kind_of
from judge.i18n import T
from judge.package import Problem
from judge.report import Report
from judge.verdict import Verdict
from sandbox import linux
from sandbox.launch import Exit, ExitReason, Job, Launcher, Limits, MiB, RunnerProcess

log = logging.getLogger("judge.graderbox")

BOX_ROOT = Path("/run/torch-judge/boxes")
BOX_MODULE = "judge.boxed"
JUDGE_CODE = Path(__file__).resolve().parent
ROLES = ("sub", "ref")
MAX_RUNNERS = 500  # runners one judging may start (resumable-training starts dozens)
MAX_LIVE_RUNNERS = 6
MAX_EVENTS = 5000
MAX_WAIT_S = 30.0
SEED_ROOM_MB = 160  # what the box may write into its job folders before a runner starts


class BoxFailed(Exception):
    """The grader box did not produce a report: the package's fault (internal_error)."""

    def __init__(self, why: str, output: str = "") -> None:
        super().__init__(why)
        self.why, self.output = why, output


def box_limits(problem: Problem) -> Limits:
    """The box's own limits: room for the grader's work (inputs, expected values, the
    reference's results) and a wall clock over the whole judging."""
    from judge.grader import limits_for

    wall = 2 * limits_for(problem).lifetime_s + 120
    return Limits(lifetime_s=wall, cpu_s=wall, memory_mb=4096, output_bytes=1 * MiB,
                  keep_output_bytes=16 * 1024, nproc=128, nofile=1024, tmp_mb=64, shm_mb=16)


def grade_in_box(problem: Problem, code: str, launcher: Launcher, options: Any,
                 report: Report, emit) -> None:
    """Judge ``code`` in a grader box, into ``report`` (whose seed and device are used);
    every failure of the box ends as internal_error in ``report``."""
    from judge.grader import limits_for

    try:
        with judging_folder(launcher, problem) as (root, folders):
            broker = Broker(launcher, folders, limits_for(problem), report.device, emit)
            try:
                got = broker.run(problem, root, {
                    "mode": "grade", "code": code, "seed": report.seed,
                    "device": report.device,
                    "options": {"public_only": options.public_only,
                                "examples_only": options.examples_only,
                                "cases": list(options.cases), "throughput": options.throughput,
                                "cuda": options.cuda}})
            finally:
                broker.close()
        adopt(report, got)
    except BoxFailed as e:
        log.error("grader box of %s (%s) failed: %s\n%s", problem.slug,
                  problem.content_hash[:12], e.why, e.output[-4000:])
        report.verdict = Verdict.INTERNAL_ERROR
        report.tests, report.throughput = [], []
        report.message = T("评测系统内部错误：这道题的测试代码出错了，不是你的代码的问题。",
                           "internal error: this problem's tests failed; this is not your "
                           "code's fault.")
        tail = f"\n{e.output[-2000:]}" if e.output else ""
        report.detail = T(f"测试代码的隔离进程：{e.why}{tail}",
                          f"the problem's grader box: {e.why}{tail}")


def adopt(report: Report, data: Any) -> None:
    """Take the verdicts of the box's report; what it says of the judging is ours."""
    try:
        got = Report.from_json(data)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise BoxFailed(f"its report does not read as one: {type(e).__name__}: {e}") from None
    report.verdict, report.tests, report.throughput = got.verdict, got.tests, got.throughput
    report.message, report.detail = got.message, got.detail


# ---------------------------------------------------------------- the judging's folder


@contextlib.contextmanager
def judging_folder(launcher: Launcher, problem: Problem
                   ) -> Iterator[tuple[Path, dict[str, Path]]]:
    """A tmpfs with the package's copy and the two job folders; released and unmounted on
    the way out, whatever happened."""
    from sandbox.box import box_uid
    from sandbox.layout import unmount_under

    sweep()
    uid = box_uid(launcher)  # type: ignore[arg-type]
    root = Path(tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=BOX_ROOT))
    folders = {role: root / "jobs" / role for role in ROLES}
    try:
        size = _size(problem.dir) // MiB + SEED_ROOM_MB + 8
        linux.mount("tj-box", str(root), "tmpfs", linux.MS_NOSUID | linux.MS_NODEV,
                    f"size={size}m,nr_inodes=8192,mode=0755")
        # A peer group of its own, shared: the job folders' tmpfs mounted below it later
        # (jobdirs.ensure) reach the box's copy of it, a slave.
        linux.mount(None, str(root), None, linux.MS_PRIVATE)
        linux.mount(None, str(root), None, linux.MS_SHARED)
        _copy_package(problem.dir, root / "problem")
        (root / "jobs").mkdir(mode=0o755)
        for folder in folders.values():
            folder.mkdir(mode=0o770)
            os.chown(folder, uid, launcher.gid)  # type: ignore[attr-defined]
            os.chmod(folder, 0o770)
        yield root, folders
    finally:
        for folder in folders.values():
            try:
                launcher.release(folder)
            except Exception:
                log.exception("the launcher could not release %s", folder)
        unmount_under(root)


def sweep() -> None:
    """Unmount the judging folders of workers that are no longer running."""
    from sandbox.layout import unmount_under

    for p in (BOX_ROOT.parent, BOX_ROOT):
        p.mkdir(exist_ok=True)
        os.chmod(p, 0o755)
    for entry in BOX_ROOT.iterdir():
        owner = entry.name.split("-", 1)[0]
        if owner.isdigit() and not linux.pid_alive(int(owner)):
            unmount_under(entry)


def _size(folder: Path) -> int:
    return sum(p.lstat().st_size for p in folder.rglob("*") if p.is_file()
               and not p.is_symlink())


def _copy_package(source: Path, target: Path) -> None:
    """Regular files and folders only (links are not followed), read-only for everyone
    but root; ``__pycache__`` left out."""
    for top, dirs, files in os.walk(source, followlinks=False):
        rel = Path(top).relative_to(source)
        dirs[:] = [d for d in dirs if d != "__pycache__"
                   and not os.path.islink(os.path.join(top, d))]
        (target / rel).mkdir(mode=0o755)
        for name in files:
            src = Path(top) / name
            if not stat.S_ISREG(src.lstat().st_mode):
                continue
            fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW)
            with os.fdopen(fd, "rb") as f:
                (target / rel / name).write_bytes(f.read())
            os.chmod(target / rel / name, 0o444)
    for top, dirs, _ in os.walk(target):
        for d in dirs:
            os.chmod(os.path.join(top, d), 0o555)
    os.chmod(target, 0o555)


# ---------------------------------------------------------------- the broker


class Broker:
    """Serves one box: starts runners on its two folders, answers about them, passes on
    its events, and keeps its clock."""

    def __init__(self, launcher: Launcher, folders: dict[str, Path], limits: Limits,
                 device: str, emit) -> None:
        self.launcher, self.folders, self.limits, self.device = launcher, folders, limits, device
        self.emit = emit
        self.runners: dict[int, RunnerProcess] = {}
        self.started = 0
        self.events = 0
        self.lock = contextlib.ExitStack()
        self.locked = False
        self.box: RunnerProcess | None = None
        self.link: Link | None = None

    def run(self, problem: Problem, root: Path, job: dict[str, Any]) -> Any:
        """Start the box on ``job``; serve it until it reports. Raises BoxFailed."""
        from sandbox.box import code_snapshot, start_box
        from sandbox.template import SandboxError

        limits = box_limits(problem)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            binds = [(code_snapshot(self.launcher, "judge", JUDGE_CODE),  # type: ignore
                      "/opt/torch-judge/judge", False),
                     (root / "problem", "/problem", False), (root / "jobs", "/jobs", True)]
            self.box = start_box(self.launcher, module=BOX_MODULE, args=[],  # type: ignore
                                 link=(ours, theirs), binds=binds, limits=limits,
                                 folder=root)
        except SandboxError as e:
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

    def serve(self, deadline: float) -> Any:
        assert self.link is not None and self.box is not None
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise LinkTimeout()
            ready, _, _ = select.select([self.link.sock], [], [], min(left, 5.0))
            if not ready:
                continue
            message, fds = self.link.recv(deadline)
            for fd in fds:  # the box has nothing to hand us
                os.close(fd)
            op = message.get("op")
            if op == "report":
                return message.get("report")
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
            if not self.locked:
                from judge import throughput

                self.lock.enter_context(throughput.measuring_alone())
                self.locked = True
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
            runner.pause(bool(m.get("paused")))
            return None, []
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
        ended = self.box.wait(5.0)
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
