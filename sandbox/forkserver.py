"""The warm template: torch imported once, one sandboxed child forked per job.

This process is itself inside bubblewrap (started by ``sandbox/template.py``): the slot's
unprivileged uid, its own user, pid, network, IPC, UTS and cgroup namespaces (no network
device at all), a read-only root holding only the interpreter, the libraries and this
package, a cleared environment, no_new_privs, and the *template* seccomp filter. Unlike a
job it keeps two capabilities — CAP_SYS_ADMIN and CAP_SETPCAP, valid only inside its own
user namespace — because it builds each job's namespaces; only our code runs with them.

Per job (a ``start`` request from the host, with three file descriptors)::

    template ─ unshare(CLONE_NEWPID); spawn the init; fork the runner; setns back
      ├─ init    pid 1 of the job's pid namespace: a tiny Python loop (``INIT``), exec'd
      │          without capabilities; it only reaps orphans. Killing it kills the job.
      └─ runner  pid 2, forked from this process (torch already imported): a session of
                 its own (killpg(0) must not reach the template), unshares
                 mount, network, IPC, UTS and cgroup namespaces, mounts a fresh /proc,
                 tmpfs /tmp and /dev/shm and its job folder at /job, covers /jobs, waits
                 for the host's "go" (it is in its cgroups by then), then confine_job()
                 (own user namespace, no capabilities, rlimits, job seccomp filter) and
                 the submission.

The template is the runner's parent, outside every namespace of the job: it reaps the
runner, kills the init, reaps that, and only then sends the host the runner's wait status
and rusage — so when the host has the report, no process of the job is left. The host
gets both pidfds first ("P"): the runner's to put it in its cgroups, the init's to kill.

Traps (measured): torch must not start threads here (``OMP_NUM_THREADS=1`` before the
import, no computation), CUDA is never initialised here (CUDA jobs take the cold path),
and nothing secret is ever in this process's memory: every job sees a copy of it.
"""

from __future__ import annotations

import ctypes
import fcntl
import gc
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

JOB_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")
MAX_REQUEST = 65536
# The job's init (pid 1 of its pid namespace): reap whatever is reparented to it, forever.
# As pid 1 it ignores every signal sent from inside the namespace (it has no handlers), so
# the job cannot end it; the template kills it from outside once the runner has ended, and
# if the template dies its whole pid namespace, this one included, goes with it.
INIT = """\
import os, signal
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGCHLD])
while True:
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass
    signal.sigtimedwait([signal.SIGCHLD], 60)
"""


def preload() -> dict[str, Any]:
    """Import what every job needs, so that forks start with it. No computation."""
    import torch
    import torch.nn
    import torch.nn.functional
    import torch.utils.data

    import sandbox.confine
    import sandbox.runner  # noqa: F401

    try:
        import numpy  # noqa: F401
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
    report: dict[str, Any] | None = None
    init_done: bool = False


class Template:
    def __init__(self, control: socket.socket, job_bpf: bytes) -> None:
        self.control = control
        self.job_bpf = job_bpf
        self.own_pidns = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
        self.runners: dict[int, JobState] = {}  # runner pid -> its job
        self.inits: dict[int, int] = {}  # init pid -> runner pid
        self.init_argv = [sys.executable, "-I", "-S", "-c", INIT]
        self.wake_r, self.wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        # Ambient capabilities would survive the exec of the init: it needs none.
        linux.prctl(linux.PR_CAP_AMBIENT, linux.PR_CAP_AMBIENT_CLEAR_ALL)

    def serve(self) -> None:
        """Answer requests until the host closes the control socket."""
        while True:
            ready, _, _ = select.select([self.control.fileno(), self.wake_r], [], [], 1.0)
            if self.wake_r in ready:
                while True:
                    try:
                        if not os.read(self.wake_r, 512):
                            break
                    except BlockingIOError:
                        break
            self._reap()
            if self.control.fileno() not in ready:
                continue
            data, fds, _, _ = socket.recv_fds(self.control, MAX_REQUEST, 4)
            if not data:
                return
            for fd in fds:
                os.set_inheritable(fd, False)  # the init must not get them
            try:
                self._start(json.loads(data), fds)
            except Exception as e:
                if len(fds) == 3:
                    _send(fds[2], {"error": f"template: {type(e).__name__}: {e}"})
            finally:
                for fd in fds:
                    os.close(fd)

    # ------------------------------------------------------------------ jobs
    def _start(self, request: dict[str, Any], fds: list[int]) -> None:
        if len(fds) != 3:
            return
        channel, output, status = fds
        job = str(request.get("job", ""))
        if not JOB_NAME.match(job) or job in (".", ".."):
            _send(status, {"error": f"bad job name {job!r}"})
            return
        limits = dict(request.get("limits") or {})
        linux.unshare(linux.CLONE_NEWPID)
        try:
            # The first process made now is pid 1 of the new namespace, the next pid 2.
            init = os.posix_spawn(self.init_argv[0], self.init_argv, {}, setsid=True,
                                  file_actions=[(os.POSIX_SPAWN_OPEN, fd, "/dev/null",
                                                 os.O_RDWR, 0) for fd in (0, 1, 2)])
            runner = os.fork()
            if runner == 0:
                try:
                    # A session and process group of its own: killpg(0) from the job must
                    # not reach the template and the other jobs, which share our uid.
                    os.setsid()
                    self._job(job, limits, channel, output, status)
                finally:
                    os._exit(1)
        finally:
            _setns(self.own_pidns, linux.CLONE_NEWPID)
        init_pidfd = os.pidfd_open(init)
        runner_pidfd = os.pidfd_open(runner)
        keep = os.dup(status)
        os.set_inheritable(keep, False)
        self.runners[runner] = JobState(keep, init, init_pidfd)
        self.inits[init] = runner
        sock = socket.socket(fileno=os.dup(keep))
        try:
            socket.send_fds(sock, [b"P"], [init_pidfd, runner_pidfd])
        finally:
            sock.close()
            os.close(runner_pidfd)

    def _reap(self) -> None:
        while True:
            try:
                pid, wstatus, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid in self.runners:
                state = self.runners[pid]
                state.report = {"status": wstatus, "cpu_s": usage.ru_utime + usage.ru_stime,
                                "max_rss_kb": usage.ru_maxrss}
                try:
                    signal.pidfd_send_signal(state.init_pidfd, signal.SIGKILL)
                except OSError:
                    pass
                self._finish(pid)
            elif pid in self.inits:
                runner = self.inits.pop(pid)
                self.runners[runner].init_done = True
                self._finish(runner)

    def _finish(self, runner: int) -> None:
        """Report once both the runner and the init are gone (and so the whole job)."""
        state = self.runners[runner]
        if state.report is None or not state.init_done:
            return
        del self.runners[runner]
        _send(state.status, state.report)
        os.close(state.status)
        os.close(state.init_pidfd)

    # ------------------------------------------------------------------ the runner
    def _job(self, job: str, limits: dict[str, Any], channel: int, output: int,
             status: int) -> None:
        """In the forked runner: build its namespaces, wait for "go", confine, serve."""
        try:
            linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            linux.unshare(linux.CLONE_NEWNS | linux.CLONE_NEWNET | linux.CLONE_NEWIPC
                          | linux.CLONE_NEWUTS)
            _mount_job(job, limits)
            # Move our three descriptors above the ones they replace, then into place: the
            # channel on 3, the output on 1 and 2, /dev/null on 0; close everything else.
            channel, output, status = (fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
                                       for fd in (channel, output, status))
            os.dup2(output, 1)
            os.dup2(output, 2)
            os.dup2(channel, 3, inheritable=False)
            null = os.open("/dev/null", os.O_RDONLY)
            if null != 0:
                os.dup2(null, 0)
            _close_fds({0, 1, 2, 3, status})
            # Wait until the host has put us in our cgroups: we start nothing before.
            sock = socket.socket(fileno=os.dup(status))
            sock.settimeout(60)
            if sock.recv(16) != b"G":
                os._exit(1)
            sock.close()
            # Only now: a cgroup namespace is rooted at the cgroup we are in when we make it.
            linux.unshare(linux.CLONE_NEWCGROUP)
            os.chdir("/job")
            from sandbox.confine import confine_job

            confine_job(limits, self.job_bpf)
            # A fork shares the template's random state; a fresh process would not.
            random.seed()
            numpy_random = sys.modules.get("numpy.random")  # imported lazily: only if here
            if numpy_random is not None:
                numpy_random.seed()
        except BaseException as e:
            _send(status, {"error": f"job setup: {type(e).__name__}: {e}"})
            os._exit(1)
        os.write(status, b"S")
        os.close(status)
        from sandbox.runner import serve

        try:
            serve(socket.socket(fileno=3))
        except BaseException:
            traceback.print_exc()
            sys.stderr.flush()
            os._exit(1)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def _close_fds(keep: set[int]) -> None:
    for fd in map(int, os.listdir("/proc/self/fd")):
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def _mount_job(job: str, limits: dict[str, Any]) -> None:
    """The job's own view of the file system (in its fresh mount namespace)."""
    nosuid = linux.MS_NOSUID | linux.MS_NODEV
    linux.mount(None, "/", None, linux.MS_REC | linux.MS_PRIVATE)
    linux.mount("proc", "/proc", "proc", nosuid | linux.MS_NOEXEC)
    for sub in ("sys", "sysrq-trigger", "irq", "bus"):
        path = f"/proc/{sub}"
        if os.path.exists(path):  # read-only, as bubblewrap leaves its own /proc
            linux.mount(path, path, None, linux.MS_BIND | linux.MS_REC)
            linux.mount(None, path, None,
                        linux.MS_BIND | linux.MS_REMOUNT | linux.MS_RDONLY | nosuid)
    linux.mount("tmpfs", "/tmp", "tmpfs", nosuid,
                f"size={int(limits['tmp_mb'])}m,nr_inodes=16384,mode=1777")
    linux.mount("tmpfs", "/dev/shm", "tmpfs", nosuid | linux.MS_NOEXEC,
                f"size={int(limits['shm_mb'])}m,nr_inodes=1024,mode=1777")
    source = f"/jobs/{job}"
    if os.path.islink(source) or not os.path.isdir(source):
        raise FileNotFoundError(f"no job folder {source}")
    linux.mount(source, "/job", None, linux.MS_BIND)
    linux.mount(None, "/job", None, linux.MS_BIND | linux.MS_REMOUNT | nosuid)
    # Every other job's folder is under /jobs: detach the whole store from this namespace
    # (not even its mount table lists them then), and the template's /proc and /tmp under
    # ours.
    linux.umount("/jobs")


def main() -> None:
    """``python -m sandbox.forkserver CONTROL_FD`` (inside bubblewrap)."""
    control = socket.socket(fileno=int(sys.argv[1]))
    control.set_inheritable(False)  # the jobs' inits are exec'd: they must not get it
    init = json.loads(control.recv(MAX_REQUEST))
    job_bpf = bytes.fromhex(init["job_filter"])
    info = preload()
    template = Template(control, job_bpf)
    control.send(json.dumps({"ready": True, **info}).encode())
    try:
        template.serve()
    except BaseException:
        traceback.print_exc()
        sys.exit(1)


if __name__ == "__main__":
    main()
