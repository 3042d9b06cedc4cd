"""A job process of the warm template, from its fork to the submission.

Forked ahead of time by the template (``forkserver.py``) into a pid namespace of its own,
a *zygote* waits for a job; what it does then is the whole confinement of a warm job, in
this order (nothing of the learner's runs before the end of :func:`run_job`):

1. right after the fork: die with the template, a session of its own (``killpg(0)`` from
   the job must not reach the template or the other jobs, which share its uid), network,
   IPC and UTS namespaces of its own, every inherited descriptor closed;
2. on its job: a mount namespace of its own with a fresh ``/proc``, size-limited tmpfs
   ``/tmp`` and ``/dev/shm``, the job folder at ``/job`` and the store of all job folders
   detached; stdin ``/dev/null``, stdout and stderr the output pipe, the channel on fd 3;
3. waits for the host's "go" (the host has put it in its cgroups), then a cgroup namespace
   rooted there, and :func:`sandbox.confine.confine_job` (own user namespace, no
   capabilities, no_new_privs, rlimits, the job's seccomp filter);
4. says "S" on the status socket, closes it, and serves the grader.

Any failure before step 4 is reported on the status socket as ``{"error": ...}``: the
judge's fault, which the host turns into a SandboxError, never into a verdict.
"""

from __future__ import annotations

import fcntl
import json
import os
import random
import signal
import socket
import sys
import traceback
from typing import Any, NoReturn

from sandbox import linux

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


def _send(fd: int, body: dict[str, Any]) -> None:
    try:
        os.write(fd, json.dumps(body).encode())
    except OSError:
        pass


def close_fds(keep: set[int]) -> None:
    for fd in map(int, os.listdir("/proc/self/fd")):
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def zygote_main(sock: int, job_bpf: bytes) -> NoReturn:
    """The forked child's whole life (it never returns)."""
    try:
        linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)
        os.setsid()
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        linux.unshare(linux.CLONE_NEWNET | linux.CLONE_NEWIPC | linux.CLONE_NEWUTS)
        close_fds({0, 1, 2, sock})
        # Blocks until the template gives us a job, or closes the socket (it is gone).
        data, fds, _, _ = socket.recv_fds(socket.socket(fileno=sock), 65536, 3)
        if not data or len(fds) != 3:
            os._exit(1)
        request = json.loads(data)
    except BaseException:
        os._exit(1)
    run_job(request["job"], request["limits"], *fds, job_bpf=job_bpf)


def run_job(job: str, limits: dict[str, Any], channel: int, output: int, status: int, *,
            job_bpf: bytes) -> NoReturn:
    try:
        linux.unshare(linux.CLONE_NEWNS)
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
        close_fds({0, 1, 2, 3, status})
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

        confine_job(limits, job_bpf)
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
    # (its mount table does not even list them then).
    linux.umount("/jobs")
