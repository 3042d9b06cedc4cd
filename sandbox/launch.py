"""Starting runner processes, limiting them, killing them, and telling how they ended.

This is the trusted side of the sandbox. A :class:`Launcher` starts ``sandbox/runner.py``
for one job directory and returns a :class:`RunnerProcess`: a protocol channel, the
captured output (capped), a kill switch and, once it ended, an :class:`Exit` saying why.

:class:`PlainLauncher` starts the runner as an ordinary child process with rlimits and a
wall-clock watchdog, but no isolation: it is for the learner's own machine
(``practice/judge.py``) and for development, never for judging other people's code.
"""

from __future__ import annotations

import enum
import os
import resource
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from sandbox.channel import Channel, channel_pair

ROOT = Path(__file__).resolve().parent.parent
MiB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """What one runner process may use. The grader also keeps a per-case wall clock."""

    lifetime_s: float = 120.0  # the watchdog's kill, a safety net over all of its calls
    cpu_s: float = 60.0
    memory_mb: int = 2048
    output_bytes: int = 64 * 1024
    keep_output_bytes: int = 8 * 1024
    file_mb: int = 64
    nproc: int = 64
    nofile: int = 256
    tmp_mb: int = 64  # the sandbox's /tmp (a tmpfs)
    shm_mb: int = 16  # its /dev/shm
    job_mb: int = 256  # its job folder (a tmpfs that outlives the process, see jobdirs.py)

    def rlimits(self, address_space: bool) -> dict[str, object]:
        """The rlimits as data, for sandbox.confine.apply_rlimits inside the sandbox."""
        return {"cpu_s": self.cpu_s, "memory_mb": self.memory_mb, "file_mb": self.file_mb,
                "nproc": self.nproc, "nofile": self.nofile, "tmp_mb": self.tmp_mb,
                "shm_mb": self.shm_mb, "address_space": address_space}


@dataclass(frozen=True)
class Usage:
    """What a finished process used, as the kernel counted it."""

    cpu_s: float = 0.0
    max_rss_mb: float = 0.0

    @classmethod
    def of(cls, usage: resource.struct_rusage) -> Usage:
        return cls(usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)


class ExitReason(enum.StrEnum):
    """Why a runner process ended."""

    EXITED = "exited"  # on its own
    SIGNALED = "signaled"  # a signal we did not send
    CPU = "cpu"  # RLIMIT_CPU
    MEMORY = "memory"  # out of memory
    WALL = "wall"  # the watchdog or the grader's clock
    OUTPUT = "output"  # too much stdout/stderr
    KILLED = "killed"  # the grader stopped it on purpose


@dataclass(frozen=True)
class Exit:
    """How a runner process ended, and what it used."""

    reason: ExitReason
    returncode: int | None = None
    signal: int | None = None
    cpu_s: float = 0.0
    max_rss_mb: float = 0.0

    def describe(self) -> str:
        if self.signal is not None:
            try:
                name = signal.Signals(self.signal).name
            except ValueError:
                name = str(self.signal)
            return f"killed by {name}"
        return f"exit status {self.returncode}"


@dataclass
class Job:
    """One runner's world: a host directory it sees as its working directory.

    ``hash_seed``: the runner's PYTHONHASHSEED; None is the default, ``HASH_SEED``. A
    problem's tests ask for another one to check that results agree across processes (a
    resumed run, another data-parallel rank), as str hashes do not. Forks of a warm
    template share the template's: a launcher keeps a second template for
    ``OTHER_HASH_SEED``; a runner with any other hash seed of its own starts cold.
    """

    dir: Path
    limits: Limits = field(default_factory=Limits)
    device: str = "cpu"
    hash_seed: int | None = None

    def env(self) -> dict[str, str]:
        """What the job changes in the runner's environment."""
        return {} if self.hash_seed is None else {"PYTHONHASHSEED": str(self.hash_seed)}


class RunnerProcess:
    """A started runner: talk over ``channel``; ``kill()``; ``wait()`` for its :class:`Exit`."""

    def __init__(self, pid: int, channel: Channel, job: Job, inside: Path) -> None:
        self.pid = pid
        self.channel = channel
        self.job = job
        self.inside = inside  # where job.dir appears to the runner
        self.started = time.monotonic()
        self._output = bytearray()
        self.output_bytes = 0
        self._kill_reason: ExitReason | None = None
        self._exit: Exit | None = None
        self._done = threading.Event()
        self._lock = threading.Lock()
        # The read end of the output pipe, and a lock held while a chunk is read from it and
        # kept: whoever holds it sees every byte read so far in _output (see settle_output).
        self._out_fd: int | None = None
        self._out_lock = threading.Lock()
        # The channel's descriptor is closed once nobody can use it any more (see _finished).
        weakref.finalize(self, channel.close)

    # --- paths
    def path_inside(self, host_path: Path) -> str:
        return str(self.inside / Path(host_path).relative_to(self.job.dir))

    # --- output
    @property
    def output(self) -> str:
        return self._output.decode("utf-8", "replace")

    def settle_output(self) -> int:
        """Take whatever is already written to the pipe but not yet read by the watcher
        thread, and return how many bytes of output are kept. The runner flushes before it
        answers a call, so after an answer this includes everything the call printed."""
        with self._out_lock:
            fd = self._out_fd
            while fd is not None:
                try:
                    chunk = os.read(fd, 65536)
                except (BlockingIOError, InterruptedError):
                    break
                if not chunk:
                    break
                self._take_output(chunk)
            return len(self._output)

    def output_since(self, mark: int) -> str:
        """The output kept after byte ``mark`` (a value settle_output returned)."""
        with self._out_lock:
            return bytes(self._output[mark:]).decode("utf-8", "replace")

    def _take_output(self, chunk: bytes) -> None:
        limits = self.job.limits
        room = limits.keep_output_bytes - len(self._output)
        if room > 0:
            self._output += chunk[:room]
        self.output_bytes += len(chunk)
        if self.output_bytes > limits.output_bytes:
            self.kill(ExitReason.OUTPUT)

    # --- ending
    def kill(self, reason: ExitReason = ExitReason.KILLED) -> None:
        """Kill the whole process tree now. The first reason given is the one reported."""
        with self._lock:
            if self._kill_reason is None:
                self._kill_reason = ExitReason(reason)
        if not self._done.is_set():
            self._signal_tree(signal.SIGKILL)

    def pause(self, paused: bool, away_from: int | None = None) -> bool:
        """Stop (or resume) the runner and its descendants while the other side of a
        throughput comparison is timed, so that nothing it left running (a busy thread
        or process) takes the timing core from the reference; with ``away_from``, also
        keep them off that CPU. Returns whether they are known to be stopped (resumed).
        Here, without cgroups: SIGSTOP/SIGCONT to its process group, which a process that
        left the group, or that another one sends SIGCONT, escapes: not known, False. A
        runner in cgroups uses the freezer instead (sandbox.cgroup.GroupedRunner). A SIGSTOP
        lands when the runner next leaves the kernel: this waits (up to 50 ms) until it has,
        so that what it was finishing (unmapping what it freed after its answer) is not
        counted as running while paused (judge.throughput.paused reads its CPU next)."""
        if not self._done.is_set():
            self._signal_tree(signal.SIGSTOP if paused else signal.SIGCONT)
            if paused:
                _wait_stopped(self.pid, time.monotonic() + 0.05)
        return False

    def cpu_time_ns(self) -> int | None:
        """CPU time used so far by the runner and every process it started, as the kernel
        counts it (its cgroup); None where the launcher cannot tell. Here, without cgroups:
        the runner process's own CPU clock (all its threads, nanoseconds), which leaves out
        the processes it starts. The throughput check compares staging by it: the wall
        clock waits for a busy machine, by many times a short call (sandbox.cgroup's
        GroupedRunner counts the whole group instead)."""
        if self._done.is_set() or not sys.platform.startswith("linux"):
            return None
        try:
            # clock_getcpuclockid(pid) as Linux makes it: CPUCLOCK_SCHED of a process
            return time.clock_gettime_ns((~self.pid << 3) | 2)
        except OSError:
            return None

    def _signal_tree(self, sig: int) -> None:
        try:
            os.killpg(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def wait(self, timeout: float | None = None) -> Exit | None:
        self._done.wait(timeout)
        return self._exit

    @property
    def alive(self) -> bool:
        return not self._done.is_set()

    def _signal_of(self, status: int) -> tuple[int | None, int | None]:
        """(exit code, signal) from a wait status."""
        if os.WIFSIGNALED(status):
            return None, os.WTERMSIG(status)
        return os.WEXITSTATUS(status), None

    def _out_of_memory(self) -> bool:
        """Whether the kernel's OOM killer ended it (a launcher with cgroups knows)."""
        return False

    def oom_kills(self) -> int:
        """How many processes of the job (the runner or anything it started, DataLoader
        workers included) the kernel's OOM killer has ended so far; 0 where the launcher
        cannot tell (no cgroup)."""
        return 0

    def memory_bytes(self) -> int | None:
        """The memory the job holds now, every process of it together, as the kernel
        counts it (its memory cgroup); None where the launcher cannot tell."""
        return None

    def _release(self) -> None:
        """Free what the launcher holds for this process (called once, after it ended)."""

    def _finished(self, status: int, usage: Usage) -> None:
        cpu, rss = usage.cpu_s, usage.max_rss_mb
        code, sig = self._signal_of(status)
        reason = self._kill_reason
        if reason is None:
            if sig == signal.SIGKILL and self._out_of_memory():
                reason = ExitReason.MEMORY
            elif sig == signal.SIGXCPU or (sig == signal.SIGKILL
                                           and cpu >= self.job.limits.cpu_s * 0.98):
                reason = ExitReason.CPU
            elif sig is not None:
                reason = ExitReason.SIGNALED
            else:
                reason = ExitReason.EXITED
        self._exit = Exit(ExitReason(reason), code, sig, cpu, rss)
        # Shut the channel down rather than close it: the grader's thread may be in the
        # middle of a recv or a send on it, which must end in ChannelClosed (EOF, EPIPE), not
        # in EBADF on a descriptor that another thread closed (or worse, reused).
        try:
            self.channel.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            self._release()
        finally:
            self._done.set()


class Launcher(Protocol):
    isolation: str

    def start(self, job: Job) -> RunnerProcess: ...

    def release(self, folder: Path) -> None:
        """The grader is done with the job folder ``folder``: end whatever still runs on
        it and free what the launcher holds for it (the folder itself may stay, empty)."""

    def close(self) -> None: ...


HASH_SEED = 0  # every runner's PYTHONHASHSEED, unless its Job asks for another
OTHER_HASH_SEED = 1  # the other one a runner may start warm with (t.fresh(other_hashes=True))


def runner_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The runner's whole environment: nothing of the worker's leaks in."""
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": str(HASH_SEED),
        "PYTHONUNBUFFERED": "1",
    }
    env.update(extra or {})
    return env


def _apply_rlimits(limits: Limits, address_space: bool) -> None:
    """Lower the rlimits of the calling process (run in the child before exec or fork)."""

    def lower(res: int, value: int) -> None:
        _, hard = resource.getrlimit(res)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(res, (value, value))

    cpu = max(1, int(limits.cpu_s + 0.999))
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    # The soft limit sends SIGXCPU; the hard limit one second later is a SIGKILL.
    new_hard = cpu + 1 if hard == resource.RLIM_INFINITY else min(cpu + 1, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (min(cpu, new_hard), new_hard))
    lower(resource.RLIMIT_CORE, 0)
    lower(resource.RLIMIT_FSIZE, limits.file_mb * MiB)
    if address_space:
        lower(resource.RLIMIT_AS, limits.memory_mb * MiB)


class PlainLauncher:
    """No isolation: a child process with rlimits and a watchdog. For the learner's own
    machine and development only."""

    isolation = "none"

    def __init__(self, python: str | None = None, address_space_limit: bool = False) -> None:
        self.python = python or sys.executable
        self.address_space_limit = address_space_limit

    def start(self, job: Job) -> RunnerProcess:
        parent, child = channel_pair()
        limits = job.limits
        use_as = self.address_space_limit and job.device == "cpu"
        try:
            proc = subprocess.Popen(
                [self.python, "-m", "sandbox.runner", "--fd", str(child.fileno())],
                pass_fds=[child.fileno()],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                cwd=job.dir,
                env=runner_env({"PYTHONPATH": str(ROOT), "HOME": str(job.dir), **job.env()}),
                start_new_session=True,
                preexec_fn=lambda: _apply_rlimits(limits, use_as),
            )
        finally:
            child.close()
        runner = RunnerProcess(proc.pid, Channel(parent), job, job.dir)
        assert proc.stdout is not None
        watch(runner, proc.stdout.fileno(), lambda: _reap(proc))  # watch() dups the fd
        proc.stdout.close()
        # Popen must not try to reap it too; the watcher owns the pid from now on.
        proc.returncode = 0
        return runner

    def release(self, folder: Path) -> None:
        pass  # a plain folder: the grader removes it

    def close(self) -> None:
        pass


def _wait_stopped(pid: int, deadline: float) -> None:
    """Until the process is stopped (or gone, or the deadline passed)."""
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                state = f.read().rpartition(b")")[2].split()[0]
        except (OSError, IndexError):
            return
        if state in (b"T", b"t", b"Z", b"X"):
            return
        time.sleep(0.0002)


def _reap(proc: subprocess.Popen) -> tuple[int, Usage]:
    _, status, usage = os.wait4(proc.pid, 0)
    return status, Usage.of(usage)


def watch(runner: RunnerProcess, output_fd: int, reap: Callable[[], tuple[int, Usage]]) -> None:
    """Drain the runner's output, enforce its lifetime, reap it and record its Exit.

    ``reap`` blocks until the process has ended and returns its wait status and usage."""
    out_fd = os.dup(output_fd)
    lifetime = runner.job.limits.lifetime_s

    def drain() -> None:
        # Non-blocking reads under the runner's output lock, so settle_output can take what
        # is pending at any moment without a chunk being half-way between pipe and buffer.
        os.set_blocking(out_fd, False)
        runner._out_fd = out_fd
        poller = select.poll()
        poller.register(out_fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        try:
            while True:
                poller.poll()
                with runner._out_lock:
                    try:
                        chunk = os.read(out_fd, 65536)
                    except (BlockingIOError, InterruptedError):
                        continue
                    if not chunk:
                        return
                    runner._take_output(chunk)
        finally:
            with runner._out_lock:
                runner._out_fd = None
                os.close(out_fd)

    def wait() -> None:
        reader = threading.Thread(target=drain, daemon=True)
        reader.start()
        timer = threading.Timer(lifetime, runner.kill, args=(ExitReason.WALL,))
        timer.daemon = True
        timer.start()
        status, usage = reap()
        timer.cancel()
        # Descendants may still hold the pipe open; kill the group, then stop reading.
        runner._signal_tree(signal.SIGKILL)
        reader.join(timeout=2)
        runner._finished(status, usage)

    threading.Thread(target=wait, daemon=True, name=f"runner-{runner.pid}").start()
