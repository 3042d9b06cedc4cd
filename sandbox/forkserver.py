"""The warm template: torch imported once, one sandboxed child forked per job.

This process is itself inside bubblewrap (started by ``sandbox/template.py``): the slot's
unprivileged uid, its own user, pid, network, IPC, UTS and cgroup namespaces (no network
device at all), a read-only root holding only the interpreter, the libraries and this
package, a cleared environment, no_new_privs, and the *template* seccomp filter. Unlike a
job it keeps two capabilities — CAP_SYS_ADMIN and CAP_SETPCAP, valid only inside its own
user namespace — because it builds each job's namespaces; only our code runs with them.

Each job gets a pid namespace of its own, made ahead of time (a pool of *zygotes*, so that
the fork is not on the critical path)::

    template ─ unshare(CLONE_NEWPID); spawn the init; fork the runner; setns back
      ├─ init    pid 1 of the job's pid namespace: a tiny Python loop (``zygote.INIT``),
      │          exec'd without capabilities or descriptors; it only reaps orphans.
      │          Killing it kills the job.
      └─ runner  pid 2 to 65 (a random number of pids is used up first, see PID_SPREAD),
                 forked from this process (torch already imported), waits for a job,
                 then confines itself and serves it: see ``zygote.py``.

On a ``start`` request (with the job's channel, output and status descriptors) the template
hands them to a zygote, sends the host both pidfds ("P": the runner's, to put it in its
cgroups; the init's, to kill the job), and refills the pool when idle. It is the runner's
parent, outside every namespace of the job: it reaps the runner and reports its wait status
and rusage once no other process of the job is left (the init has no children: the runner's
descendants are reparented to it), then kills the init.

Traps (measured): torch must not start threads here (``OMP_NUM_THREADS=1`` before the
import, no computation), CUDA is never initialised here (CUDA jobs take the cold path), a
fork of this process costs 5–40 ms (page tables of ~600 MB of mappings; hence the pool),
and nothing secret is ever in this process's memory: every job sees a copy of it.
"""

from __future__ import annotations

import ctypes
import gc
import importlib
import json
import os
import random
import re
import select
import signal
import socket
import sys
import traceback
from dataclasses import dataclass
from typing import Any

from sandbox import linux
from sandbox.zygote import INIT, zygote_main

JOB_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")
MAX_REQUEST = 65536
POOL = 2  # zygotes ready ahead: a grading job starts two runners at once
REFILL_AFTER_S = 0.05
# A fresh process on a real machine has a pid of its own; every runner being pid 2 of its
# namespace would hide bugs that rely on it (a temporary file named after the pid, left by a
# killed run, is never overwritten by the next process). A zygote uses up a random number
# of pids below this first: each a posix_spawn of a missing program, ~0.1-0.5 ms (vfork: no
# page tables copied; glibc reaps the child), off the critical path like the fork itself.
PID_SPREAD = 64
NO_PROGRAM = "/nonexistent/pid-spacer"
def preload() -> dict[str, Any]:
    """Import what every job needs, so that forks start with it. No computation."""
    import torch
    import torch.nn
    import torch.nn.functional
    import torch.optim
    import torch.utils.data

    import sandbox.confine
    import sandbox.runner  # noqa: F401

    # Optional, but costly where a job would import them itself: numpy for fixtures that
    # need it (requires.numpy); torch._dynamo, which every torch.optim optimizer imports
    # when it is made (1-4 s here; it starts no thread and does not touch CUDA).
    for name in ("numpy", "torch._dynamo"):
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    gc.collect()
    # Objects made so far are never collected again: a child's collector then does not
    # write to (and so copy) the template's pages.
    gc.freeze()
    return {"torch": torch.__version__, "threads": len(os.listdir("/proc/self/task")),
            "pid": os.getpid()}


def _setns(fd: int, nstype: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, nstype) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns: {os.strerror(err)}")


def _send(fd: int, body: dict[str, Any]) -> None:
    try:
        os.write(fd, json.dumps(body).encode())
    except OSError:
        pass


@dataclass
class JobState:
    status: int  # the job's status socket (the template's copy)
    init: int  # the init's pid
    init_pidfd: int
    reported: bool = False
    pending: dict[str, Any] | None = None  # the runner's report, held until the job is gone


@dataclass
class Zygote:
    runner: int
    runner_pidfd: int
    init: int
    init_pidfd: int
    sock: socket.socket  # the template's end; the job goes through it


class Template:
    def __init__(self, control: socket.socket, job_bpf: bytes, pool: int = POOL) -> None:
        self.control = control
        self.job_bpf = job_bpf
        self.pool_size = pool
        self.own_pidns = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
        self.jobs: dict[int, JobState] = {}  # runner pid -> its job
        self.inits: dict[int, int] = {}  # init pid -> runner pid, for jobs
        self.pool: list[Zygote] = []
        self.init_argv = [sys.executable, "-I", "-S", "-c", INIT]
        # Nothing of ours in the init's environment but what the interpreter needs to start
        # (its libpython, where the layout moved it: see sandbox/layout.py).
        self.init_env = {k: v for k, v in os.environ.items() if k == "LD_LIBRARY_PATH"}
        self.wake_r, self.wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        # Ambient capabilities would survive the exec of the init: it needs none.
        linux.prctl(linux.PR_CAP_AMBIENT, linux.PR_CAP_AMBIENT_CLEAR_ALL)

    def fill(self) -> None:
        while len(self.pool) < self.pool_size:
            self.pool.append(self._zygote())

    def serve(self) -> None:
        """Answer requests until the host closes the control socket; refill when idle."""
        while True:
            # Refill only after a quiet moment: a fork takes the template 5-40 ms, and the
            # second runner of a grading job asks a few milliseconds after the first.
            idle = REFILL_AFTER_S if len(self.pool) < self.pool_size else 1.0
            ready, _, _ = select.select([self.control.fileno(), self.wake_r], [], [], idle)
            if self.wake_r in ready:
                while True:
                    try:
                        if not os.read(self.wake_r, 512):
                            break
                    except BlockingIOError:
                        break
            self._reap()
            if self.control.fileno() not in ready:
                if not ready and len(self.pool) < self.pool_size:
                    self.pool.append(self._zygote())
                continue
            try:
                data, fds, _, _ = socket.recv_fds(self.control, MAX_REQUEST, 4)
            except ConnectionResetError:  # the host closed with a message of ours unread
                return
            if not data:
                return
            for fd in fds:
                os.set_inheritable(fd, False)  # an init must not get them
            try:
                self._start(json.loads(data), fds)
            except Exception as e:
                if len(fds) == 3:
                    _send(fds[2], {"error": f"template: {type(e).__name__}: {e}"})
            finally:
                for fd in fds:
                    os.close(fd)

    # ------------------------------------------------------------------ jobs
    def _zygote(self) -> Zygote:
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        linux.unshare(linux.CLONE_NEWPID)
        try:
            # The first process made now is pid 1 of the new namespace, the next pid 2.
            init = os.posix_spawn(self.init_argv[0], self.init_argv, self.init_env, setsid=True,
                                  file_actions=[(os.POSIX_SPAWN_OPEN, fd, "/dev/null",
                                                 os.O_RDWR, 0) for fd in (0, 1, 2)])
            for _ in range(random.randrange(PID_SPREAD)):
                try:  # the child exists (a pid is taken), fails to exec and is reaped
                    os.posix_spawn(NO_PROGRAM, [NO_PROGRAM], {})
                except OSError:
                    pass
            runner = os.fork()
            if runner == 0:
                try:
                    zygote_main(theirs.fileno(), self.job_bpf)
                finally:
                    os._exit(1)
        finally:
            _setns(self.own_pidns, linux.CLONE_NEWPID)
        theirs.close()
        return Zygote(runner, os.pidfd_open(runner), init, os.pidfd_open(init), mine)

    def _start(self, request: dict[str, Any], fds: list[int]) -> None:
        if len(fds) != 3:
            return
        status = fds[2]
        job = str(request.get("job", ""))
        if not JOB_NAME.match(job) or job in (".", ".."):
            _send(status, {"error": f"bad job name {job!r}"})
            return
        z = self.pool.pop(0) if self.pool else self._zygote()
        keep = os.dup(status)
        os.set_inheritable(keep, False)
        self.jobs[z.runner] = JobState(keep, z.init, z.init_pidfd)
        self.inits[z.init] = z.runner
        try:
            body = {"job": job, "limits": dict(request.get("limits") or {})}
            socket.send_fds(z.sock, [json.dumps(body).encode()], fds)
            sock = socket.socket(fileno=os.dup(keep))
            try:
                socket.send_fds(sock, [b"P"], [z.init_pidfd, z.runner_pidfd])
            finally:
                sock.close()
        finally:
            z.sock.close()
            os.close(z.runner_pidfd)

    def _reap(self) -> None:
        while True:
            try:
                pid, wstatus, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid in self.jobs:
                state = self.jobs[pid]
                report = {"status": wstatus, "cpu_s": usage.ru_utime + usage.ru_stime,
                          "max_rss_kb": usage.ru_maxrss}
                if not _has_children(state.init):
                    # Nothing is left of the job but its init: report now.
                    self._report(state, report)
                else:
                    state.pending = report
                try:
                    signal.pidfd_send_signal(state.init_pidfd, signal.SIGKILL)
                except OSError:
                    pass
            elif pid in self.inits:
                # The whole pid namespace is gone with its init.
                state = self.jobs.pop(self.inits.pop(pid))
                if not state.reported:
                    self._report(state, state.pending or {"error": "the job's init died first"})
                os.close(state.status)
                os.close(state.init_pidfd)
            else:
                self._zygote_died(pid)

    def _report(self, state: JobState, report: dict[str, Any]) -> None:
        state.reported = True
        _send(state.status, report)

    def _zygote_died(self, pid: int) -> None:
        """A zygote (or its init) ended before it had a job: drop it, with its namespace."""
        for z in [z for z in self.pool if pid in (z.runner, z.init)]:
            self.pool.remove(z)
            for fd in (z.init_pidfd, z.runner_pidfd):
                try:
                    signal.pidfd_send_signal(fd, signal.SIGKILL)
                except OSError:
                    pass
                os.close(fd)
            z.sock.close()


def _has_children(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return bool(f.read().strip())
    except OSError:
        return True  # cannot tell: wait for the init to be gone


def main() -> None:
    """``python -m sandbox.forkserver CONTROL_FD`` (inside bubblewrap)."""
    control = socket.socket(fileno=int(sys.argv[1]))
    control.set_inheritable(False)  # the jobs' inits are exec'd: they must not get it
    init = json.loads(control.recv(MAX_REQUEST))
    job_bpf = bytes.fromhex(init["job_filter"])
    info = preload()
    template = Template(control, job_bpf)
    template.fill()
    control.send(json.dumps({"ready": True, **info}).encode())
    try:
        template.serve()
    except BaseException:
        traceback.print_exc()
        sys.exit(1)


if __name__ == "__main__":
    main()
