"""The runner processes of one judging (:class:`Sessions`), and a worker's head start on
the next one (:class:`HeadStart`).

Starting a judging's two runners from the warm template takes about 20 ms (forking into
fresh namespaces, the mounts, the cgroup moves, the confinement), a fifth of a correct
padding-collate's whole overhead over its bare compute. A worker mostly judges the same
problem again next (a class works through one problem at a time), so once a judging is
over it starts the next one's runners for the same problem (``HeadStart.prepare``): the
reference's runner imports the reference, the submission's waits for the submission,
which the next judging writes into its job folder before it says HELLO
(``Sessions.adopt``). A judging of another problem, or one that comes more than
``HeadStart.MAX_AGE_S`` later (each runner's lifetime watchdog runs from its start), has
them stopped and starts its own, as before. Nothing of a submission runs before it is
adopted: the submission's runner has only its placeholder file and its channel.
"""

from __future__ import annotations

import dataclasses
import logging
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal, overload

from judge.expected import ReplayMismatch, ReplaySession
from judge.package import Problem, limits_for
from judge.session import RunnerSession, Session
from judge.workdirs import release
from sandbox.launch import Job, Launcher

log = logging.getLogger(__name__)


class Sessions:
    """The runner processes of one job: the shared ``sub`` and ``ref`` sessions, restarted
    when they die, and fresh ones that cases ask for."""

    def __init__(self, launcher: Launcher, problem: Problem, root: Path, code: str | None,
                 device: str, expected: dict[str, list] | None = None) -> None:
        """``code`` None: a head start's (see :class:`HeadStart`), whose submission file is
        an empty placeholder until :meth:`adopt` writes it."""
        self.launcher = launcher
        self.device = device
        self.root = root
        self.code = code or ""  # the submission as submitted (its job folder may change)
        self.replay = ReplaySession(expected) if expected is not None else None
        self.jobs: dict[str, Job] = {}
        self.hellos: dict[str, dict[str, Any]] = {}
        limits = limits_for(problem)
        sources = {"sub": self.code}
        if self.replay is None:
            sources["ref"] = problem.read("reference.py")
        for role, source in sources.items():
            folder = root / role
            folder.mkdir(exist_ok=True)  # a grader box's parent makes them (graderbox.py)
            (folder / "submission.py").write_text(source, encoding="utf-8")
            hello: dict[str, Any] = {"submission": folder / "submission.py",
                                     "names": list(problem.meta.names), "threads": 1,
                                     "device": device}
            if problem.fixture_path is not None:
                # Named after the module the runner loads it as, so that DataLoader
                # workers started with spawn can import it (see sandbox.runner._load).
                shutil.copyfile(problem.fixture_path, folder / "judge_fixture.py")
                hello["fixture"] = folder / "judge_fixture.py"
            self.jobs[role] = Job(folder, limits, device)
            self.hellos[role] = hello
        self.current: dict[str, Session] = {}
        self.all: list[RunnerSession] = []
        self.restarts = 0

    def new(self, role: str, hash_seed: int | None = None, *,
            greet: bool = True) -> RunnerSession:
        job = self.jobs[role]
        if hash_seed is not None:
            job = dataclasses.replace(job, hash_seed=hash_seed)
        session = RunnerSession(self.launcher, job, self.hellos[role])
        self.all.append(session)
        session.start(greet=greet)
        return session

    @overload
    def get(self, role: str, fresh: Literal[False] = False) -> Session: ...

    @overload
    def get(self, role: str, fresh: Literal[True], *,
            hash_seed: int | None = None) -> RunnerSession: ...

    def get(self, role: str, fresh: bool = False, *,
            hash_seed: int | None = None) -> Session:
        """The role's shared runner (a practice pack's replay for ``ref`` when it has no
        reference); with ``fresh``, a new process (with ``hash_seed``, its own
        PYTHONHASHSEED). A :class:`judge.session.SessionSource`."""
        if role == "ref" and self.replay is not None:
            if fresh:
                raise ReplayMismatch("this case needs the reference itself; judge it online")
            return self.replay
        if fresh:
            return self.new(role, hash_seed)
        session = self.current.get(role)
        if session is None or not session.alive:
            if session is not None and role == "sub":
                self.restarts += 1
            session = self.current[role] = self.new(role)
        return session

    def start_shared(self, *, greet: bool = True) -> None:
        """Start the shared ``sub`` and ``ref`` runners at once: both are forked from the
        template in parallel instead of one after the other (each start waits for its
        runner's confinement handshake). A failed start raises; a runner that did start
        is closed with the others. Without ``greet`` (a head start), the submission's
        runner is not sent HELLO: :meth:`adopt` does that."""
        roles = ["sub"] if self.replay is not None else ["sub", "ref"]
        if len(roles) == 1 or self.current:
            for role in roles:
                self.get(role)
            return
        with ThreadPoolExecutor(len(roles), thread_name_prefix="start") as pool:
            started = {role: pool.submit(self.new, role, greet=greet or role != "sub")
                       for role in roles}
        for role, future in started.items():
            self.current[role] = future.result()

    def refresh(self) -> bool:
        """New shared ``sub`` and ``ref`` runners, forked from the warm template, once both
        are ready: a ranking measurement times its pairs in generations of processes, so
        that no one process's luck (where its memory landed) decides the ratio. False,
        and the runners kept, where a start is not cheap (CUDA runners start cold), for a
        replay, or when a new runner does not start."""
        roles = ("sub", "ref")
        if self.replay is not None or self.device == "cuda" or not all(
                self.current.get(role) is not None and self.current[role].alive
                for role in roles):
            return False
        fresh: dict[str, RunnerSession] = {}
        try:
            with ThreadPoolExecutor(len(roles), thread_name_prefix="refresh") as pool:
                started = {role: pool.submit(self.new, role) for role in roles}
            fresh = {role: future.result() for role, future in started.items()}
            for session in fresh.values():
                session.ready()
        except Exception:  # the old runners stay (a new one that did start is closed)
            for session in fresh.values():
                session.close()
            return False
        old = [s for s in self.all if any(s is self.current[role] for role in roles)]
        self.current.update(fresh)
        for runner in old:
            runner.say_bye()
        for runner in old:
            runner.close()
            self.all.remove(runner)
        return True

    def adopt(self, code: str) -> None:
        """A head start's runners take on the submission: its file in the submission's job
        folder (the runner there has run nothing yet), then HELLO."""
        self.code = code
        path = self.jobs["sub"].dir / "submission.py"
        path.unlink(missing_ok=True)
        path.write_text(code, encoding="utf-8")
        sub = self.current["sub"]
        if isinstance(sub, RunnerSession):
            sub.greet()

    def close(self) -> None:
        for session in self.all:
            session.say_bye()  # all of them first: they exit at the same time
        for session in self.all:
            session.close()


class HeadStart:
    """A worker's next judging's runners, started for the problem it judged last (see the
    module's docstring). One per launcher; ``grade(..., head_start=)`` takes them and,
    once done, prepares the next. Only CPU judgings of a problem with a reference here
    (not a practice pack's replay) get one; CUDA runners start cold."""

    MAX_AGE_S = 30.0  # a quarter of the shortest lifetime watchdog (judge.package.limits_for)

    def __init__(self, launcher: Launcher) -> None:
        self.launcher = launcher
        self.lock = threading.Lock()
        self.next: _Spare | None = None

    def prepare(self, problem: Problem, jobs_root: Path | None) -> None:
        """Start a judging's runners for ``problem`` in the background (a thread)."""
        with self.lock:
            old, self.next = self.next, _Spare(_key(problem, jobs_root))
            spare = self.next
        if old is not None:
            _in_background(old.stop, self.launcher)
        spare.thread = threading.Thread(target=spare.start, daemon=True, name="head-start",
                                        args=(self.launcher, problem, jobs_root))
        spare.thread.start()

    def take(self, problem: Problem, jobs_root: Path | None) -> Sessions | None:
        """The runners started for this judging, or None (none, of another problem, too
        old, or one of them gone: those are stopped in the background)."""
        with self.lock:
            spare, self.next = self.next, None
        if spare is None:
            return None
        if spare.key == _key(problem, jobs_root):
            spare.join()  # started at the end of the last judging: mostly done by now
            sessions = spare.sessions
            if (sessions is not None and time.monotonic() - spare.at <= self.MAX_AGE_S
                    and all(s.alive for s in sessions.current.values())):
                return sessions
        _in_background(spare.stop, self.launcher)
        return None

    def wait(self) -> None:
        """Until the runners started ahead are up (benchmarks: a worker that waited for
        its next job, as a worker does unless its queue is full)."""
        spare = self.next
        if spare is not None:
            spare.join()

    def close(self) -> None:
        """Stop the runners started ahead, if any (a worker that stops); a later judging
        may start some again."""
        with self.lock:
            spare, self.next = self.next, None
        if spare is not None:
            spare.stop(self.launcher)


def _key(problem: Problem, jobs_root: Path | None) -> tuple[str, str, str]:
    return problem.slug, problem.content_hash, str(jobs_root)


@dataclasses.dataclass(eq=False)
class _Spare:
    key: tuple[str, str, str]
    at: float = dataclasses.field(default_factory=time.monotonic)
    sessions: Sessions | None = None
    root: Path | None = None
    thread: threading.Thread | None = None

    def start(self, launcher: Launcher, problem: Problem, jobs_root: Path | None) -> None:
        try:
            self.root = Path(tempfile.mkdtemp(prefix="judge-", dir=jobs_root))
            self.sessions = Sessions(launcher, problem, self.root, None, "cpu")
            self.sessions.start_shared(greet=False)
            self.sessions.get("ref").ready()  # the reference imported, ahead too
        except Exception:
            log.exception("no head start for %s", problem.slug)
            self.discard(launcher)
        self.at = time.monotonic()

    def join(self) -> None:
        if self.thread is not None:
            self.thread.join()

    def stop(self, launcher: Launcher) -> None:
        """Once started, stop its runners and release its folders."""
        self.join()
        self.discard(launcher)

    def discard(self, launcher: Launcher) -> None:
        sessions, root, self.sessions, self.root = self.sessions, self.root, None, None
        if sessions is not None:
            sessions.close()
        if root is not None:
            release(launcher, root)


def _in_background(work: Callable[[Launcher], None], launcher: Launcher) -> None:
    threading.Thread(target=work, args=(launcher,), daemon=True, name="head-start-stop").start()
