"""One cgroup per runner process: a memory limit, a process limit, an OOM count, a kill.

Both hierarchies are handled: cgroup v1 (a ``memory`` and a ``pids`` controller mounted
separately, as on these Debian VMs) and cgroup v2 (one unified tree; it needs the worker to
sit in a delegated subtree whose ``memory`` and ``pids`` controllers it may enable, e.g.
systemd's ``Delegate=yes``). Per-runner groups live under the worker's own group, in
``torch-judge/``, named ``<worker pid>-<n>`` so that a restarted worker can remove what a
crashed one left (:func:`sweep`).

Where neither works, :func:`detect` says why and the launcher logs it: the sandbox then
relies on RLIMIT_AS and RLIMIT_NPROC alone (and CUDA jobs have no memory limit).
"""

from __future__ import annotations

import contextlib
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
    memory: Path  # the folder our groups go in (the same path twice for v2)
    pids: Path

    def describe(self) -> str:
        where = str(self.memory) if self.version == 2 else f"{self.memory}, {self.pids}"
        return f"cgroup v{self.version} ({where})"


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
            return Hierarchy(1, memory, pids), ""
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
            # Our own group may hold processes, so the controllers are enabled for the
            # children of base only (the "no internal processes" rule allows that).
            (parent / "cgroup.subtree_control").write_text("+memory +pids")
            (base / "cgroup.subtree_control").write_text("+memory +pids")
            return Hierarchy(2, base, base), ""
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
        self.folders = [h.memory / name] if h.version == 2 else [h.memory / name, h.pids / name]
        for folder in self.folders:
            folder.mkdir()
        try:
            if h.version == 1:
                mem, pids = self.folders
                _write(mem / "memory.limit_in_bytes", str(memory_bytes))
                with contextlib.suppress(OSError):  # no swap accounting: nothing to limit
                    _write(mem / "memory.memsw.limit_in_bytes", str(memory_bytes))
                _write(pids / "pids.max", str(pids_max))
            else:
                (folder,) = self.folders
                _write(folder / "memory.max", str(memory_bytes))
                with contextlib.suppress(OSError):
                    _write(folder / "memory.swap.max", "0")
                _write(folder / "pids.max", str(pids_max))
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

    def kill(self) -> None:
        """SIGKILL every process in the group until none is left (or 2 s passed)."""
        if self.h.version == 2:
            with contextlib.suppress(OSError):
                _write(self.folders[0] / "cgroup.kill", "1")
        deadline = time.monotonic() + 2.0
        while (pids := self.pids()) and time.monotonic() < deadline:
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)

    def freeze(self, frozen: bool) -> bool:
        """Stop (or resume) every process of the group, whatever session or process group
        it moved to. cgroup v2 has a freezer for that; on v1, SIGSTOP each member until no
        new one appears (a stopped process cannot fork), SIGCONT them all to resume."""
        if self.h.version != 2:
            sig = signal.SIGSTOP if frozen else signal.SIGCONT
            done: set[int] = set()
            for _ in range(50):
                todo = self.pids() - done
                if not todo:
                    break
                for pid in todo:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, sig)
                done |= todo
            return True
        folder = self.folders[0]
        try:
            _write(folder / "cgroup.freeze", "1" if frozen else "0")
            want = f"frozen {int(frozen)}"
            for _ in range(200):  # freezing is asynchronous: wait until it is done
                if want in (folder / "cgroup.events").read_text().splitlines():
                    break
                time.sleep(0.0005)
        except OSError:
            return False
        return True

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


def sweep(h: Hierarchy) -> None:
    """Remove groups left by workers that are no longer running."""
    for base in {h.memory, h.pids}:
        for folder in base.iterdir() if base.is_dir() else []:
            owner = folder.name.split("-", 1)[0]
            if not folder.is_dir() or not owner.isdigit() or linux.pid_alive(int(owner)):
                continue
            group = Group.__new__(Group)
            group.h, group.folders = h, [folder]
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

    def pause(self, paused: bool) -> None:
        if self.group is None or not self.group.freeze(paused):
            super().pause(paused)

    def _close(self) -> None:
        """What a subclass holds besides the group, closed before ``on_release``."""

    def _release(self) -> None:
        try:
            if self.group is not None:
                self.group.remove()
        finally:
            self._close()
            self.on_release()
