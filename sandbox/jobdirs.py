"""Job folders: a size-limited tmpfs per job folder, shared by the host and the sandbox.

The grader makes a job folder (``judge-XXXX/sub``), writes ``submission.py`` into it and
starts runners on it; runners of one job (restarts after a kill included) must see what the
previous ones wrote, and the grader measures those files from the host. A plain host
folder would let a submission fill the disk, so the first :meth:`JobDirs.ensure` of a folder
moves the grader's files onto a fresh tmpfs (``size=``, ``nr_inodes=``, owned by the slot's
uid, ``nosuid,nodev``) and mounts that tmpfs over the folder:

    /run/torch-judge/jobs/<launcher>/<n>      the tmpfs, in the launcher's *store*
    <grader's job folder>                    a bind mount of it, for the grader

The store is a small tmpfs of its own (``tj-store``), a shared mount that the warm template
binds read-only at ``/jobs``: a job folder mounted in the store after the template started
appears there too (mount propagation), and each job's init binds its own one at ``/job`` and
covers ``/jobs``. Nothing a job's ``/proc/self/mountinfo`` (or its init's) shows names a host
folder or the worker: a tmpfs's "root" is ``/`` and every job tmpfs is named ``tj-job``.

At the end of every judging the grader hands each job folder back
(``BwrapLauncher.release`` → :meth:`JobDirs.release`): its tmpfs is unmounted, which frees
its memory however deep a tree the job left in it. As a safety net for callers that only
delete the folder, :meth:`JobDirs.collect` releases a folder once it is empty and no runner
of it is alive, and :meth:`JobDirs.close` releases them all. A crashed worker's mounts are
removed by the next one (:func:`sweep`): its store is named after its pid, and the grader's
folders bound to its job folders share their device.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import struct
import threading
from dataclasses import dataclass
from pathlib import Path

from sandbox import linux

log = logging.getLogger("sandbox.jobdirs")
STORE_ROOT = Path("/run/torch-judge/jobs")
SOURCE = "tj-job"  # every job folder's tmpfs
STORE_SOURCE = "tj-store"
MAX_SEED_BYTES = 64 * 1024 * 1024
# POSIX ACL xattr tags (linux/posix_acl_xattr.h)
ACL_USER_OBJ, ACL_USER, ACL_GROUP_OBJ, ACL_GROUP, ACL_MASK, ACL_OTHER = 1, 2, 4, 8, 16, 32
ACL_ANY = 0xFFFFFFFF


@dataclass
class Entry:
    name: str
    folder: Path
    live: int = 0


def _read_seed(folder: Path) -> list[tuple[str, bytes]]:
    """The grader's files in a job folder: regular files only, never through a link."""
    files = []
    dirfd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        total = 0
        for name in os.listdir(dirfd):
            st = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
            if not stat.S_ISREG(st.st_mode):
                log.warning("job folder %s: not copying %s (not a regular file)", folder, name)
                continue
            total += st.st_size
            if total > MAX_SEED_BYTES:
                raise OSError(f"job folder {folder} holds more than {MAX_SEED_BYTES} bytes")
            # O_NONBLOCK: a grader box (judge/graderbox.py) writes these files and could
            # swap one for a FIFO after the stat, which a blocking open would wait on.
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dirfd)
            with os.fdopen(fd, "rb") as f:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    raise OSError(f"job folder {folder}: {name} changed under us")
                files.append((name, f.read()))
            os.unlink(name, dir_fd=dirfd)
    finally:
        os.close(dirfd)
    return files


class JobDirs:
    """The job folders of one launcher (one slot uid)."""

    def __init__(self, tag: str, uid: int, gid: int) -> None:
        """``tag`` names the store; it starts with this worker's pid (see :func:`sweep`)."""
        self.uid, self.gid = uid, gid
        self.store = STORE_ROOT / tag
        self.entries: dict[Path, Entry] = {}
        self.lock = threading.Lock()
        self.count = 0
        self.warned_acl = False
        STORE_ROOT.mkdir(parents=True, exist_ok=True)
        for p in (STORE_ROOT.parent, STORE_ROOT):
            os.chmod(p, 0o755)  # the slot uids must reach the store (bwrap binds by path)
        self.store.mkdir(mode=0o755)
        # A file system of its own, in a peer group of its own (private first: under a shared
        # / it would join the host's), shared so that later mounts under it propagate into
        # the template's namespace, where it is a slave.
        linux.mount(STORE_SOURCE, str(self.store), "tmpfs", linux.MS_NOSUID | linux.MS_NODEV,
                    "size=1m,nr_inodes=65536,mode=0755")
        linux.mount(None, str(self.store), None, linux.MS_PRIVATE)
        linux.mount(None, str(self.store), None, linux.MS_SHARED)

    def ensure(self, folder: Path, size_mb: int) -> str:
        """Mount ``folder``'s tmpfs if not yet done; return its name in the store."""
        folder = Path(os.path.abspath(folder))
        with self.lock:
            entry = self.entries.get(folder)
            if entry is not None:
                return entry.name
            if not folder.exists():
                folder.mkdir(parents=True, mode=0o700)  # a wiped folder of a live job
            seed = _read_seed(folder)
            self.count += 1
            name = str(self.count)
            target = self.store / name
            target.mkdir(mode=0o700)
            linux.mount(SOURCE, str(target), "tmpfs", linux.MS_NOSUID | linux.MS_NODEV,
                        f"size={int(size_mb)}m,nr_inodes=4096,mode=0700,"
                        f"uid={self.uid},gid={self.gid}")
            try:
                self._share(target)
                for fname, data in seed:
                    fd = os.open(target / fname, os.O_WRONLY | os.O_CREAT | os.O_EXCL
                                 | os.O_NOFOLLOW, 0o644)
                    with os.fdopen(fd, "wb") as f:
                        f.write(data)
                linux.mount(str(target), str(folder), None, linux.MS_BIND)
            except BaseException:
                self._unmount(target)
                raise
            self.entries[folder] = Entry(name, folder)
            return name

    def _share(self, folder: Path) -> None:
        """A default POSIX ACL that gives the slot uid and gid rwx on everything made in
        ``folder``, by the sandbox or by the grader: a test that makes a folder for the
        submission to write in (as root, mode 0755) must not make it read-only for it.
        With a default ACL the umask does not apply; the mode asked for still does."""
        entries = [(ACL_USER_OBJ, 7, ACL_ANY), (ACL_USER, 7, self.uid),
                   (ACL_GROUP_OBJ, 5, ACL_ANY), (ACL_GROUP, 7, self.gid),
                   (ACL_MASK, 7, ACL_ANY), (ACL_OTHER, 0, ACL_ANY)]
        blob = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e) for e in entries)
        try:
            os.setxattr(folder, "system.posix_acl_access", blob)
            os.setxattr(folder, "system.posix_acl_default", blob)
        except OSError as e:
            if not self.warned_acl:
                self.warned_acl = True
                log.warning("no POSIX ACLs on tmpfs (%s): folders the grader makes in a job "
                            "folder are not writable by the sandbox", e)

    def store_path(self, name: str) -> Path:
        return self.store / name

    def attach(self, folder: Path, delta: int) -> None:
        """Count a runner starting (+1) or ending (-1) on ``folder``."""
        with self.lock:
            entry = self.entries.get(Path(os.path.abspath(folder)))
            if entry is not None:
                entry.live += delta

    def collect(self) -> None:
        """Release the folders that are empty and have no live runner."""
        with self.lock:
            for folder, entry in list(self.entries.items()):
                if entry.live > 0:
                    continue
                try:
                    empty = not os.listdir(folder)
                except OSError:
                    empty = True
                if empty:
                    self._release(entry)

    def release(self, folder: Path) -> None:
        """Unmount ``folder``'s tmpfs now, whatever it holds (the grader is done with it)."""
        with self.lock:
            entry = self.entries.get(Path(os.path.abspath(folder)))
            if entry is not None:
                self._release(entry)

    def close(self) -> None:
        with self.lock:
            for entry in list(self.entries.values()):
                self._release(entry)
            self._unmount(self.store)

    def _release(self, entry: Entry) -> None:
        del self.entries[entry.folder]
        # The grader's rmtree could not remove the mount point (nor so its parent):
        # _unmount removes the folder if empty, then the parent goes if empty too.
        self._unmount(entry.folder)
        self._unmount(self.store / entry.name)
        if not entry.folder.exists():
            with contextlib.suppress(OSError):
                entry.folder.parent.rmdir()

    @staticmethod
    def _unmount(path: Path) -> None:
        try:
            linux.umount(str(path))
        except OSError as e:
            if e.errno not in (22, 2):  # EINVAL: not a mount point; ENOENT: gone
                log.warning("cannot unmount %s: %s", path, e)
        with contextlib.suppress(OSError):
            path.rmdir()


def sweep() -> None:
    """Unmount the job folders and stores of workers that are no longer running: a store
    is named ``<worker pid>-...``, and the grader's folders bound to its job folders are
    found by their device."""
    mounts = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fields, rfields = left.split(), right.split()
            source = rfields[1] if len(rfields) > 1 else ""
            mounts.append((fields[2], fields[4].replace("\\040", " "), source))
    stale: set[str] = set()
    devices: set[str] = set()
    for device, target, source in mounts:
        if target.startswith(str(STORE_ROOT) + "/"):
            owner = Path(target).relative_to(STORE_ROOT).parts[0].split("-", 1)[0]
            if owner.isdigit() and not linux.pid_alive(int(owner)):
                stale.add(target)
                if source == SOURCE:
                    devices.add(device)
    stale |= {target for device, target, source in mounts
              if source == SOURCE and device in devices}
    for target in sorted(stale, key=len, reverse=True):  # the deepest first
        JobDirs._unmount(Path(target))
