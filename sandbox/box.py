"""The grader box: a confined process for a problem package's own code.

A package that did not ship with the judge (an upload) has its ``tests.py`` run here rather
than in the worker (root, holding the worker's token, with every problem readable): the
import, the case functions, input generation, the comparisons and the clock. The box is
started like a cold runner — bubblewrap with every namespace unshared (no network device),
``--disable-userns``, no capabilities, no_new_privs, the job seccomp filter (no socket but
``AF_UNIX``), a cleared environment, the launcher's read-only root, rlimits and cgroups of
its own — with three differences:

* it runs as a uid of its own per slot, ``BOX_UID_BASE + slot`` (``torchjudgebox<N>``,
  scripts/install_sandbox.sh), never the slot's runner uid, so that no runner can signal,
  trace or read it; its gid is the slot's, which the ACL of every job folder of the slot
  grants (``jobdirs.JobDirs._share``): it writes its runners' ``submission.py``, fixture and
  data files there, as the grader does;
* it sees what the caller binds: the judge's code (a snapshot at ``/opt/torch-judge/judge``),
  the package (read-only) and the judging's job folders;
* it starts no runner itself: it asks its parent (``judge/graderbox.py``) over ``sock``,
  which starts them with this launcher and passes each one's channel back as a descriptor.

The box is a :class:`~sandbox.bwrap.ColdRunner` to its parent: its output is drained and
capped, its lifetime enforced, its whole tree killed and its cgroup removed like a runner's.
"""

from __future__ import annotations

import json
import os
import pwd
import socket
import subprocess
import threading
import weakref
from pathlib import Path

from sandbox.bwrap import BwrapLauncher, ColdRunner, SandboxError, _memfd
from sandbox.channel import Channel
from sandbox.launch import Job, Limits, MiB, RunnerProcess, _reap, watch

BOX_UID_BASE = 62000  # slot N's grader box runs as uid BOX_UID_BASE + N
BOX_USER_PREFIX = "torchjudgebox"
INSIDE_CODE = "/opt/torch-judge"

_snapshot_lock = threading.Lock()
_snapshots: weakref.WeakKeyDictionary[BwrapLauncher, dict[str, Path]] = (
    weakref.WeakKeyDictionary())


def box_uid(launcher: BwrapLauncher) -> int:
    """The box's uid for the launcher's slot; SandboxError if it belongs to someone else."""
    uid = BOX_UID_BASE + launcher.slot
    try:
        name = pwd.getpwuid(uid).pw_name
    except KeyError:
        return uid  # no user (install_sandbox.sh not run again): an unused uid still works
    if not name.startswith(BOX_USER_PREFIX):
        raise SandboxError(f"uid {uid} belongs to {name!r}, not a grader-box user")
    return uid


def code_snapshot(launcher: BwrapLauncher, name: str, folder: Path) -> Path:
    """A read-only copy of ``folder``'s Python files on the launcher's layers, made once
    (``judge check`` judges two files at once: two boxes may start together)."""
    with _snapshot_lock:
        made = _snapshots.setdefault(launcher, {})
        if name not in made:
            layers = launcher.layout.layers
            if layers is None:
                raise SandboxError("the launcher is closed")
            made[name] = layers.snapshot(f"box-{name}", folder)
        return made[name]


def start_box(launcher: BwrapLauncher, *, module: str, args: list[str],
              link: tuple[socket.socket, socket.socket], binds: list[tuple[Path, str, bool]],
              limits: Limits, folder: Path) -> RunnerProcess:
    """Start ``python -m module --fd N --limits JSON *args`` in a grader box of
    ``launcher``'s slot. ``link``: (our end, the box's end) of a socket pair; the box's end
    is passed in as descriptor N (the caller closes its copy), ours stands in for the box's
    channel, shut down when it ends. ``binds``: (host path, inside path, writable).
    ``folder``: the judging's folder (the box's Job.dir)."""
    ours, sock = link
    uid = box_uid(launcher)
    layout = launcher.layout
    job = Job(folder, limits)
    group = launcher._group(limits)
    bpf = _memfd(launcher.job_bpf)
    argv = [launcher.bwrap, "--unshare-all", "--unshare-user", "--uid", str(uid),
            "--gid", str(launcher.gid), "--hostname", "sandbox", "--die-with-parent",
            "--new-session", *layout.env_args(), *layout.root_args(), "--proc", "/proc",
            "--dev", "/dev", "--disable-userns", "--cap-drop", "ALL",
            "--size", str(limits.tmp_mb * MiB), "--tmpfs", "/tmp",
            "--size", str(limits.shm_mb * MiB), "--tmpfs", "/dev/shm", "--remount-ro", "/dev"]
    for host, inside, writable in binds:
        argv += ["--bind" if writable else "--ro-bind", str(host), inside]
    argv += ["--chdir", "/tmp", "--seccomp", str(bpf), "--remount-ro", "/", "--",
             layout.python, "-m", module, "--fd", str(sock.fileno()),
             # Without cgroups (degraded) its address space is limited instead.
             "--limits", json.dumps(limits.rlimits(address_space=group is None)), *args]
    drop = ["setpriv", f"--reuid={uid}", f"--regid={launcher.gid}", "--clear-groups",
            "--inh-caps=-all", "--bounding-set=-all", "--"]
    prefix: list[str] = []
    if group is not None:
        prefix = ["/bin/sh", "-c", 'for f in "$@"; do [ "$f" = -- ] && break; '
                  'echo $$ > "$f" || exit 125; shift; done; shift; exec "$@"', "sh",
                  *(str(f / "cgroup.procs") for f in group.folders), "--"]
    try:
        proc = subprocess.Popen([*prefix, *drop, *argv], pass_fds=[sock.fileno(), bpf],
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, start_new_session=True)
    except OSError as e:
        if group is not None:
            group.remove()
        raise SandboxError(f"cannot start the grader box: {e}") from None
    finally:
        os.close(bpf)
    # Our end of the link stands in for a runner's channel: shut down when the box ends,
    # so that whoever reads from it sees the end at once.
    box = ColdRunner(proc.pid, Channel(ours), job, group, lambda: None)
    assert proc.stdout is not None
    watch(box, proc.stdout.fileno(), lambda: _reap(proc))
    proc.stdout.close()
    proc.returncode = 0  # the watcher owns the pid
    return box
