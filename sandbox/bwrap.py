"""The judge's sandbox: bubblewrap, as a dedicated unprivileged uid per worker slot.

:class:`BwrapLauncher` is the default launcher of ``python -m judge`` and of every worker.
Two ways to start a runner, both reported as ``"isolation": "bwrap"``:

* **cold** (CUDA jobs, a job with a hash seed of its own (``Job.hash_seed``: forks share
  the template's) other than ``OTHER_HASH_SEED``, for which a second template is started
  when first asked for, and wherever the warm path is unavailable): one bubblewrap per
  runner — ``setpriv`` to the slot uid (bwrap is never run as root: as root it would map
  the sandbox to uid 0), then ``bwrap`` with every namespace unshared (user, mount, pid,
  network, IPC, UTS, cgroup; no network device at all), ``--disable-userns``, all
  capabilities dropped, no_new_privs, the job seccomp filter, a cleared environment, a
  read-only root (``layout.py``), size-limited tmpfs ``/tmp`` and ``/dev/shm``, the job
  folder at ``/job``, and ``python -m sandbox.confine`` setting the rlimits before the
  runner imports torch.
* **warm** (CPU jobs): a template process (``forkserver.py``) started once per launcher
  inside the same kind of bubblewrap, with torch imported; per runner it forks a child that
  gets namespaces of its own (mount, pid, network, IPC, UTS, cgroup, and a user namespace),
  its own tmpfs ``/tmp``, ``/dev/shm`` and ``/job``, no capabilities, the same rlimits and
  seccomp filter. ~20 ms instead of ~1.2 s. See ``sandbox/README.md`` for the threat model.

Both put every runner in cgroups of its own (memory and pids, where the machine allows it),
kill its whole process tree on the wall clock, and map how it ended to an :class:`Exit`.
"""

from __future__ import annotations

import json
import logging
import os
import pwd
import shutil
import socket
import subprocess
import threading
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sandbox import cgroup, gpu, jobdirs, seccomp
from sandbox.channel import Channel, channel_pair
from sandbox.launch import (
    OTHER_HASH_SEED,
    ExitReason,
    Job,
    Limits,
    MiB,
    RunnerProcess,
    Usage,
    _reap,
    watch,
)
from sandbox.layout import Layout, LayoutError
from sandbox.layout import sweep as layout_sweep
from sandbox.template import SandboxError, TemplateProcess, WarmRunner, handshake

log = logging.getLogger("sandbox.bwrap")

UID_BASE = 61000  # slot N runs as uid and gid UID_BASE + N (scripts/install_sandbox.sh)
USER_PREFIX = "torchjudge"
MEMORY_SLACK_MB = 128  # page tables, socket buffers, the runner's own files
COLLECT_EVERY_S = 5.0
DEV_NODES = ("null", "zero", "full", "random", "urandom")
DEV_LINKS = (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
             ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2"))


class SandboxUnavailable(RuntimeError):
    """This machine cannot run the sandbox; the message says what to install or fix."""


def _memfd(data: bytes) -> int:
    fd = os.memfd_create("bwrap-data", 0)  # inheritable, for pass_fds
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


class ColdRunner(cgroup.GroupedRunner):
    """A runner in a bwrap process of its own. ``pid`` is the outer bwrap's."""

    def _signal_of(self, status: int) -> tuple[int | None, int | None]:
        code, sig = super()._signal_of(status)
        # bwrap exits with 128 + N when the sandboxed process was killed by signal N.
        if code is not None and 128 < code <= 128 + 64:
            return None, code - 128
        return code, sig

    def _signal_tree(self, sig: int) -> None:
        # Killing the outer bwrap kills the sandbox (--die-with-parent on its pid 1); the
        # cgroup catches anything else.
        super()._signal_tree(sig)
        if self.group is not None and sig == 9:
            self.group.kill()


class BwrapLauncher:
    """Runners in bubblewrap as uid ``UID_BASE + slot``; warm (forked) for CPU jobs."""

    isolation = "bwrap"

    def __init__(self, slot: int = 0, *, warm: bool = True, uid_base: int = UID_BASE) -> None:
        self.slot = slot
        self.bwrap = _check_host()
        self.uid = self.gid = uid_base + slot
        self._check_uid()
        self.applied: dict[str, Any] = {"isolation": self.isolation, "uid": self.uid}
        tag = f"{os.getpid()}-s{slot}-{id(self):x}"  # store and layers: see jobdirs.sweep
        jobdirs.sweep()
        layout_sweep()
        try:
            self.layout = Layout.build(self.uid, self.gid, tag)
        except LayoutError as e:
            raise SandboxUnavailable(str(e)) from None
        if self.layout.degraded:
            self._degraded("layout", self.layout.degraded)
        try:
            self._setup(tag, warm)
        except BaseException:
            self.close()
            raise
        log.info("sandbox: %s", json.dumps(self.applied))

    def _setup(self, tag: str, warm: bool) -> None:
        self.job_bpf = seccomp.job_filter()
        self.applied["seccomp"] = f"deny-list, {len(self.job_bpf) // 8} BPF instructions"
        self.hierarchy, why = cgroup.detect()
        if self.hierarchy is None:
            self._degraded("cgroup", f"no cgroup limits ({why}): memory is limited by "
                                     "RLIMIT_AS only (CUDA jobs: not at all), processes by "
                                     "RLIMIT_NPROC only")
        else:
            cgroup.sweep(self.hierarchy)
            self.applied["cgroup"] = self.hierarchy.describe()
        self.jobdirs = jobdirs.JobDirs(tag, self.uid, self.gid)
        self.gpus = gpu.devices()
        self.leases = gpu.GpuLeases(self.gpus)
        self.applied["gpus"] = [g.name or g.node for g in self.gpus]
        self._probe()
        self.lock = threading.Lock()
        self.count = 0
        self.runners: weakref.WeakSet[RunnerProcess] = weakref.WeakSet()
        self.template: TemplateProcess | None = None
        # the template of OTHER_HASH_SEED: started when a job first asks for it
        self.other_template: TemplateProcess | None = None
        self.applied["warm"] = warm
        if warm:
            self.template = self._start_template()
        self._closed = threading.Event()
        threading.Thread(target=self._collector, daemon=True, name="jobdirs-gc").start()

    # ------------------------------------------------------------------ setup
    def _degraded(self, key: str, why: str) -> None:
        log.warning("SANDBOX DEGRADED: %s", why)
        self.applied.setdefault("degraded", {})[key] = why

    def _check_uid(self) -> None:
        try:
            name = pwd.getpwuid(self.uid).pw_name
        except KeyError:
            log.warning("uid %d has no user (run scripts/install_sandbox.sh): using it anyway",
                        self.uid)
            return
        if not name.startswith(USER_PREFIX):
            raise SandboxUnavailable(f"uid {self.uid} belongs to {name!r}, not a sandbox user: "
                                     f"pick another slot or uid base")

    def _drop(self) -> list[str]:
        """The command prefix that runs what follows as the slot uid."""
        return ["setpriv", f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups",
                "--inh-caps=-all", "--bounding-set=-all", "--"]

    def _common(self, dev: bool = True, env: dict[str, str] | None = None) -> list[str]:
        """Options both kinds of sandbox share. ``dev``: bwrap's own /dev, with a devpts;
        without it, a minimal /dev of the usual nodes — which keeps bwrap from nesting a
        second user namespace (it needs uid 0 to mount devpts), so that the template's
        capabilities cover its own pid namespace (see forkserver.py)."""
        args = [self.bwrap or "bwrap", "--unshare-all", "--unshare-user", "--uid",
                str(self.uid), "--gid", str(self.gid), "--hostname", "sandbox",
                "--die-with-parent", "--new-session", *self.layout.env_args(env),
                *self.layout.root_args(), "--proc", "/proc"]
        if dev:
            return [*args, "--dev", "/dev"]
        args += ["--size", str(MiB), "--tmpfs", "/dev"]
        for node in DEV_NODES:
            args += ["--dev-bind", f"/dev/{node}", f"/dev/{node}"]
        for name, target in DEV_LINKS:
            args += ["--symlink", target, f"/dev/{name}"]
        return args

    def _probe(self) -> None:
        """Run ``true`` in a minimal sandbox: fail now, with bwrap's words, if we cannot."""
        argv = [*self._drop(), *self._common(), "--remount-ro", "/", "--", "/bin/true"]
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=30)
        if done.returncode != 0:
            raise SandboxUnavailable("bubblewrap cannot create a sandbox here: "
                                     + done.stderr.decode(errors="replace").strip()
                                     + " (user namespaces disabled? inside Docker, allow "
                                       "unshare/clone in its seccomp profile)")

    def _start_template(self, hash_seed: int | None = None) -> TemplateProcess:
        host, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        bpf = _memfd(seccomp.template_filter())
        env = None if hash_seed is None else {"PYTHONHASHSEED": str(hash_seed)}
        argv = [*self._drop(), *self._common(dev=False, env=env), "--cap-add", "CAP_SYS_ADMIN",
                "--cap-add", "CAP_SETPCAP", "--size", str(MiB), "--tmpfs", "/tmp",
                "--dir", "/dev/shm", "--remount-ro", "/dev",
                "--ro-bind", str(self.jobdirs.store), "/jobs", "--dir", "/job",
                "--seccomp", str(bpf), "--remount-ro", "/", "--",
                self.layout.python, "-m", "sandbox.forkserver", str(child.fileno())]
        try:
            return TemplateProcess(argv, [child.fileno(), bpf], host, self.job_bpf)
        finally:
            child.close()
            os.close(bpf)

    # ------------------------------------------------------------------ runners
    def start(self, job: Job) -> RunnerProcess:
        """Start a runner for ``job``. Raises SandboxError when the sandbox cannot be set up
        (the judge's fault: the grader reports internal_error)."""
        self.jobdirs.collect()
        if (job.device == "cuda" or self.template is None
                or job.hash_seed not in (None, OTHER_HASH_SEED)):
            runner = self._start_cold(job)
        else:
            try:
                runner = self._start_warm(job)
            except SandboxError:
                if self._template(job.hash_seed).alive:
                    raise
                self._replace_template(job.hash_seed)
                runner = self._start_warm(job)
        self.runners.add(runner)
        return runner

    def _template(self, hash_seed: int | None) -> TemplateProcess:
        """The warm template for ``hash_seed`` (None: the default), started if need be."""
        if hash_seed is None:
            assert self.template is not None
            return self.template
        with self.lock:
            if self.other_template is None:
                log.info("starting the template of PYTHONHASHSEED=%s", hash_seed)
                self.other_template = self._start_template(hash_seed)
            return self.other_template

    def _replace_template(self, hash_seed: int | None) -> None:
        with self.lock:
            old = self.template if hash_seed is None else self.other_template
            if old is None or old.alive:  # another thread may have replaced it
                return
            log.warning("the warm template died (exit %s); starting a new one",
                        old.proc.returncode)
            old.close()
            new = self._start_template(hash_seed)
            if hash_seed is None:
                self.template = new
            else:
                self.other_template = new

    def _group(self, limits: Limits) -> cgroup.Group | None:
        if self.hierarchy is None:
            return None
        with self.lock:
            self.count += 1
            name = f"{os.getpid()}-{self.slot}-{id(self):x}-{self.count}"
        memory = (limits.memory_mb + limits.tmp_mb + limits.shm_mb + limits.job_mb
                  + MEMORY_SLACK_MB) * MiB
        try:
            return cgroup.Group(self.hierarchy, name, memory, limits.nproc + 8)
        except OSError as e:
            raise SandboxError(f"cannot create the runner's cgroup: {e}") from None

    def _job_source(self, job: Job) -> tuple[str, str]:
        """(name in the store, host path to bind at /job)."""
        try:
            name = self.jobdirs.ensure(job.dir, job.limits.job_mb)
        except OSError as e:
            raise SandboxError(f"cannot prepare the job folder {job.dir}: {e}") from None
        return name, str(self.jobdirs.store_path(name))

    def _released(self, job: Job) -> Callable[[], None]:
        """Count a runner on ``job``'s folder; the returned function uncounts it."""
        self.jobdirs.attach(job.dir, +1)
        return lambda: self.jobdirs.attach(job.dir, -1)

    def _start_warm(self, job: Job) -> RunnerProcess:
        template = self._template(job.hash_seed)
        name, _ = self._job_source(job)
        group = self._group(job.limits)
        parent, child = channel_pair()
        out_r, out_w = os.pipe()
        status, status_job = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            try:
                template.request({"job": name, "limits": job.limits.rlimits(True)},
                                      [child.fileno(), out_w, status_job.fileno()])
            finally:
                child.close()
                os.close(out_w)
                status_job.close()
            pidfd = handshake(status, group)
        except BaseException:
            for closer in (parent.close, status.close, lambda: os.close(out_r)):
                closer()
            if group is not None:
                group.remove()
            raise
        runner = WarmRunner(pidfd, status, Channel(parent), job, group, self._released(job))
        watch(runner, out_r, runner.reap)
        os.close(out_r)  # watch() reads from its own duplicate
        return runner

    def _start_cold(self, job: Job) -> RunnerProcess:
        limits = job.limits
        cuda = job.device == "cuda"
        lease = self.leases.acquire(gpu.job_key(job.dir)) if cuda and self.gpus else None
        try:
            _, source = self._job_source(job)
            group = self._group(limits)
        except BaseException:
            if lease:
                lease.release()
            raise
        parent, child = channel_pair()
        bpf = _memfd(self.job_bpf)
        args = [*self._common(env=job.env()), "--disable-userns", "--cap-drop", "ALL"]
        if lease is not None:
            for node in gpu.device_nodes(lease.gpu):
                args += ["--dev-bind", node, node]
            args += ["--ro-bind", "/sys", "/sys"]  # cuInit reads the PCI topology there
        args += ["--size", str(limits.tmp_mb * MiB), "--tmpfs", "/tmp",
                 "--size", str(limits.shm_mb * MiB), "--tmpfs", "/dev/shm",
                 "--remount-ro", "/dev", "--bind", source, "/job", "--chdir", "/job",
                 "--seccomp", str(bpf), "--remount-ro", "/", "--",
                 self.layout.python, "-m", "sandbox.confine",
                 "--limits", json.dumps(limits.rlimits(address_space=not cuda)),
                 "--fd", str(child.fileno())]
        prefix: list[str] = []
        if group is not None:
            # Join the runner's cgroups before anything is started, then become the slot uid.
            prefix = ["/bin/sh", "-c", 'for f in "$@"; do [ "$f" = -- ] && break; '
                      'echo $$ > "$f" || exit 125; shift; done; shift; exec "$@"', "sh",
                      *(str(f / "cgroup.procs") for f in group.folders), "--"]
        try:
            proc = subprocess.Popen([*prefix, *self._drop(), *args],
                                    pass_fds=[child.fileno(), bpf], stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        except OSError as e:
            parent.close()
            if group is not None:
                group.remove()
            if lease:
                lease.release()
            raise SandboxError(f"cannot start bwrap: {e}") from None
        finally:
            child.close()
            os.close(bpf)
        released = self._released(job)

        def release() -> None:
            released()
            if lease is not None:
                lease.release()

        runner = ColdRunner(proc.pid, Channel(parent), job, group, release)
        assert proc.stdout is not None
        watch(runner, proc.stdout.fileno(), lambda: _reap(proc))
        proc.stdout.close()
        proc.returncode = 0  # the watcher owns the pid: Popen must not reap it too
        return runner

    # ------------------------------------------------------------------ the end
    def release(self, folder: Path) -> None:
        """The grader is done with ``folder``: kill any runner still on it, then unmount
        its tmpfs, which frees all it holds at once (however deep a tree the job left),
        and remove the emptied host folder."""
        folder = Path(os.path.abspath(folder))
        for runner in list(self.runners):
            if Path(os.path.abspath(runner.job.dir)) == folder and runner.alive:
                runner.kill(ExitReason.KILLED)
                runner.wait(5)
        self.jobdirs.release(folder)

    def _collector(self) -> None:
        while not self._closed.wait(COLLECT_EVERY_S):
            try:
                self.jobdirs.collect()
            except Exception:
                log.exception("releasing job folders failed")

    def close(self) -> None:
        """Kill what still runs, stop the template, unmount the job folders and layers."""
        if hasattr(self, "_closed"):
            self._closed.set()
        for runner in list(getattr(self, "runners", ())):
            runner.kill(ExitReason.KILLED)
            runner.wait(5)
        for attr in ("template", "other_template"):
            template = getattr(self, attr, None)
            if template is not None:
                template.close()
                setattr(self, attr, None)
        if hasattr(self, "jobdirs"):
            self.jobdirs.close()
        self.layout.close()


def _check_host() -> str:
    """bwrap's path, once bubblewrap, libseccomp and root are known to be there."""
    path = shutil.which("bwrap")
    if path is None:
        raise SandboxUnavailable("bubblewrap is not installed (run scripts/install_sandbox.sh"
                                 " or apt-get install bubblewrap)")
    if not seccomp.available():
        raise SandboxUnavailable("libseccomp is not installed (apt-get install libseccomp2)")
    if os.geteuid() != 0:
        # Switching to the slot's uid, mounting job folders and making cgroups need root.
        raise SandboxUnavailable("the sandbox must be started as root (it runs each "
                                 "submission as a dedicated unprivileged uid)")
    return path


def slot_from_env(default: int = 0) -> int:
    """``JUDGE_SANDBOX_SLOT`` (a worker's slot number), or ``default``."""
    value = os.environ.get("JUDGE_SANDBOX_SLOT", "")
    return int(value) if value.isdigit() else default


__all__ = ["BwrapLauncher", "SandboxError", "SandboxUnavailable", "Usage", "slot_from_env"]
