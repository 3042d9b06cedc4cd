"""One cgroup per runner process: a memory limit, a process limit, an OOM count, a kill.

Both hierarchies are handled: cgroup v1 (a ``memory`` and a ``pids`` controller mounted
separately, as on these Debian VMs) and cgroup v2 (one unified tree; it needs the worker to
sit in a delegated subtree whose ``memory`` and ``pids`` controllers it may enable, e.g.
systemd's ``Delegate=yes``). Per-runner groups live under the worker's own group, in
``torch-judge/``, named ``<worker pid>-<n>`` so that a restarted worker can remove what a
crashed one left (:func:`sweep`).

Where neither works, :func:`detect` says why and the launcher logs it: the sandbox then
relies on RLIMIT_AS and RLIMIT_NPROC alone (and CUDA jobs have no memory limit).

For the speed check the groups also hold the controllers that keep the side of a
comparison that is not being timed out of the way (:meth:`Group.freeze`): the freezer (it
stops every process of the group, whatever it does with signals), the cpuset (it keeps the
group off the timing core even where freezing is slow) and CPU accounting (it tells whether
the group ran at all while the other side was timed). On v1 these are the ``freezer``,
``cpuset`` and ``cpuacct`` controllers, used where they are mounted; on v2 the core's
``cgroup.freeze`` and ``cpu.stat``, and ``cpuset`` where it can be enabled.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sandbox import linux
from sandbox.channel import Channel
from sandbox.launch import Job, RunnerProcess

BASE_NAME = "torch-judge"


@dataclass(frozen=True)
class Hierarchy:
    version: int
    memory: Path  # the folder our groups go in (the same path for every controller on v2)
    pids: Path
    # v1: the folders of the optional controllers (None: not mounted or not writable);
    # v2: ``memory`` for each that is available (cpuset only where it could be enabled).
    freezer: Path | None = None
    cpuset: Path | None = None
    cpuacct: Path | None = None

    def describe(self) -> str:
        extra = [c for c in ("freezer", "cpuset", "cpuacct") if getattr(self, c) is not None]
        where = (str(self.memory) if self.version == 2
                 else ", ".join(str(b) for b in self.bases()))
        return f"cgroup v{self.version} ({where}; {', '.join(extra) or 'no freezer'})"

    def bases(self) -> list[Path]:
        """Every folder groups are made in, once each."""
        found = [self.memory, self.pids, self.freezer, self.cpuset, self.cpuacct]
        return list(dict.fromkeys(b for b in found if b is not None))


def _mounts() -> list[tuple[str, str, set[str]]]:
    """(mount point, fs type, super options) of every cgroup file system."""
    found = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fields, rfields = left.split(), right.split()
            if rfields and rfields[0] in ("cgroup", "cgroup2"):
                options = set(rfields[2].split(",")) if len(rfields) > 2 else set()
                found.append((fields[4], rfields[0], options))
    return found


def _own_paths() -> dict[str, str]:
    """This process's group per controller ("" for the unified tree)."""
    own = {}
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            for c in controllers.split(",") if controllers else [""]:
                own[c] = path
    return own


def _prepare(folder: Path) -> None:
    folder.mkdir(exist_ok=True)
    probe = folder / f"probe-{os.getpid()}"
    probe.mkdir(exist_ok=True)
    probe.rmdir()


def _prepare_cpuset(folder: Path) -> None:
    """A v1 cpuset folder takes no process before it has CPUs and memory nodes: give our
    base folder its parent's."""
    folder.mkdir(exist_ok=True)
    for name in ("cpuset.cpus", "cpuset.mems"):
        if not (folder / name).read_text().strip():
            _write(folder / name, (folder.parent / name).read_text().strip())
    _prepare(folder)


def _optional_v1(mounts: list[tuple[str, str, set[str]]], own: dict[str, str]
                 ) -> dict[str, Path | None]:
    """The folders of the v1 controllers the speed check uses, where they work."""
    found: dict[str, Path | None] = {}
    for controller in ("freezer", "cpuset", "cpuacct"):
        found[controller] = None
        mount = next((m for m, t, opts in mounts if t == "cgroup" and controller in opts), None)
        if mount is None:
            continue
        folder = Path(mount) / own.get(controller, "/").lstrip("/") / BASE_NAME
        try:
            (_prepare_cpuset if controller == "cpuset" else _prepare)(folder)
            found[controller] = folder
        except OSError:
            continue
    return found


def _enable_v2(parent: Path, controllers: str) -> None:
    """Enable ``controllers`` for the children of our own group. A v2 group that holds
    processes cannot do that (the "no internal processes" rule: EBUSY), and ours holds
    this process, and under systemd's ``Delegate=yes`` or in a container maybe others: they
    all move into a leaf group of their own first (``worker-<pid>``), as delegation
    expects, and the controllers are enabled again."""
    try:
        _write(parent / "cgroup.subtree_control", controllers)
        return
    except OSError as e:
        if e.errno != errno.EBUSY:
            raise
    leaf = parent / f"worker-{os.getpid()}"
    leaf.mkdir(exist_ok=True)
    for pid in (parent / "cgroup.procs").read_text().split():
        with contextlib.suppress(ProcessLookupError, OSError):
            _write(leaf / "cgroup.procs", pid)
    _write(parent / "cgroup.subtree_control", controllers)


def detect() -> tuple[Hierarchy | None, str]:
    """The hierarchy we can make groups in, or None and the reason why not."""
    if os.geteuid() != 0:
        return None, "not running as root"
    mounts, own = _mounts(), _own_paths()
    v1 = {c: Path(m) for m, t, opts in mounts if t == "cgroup" for c in ("memory", "pids")
          if c in opts}
    reasons = []
    if "memory" in v1 and "pids" in v1:
        try:
            memory = v1["memory"] / own.get("memory", "/").lstrip("/") / BASE_NAME
            pids = v1["pids"] / own.get("pids", "/").lstrip("/") / BASE_NAME
            _prepare(memory)
            _prepare(pids)
            return Hierarchy(1, memory, pids, **_optional_v1(mounts, own)), ""
        except OSError as e:
            reasons.append(f"cgroup v1: {e}")
    unified = next((Path(m) for m, t, _ in mounts if t == "cgroup2"), None)
    if unified is not None:
        try:
            parent = unified / own.get("", "/").lstrip("/")
            available = (parent / "cgroup.controllers").read_text().split()
            if not {"memory", "pids"} <= set(available):
                raise OSError(f"memory and pids controllers not available in {parent}")
            base = parent / BASE_NAME
            _prepare(base)
            _enable_v2(parent, "+memory +pids")
            (base / "cgroup.subtree_control").write_text("+memory +pids")
            cpuset = None
            if "cpuset" in available:
                with contextlib.suppress(OSError):
                    _enable_v2(parent, "+cpuset")
                    (base / "cgroup.subtree_control").write_text("+cpuset")
                    cpuset = base
            # The freezer (cgroup.freeze) and cpu.stat are part of every v2 group.
            return Hierarchy(2, base, base, freezer=base, cpuset=cpuset, cpuacct=base), ""
        except OSError as e:
            reasons.append(f"cgroup v2: {e}")
    if not reasons:
        reasons.append("no writable memory and pids controllers are mounted")
    return None, "; ".join(reasons)


def _write(path: Path, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


class Group:
    """The cgroup(s) of one runner process."""

    def __init__(self, h: Hierarchy, name: str, memory_bytes: int, pids_max: int) -> None:
        self.h = h
        self.freezer: Path | None
        self.cpuset: Path | None
        self.cpuacct: Path | None
        if h.version == 2:
            self.folders = [h.memory / name]
            self.freezer = self.cpuacct = self.folders[0]
            self.cpuset = self.folders[0] if h.cpuset is not None else None
        else:
            self.folders = [base / name for base in h.bases()]
            self.freezer, self.cpuset, self.cpuacct = (
                base / name if base is not None else None
                for base in (h.freezer, h.cpuset, h.cpuacct))
        self.cpus: set[int] = set()  # what the group may run on when it is not kept away
        for folder in self.folders:
            folder.mkdir()
        try:
            if h.version == 1:
                mem, pids = h.memory / name, h.pids / name
                _write(mem / "memory.limit_in_bytes", str(memory_bytes))
                with contextlib.suppress(OSError):  # no swap accounting: nothing to limit
                    _write(mem / "memory.memsw.limit_in_bytes", str(memory_bytes))
                _write(pids / "pids.max", str(pids_max))
                if self.cpuset is not None:
                    for key in ("cpuset.cpus", "cpuset.mems"):
                        _write(self.cpuset / key, (self.cpuset.parent / key).read_text().strip())
            else:
                (folder,) = self.folders
                _write(folder / "memory.max", str(memory_bytes))
                with contextlib.suppress(OSError):
                    _write(folder / "memory.swap.max", "0")
                _write(folder / "pids.max", str(pids_max))
            if self.cpuset is not None:
                effective = "cpuset.cpus" if h.version == 1 else "cpuset.cpus.effective"
                self.cpus = parse_cpus((self.cpuset / effective).read_text())
        except BaseException:
            self.remove()
            raise

    def add(self, pid: int) -> None:
        for folder in self.folders:
            _write(folder / "cgroup.procs", str(pid))

    def pids(self) -> set[int]:
        found: set[int] = set()
        for folder in self.folders:
            with contextlib.suppress(OSError):
                found.update(int(p) for p in (folder / "cgroup.procs").read_text().split())
        return found

    def _memory_stat(self, v1_file: str, v2_file: str, key: str | None) -> int:
        folder = self.folders[0]
        try:
            text = (folder / (v1_file if self.h.version == 1 else v2_file)).read_text()
        except OSError:
            return 0
        if key is None:
            return int(text.strip() or 0)
        for line in text.splitlines():
            k, _, v = line.partition(" ")
            if k == key:
                return int(v)
        return 0

    def oom_kills(self) -> int:
        return self._memory_stat("memory.oom_control", "memory.events", "oom_kill")

    def peak_bytes(self) -> int:
        return self._memory_stat("memory.max_usage_in_bytes", "memory.peak", None)

    def usage_bytes(self) -> int:
        return self._memory_stat("memory.usage_in_bytes", "memory.current", None)

    def cpu_time_ns(self) -> int | None:
        """The CPU time every process of the group has used so far (user and system), as
        the kernel counts it; None where the group has no CPU accounting."""
        if self.cpuacct is None:
            return None
        try:
            if self.h.version == 1:
                return int((self.cpuacct / "cpuacct.usage").read_text().strip())
            for line in (self.cpuacct / "cpu.stat").read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "usage_usec":
                    return int(value) * 1000
        except (OSError, ValueError):
            return None
        return None

    def kill(self) -> None:
        """SIGKILL every process in the group until none is left (or 2 s passed)."""
        if self.h.version == 2:
            with contextlib.suppress(OSError):
                _write(self.folders[0] / "cgroup.kill", "1")
        elif self.freezer is not None:  # a frozen process dies only once thawed
            with contextlib.suppress(OSError):
                _write(self.freezer / "freezer.state", "THAWED")
        deadline = time.monotonic() + 2.0
        while (pids := self.pids()) and time.monotonic() < deadline:
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)

    @property
    def can_freeze(self) -> bool:
        return self.freezer is not None

    def freeze(self, frozen: bool, away_from: int | None = None) -> bool:
        """Stop (or resume) every process of the group, whatever signals it sends or
        ignores, and, with ``away_from``, keep it off that CPU until it is resumed (its
        cpuset), which holds even while the freezer waits for a process inside a long
        system call. Returns whether the group is known to be in the state asked for
        within ``FREEZE_WAIT_S`` (the freezer is asynchronous)."""
        folder = self.freezer
        assert folder is not None
        if frozen and away_from is not None:
            self._keep_away(away_from)
        try:
            if self.h.version == 1:
                state = "FROZEN" if frozen else "THAWED"
                _write(folder / "freezer.state", state)
                done = self._wait(
                    lambda: (folder / "freezer.state").read_text().strip() == state)
            else:
                _write(folder / "cgroup.freeze", "1" if frozen else "0")
                want = f"frozen {int(frozen)}"
                done = self._wait(
                    lambda: want in (folder / "cgroup.events").read_text().splitlines())
        except OSError:
            done = False
        if not frozen:
            self._keep_away(None)
        return done

    def _wait(self, done: Callable[[], bool]) -> bool:
        deadline = time.monotonic() + FREEZE_WAIT_S
        while not done():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.0002)
        return True

    def _keep_away(self, cpu: int | None) -> None:
        """Let the group run everywhere it may (None), or everywhere but ``cpu``."""
        if self.cpuset is None or not self.cpus:
            return
        allowed = self.cpus - {cpu} if cpu is not None else self.cpus
        if allowed:  # one CPU in all: nowhere else to go (the freezer and the count hold)
            with contextlib.suppress(OSError):
                _write(self.cpuset / "cpuset.cpus", format_cpus(allowed))

    def remove(self) -> None:
        self.kill()
        for folder in self.folders:
            for _ in range(50):  # a killed process leaves its group a moment after dying
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)


FREEZE_WAIT_S = 0.2  # how long freeze() waits for the freezer to report the group stopped


def parse_cpus(text: str) -> set[int]:
    """A cpuset list such as ``0-3,6`` as a set."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def format_cpus(cpus: set[int]) -> str:
    return ",".join(str(c) for c in sorted(cpus))


def sweep(h: Hierarchy) -> None:
    """Remove groups left by workers that are no longer running."""
    for base in h.bases():
        for folder in base.iterdir() if base.is_dir() else []:
            owner = folder.name.split("-", 1)[0]
            if not folder.is_dir() or not owner.isdigit() or linux.pid_alive(int(owner)):
                continue
            group = Group.__new__(Group)
            group.h, group.folders = h, [folder]
            group.freezer = folder if base == h.freezer else None
            group.remove()


class GroupedRunner(RunnerProcess):
    """A sandboxed runner in cgroups of its own (or none): out of memory is read from the
    group, and releasing it removes the group, then calls ``on_release``."""

    def __init__(self, pid: int, channel: Channel, job: Job, group: Group | None,
                 on_release: Callable[[], None]) -> None:
        super().__init__(pid, channel, job, Path("/job"))
        self.group = group
        self.on_release = on_release

    def _out_of_memory(self) -> bool:
        return self.oom_kills() > 0

    def oom_kills(self) -> int:
        return self.group.oom_kills() if self.group is not None else 0

    def memory_bytes(self) -> int | None:
        return self.group.usage_bytes() if self.group is not None else None

    def pause(self, paused: bool, away_from: int | None = None) -> bool:
        if self.group is None or not self.group.can_freeze:
            return super().pause(paused, away_from)
        if paused and not self.alive:
            return False
        return self.group.freeze(paused, away_from)

    def cpu_time_ns(self) -> int | None:
        return self.group.cpu_time_ns() if self.group is not None else None

    def _close(self) -> None:
        """What a subclass holds besides the group, closed before ``on_release``."""

    def _release(self) -> None:
        try:
            if self.group is not None:
                self.group.remove()
        finally:
            self._close()
            self.on_release()
