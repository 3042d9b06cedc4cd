"""The folders of one judging: made at its start, handed back and removed at its end.

A judging's folder (``judge-XXXX/``) holds a job folder per runner role (``sub``, ``ref``),
which the launcher may have turned into something of its own (the sandbox mounts a
size-limited tmpfs over each). Whatever happened in the judging — an accepted file, a
crash of the grader, a submission that left a tree 1500 folders deep — :func:`job_root`
hands every job folder back to the launcher (``Launcher.release``: the sandbox kills what
still runs there and unmounts the tmpfs, which frees its memory at once, however much it
holds) and then removes what is left with :func:`remove_tree`, which neither recurses nor
follows a link, and never raises.
"""

from __future__ import annotations

import logging
import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sandbox.launch import Launcher

log = logging.getLogger("judge.workdirs")

# A tree that keeps changing while it is removed (a process of the job still running,
# which the launcher should have prevented) is given up on after this many passes (a
# pass moves one level up; a job folder holds at most a few thousand entries).
MAX_PASSES = 100_000
OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@contextmanager
def job_root(launcher: Launcher, parent: Path | None = None, prefix: str = "judge-", *,
             existing: Path | None = None) -> Iterator[Path]:
    """A fresh folder for one judging's job folders (or ``existing``, one made ahead: a
    head start's); on exit, each folder in it is released by ``launcher`` and the whole
    folder removed, whatever happened."""
    root = existing or Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    try:
        yield root
    finally:
        release(launcher, root)


def release(launcher: Launcher, root: Path) -> None:
    """Hand every job folder under ``root`` back to the launcher, then remove ``root``.
    Never raises: a folder that cannot be removed is logged."""
    try:
        folders = [root / e.name for e in os.scandir(root)
                   if e.is_dir(follow_symlinks=False)]
    except OSError:
        folders = []
    for folder in folders:
        try:
            launcher.release(folder)
        except Exception:
            log.exception("the launcher could not release %s", folder)
    left = remove_tree(root)
    if left:
        log.warning("could not remove everything under %s: %s", root, "; ".join(left[:5]))


def remove_tree(path: Path) -> list[str]:
    """Remove ``path`` and everything under it. Returns what could not be removed.

    ``shutil.rmtree`` recurses once per level, so a tree deeper than Python's recursion
    limit made it raise RecursionError (which ``ignore_errors`` does not cover). Here a
    folder's sub-folders are emptied by moving their entries up into it (a rename on the
    same file system) and then removed, so any depth takes two open descriptors and no
    recursion. Links are removed, never followed; another file system mounted below
    ``path`` is not entered (its mount point stays and is reported)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return []
    except OSError as e:
        return [f"{path}: {e}"]
    if not stat.S_ISDIR(st.st_mode):
        return _try(os.unlink, path)
    failures: list[str] = []
    try:
        fd = os.open(path, OPEN_DIR)
    except OSError as e:
        return [f"{path}: {e}"]
    try:
        if os.fstat(fd).st_ino == st.st_ino:  # still the folder we looked at
            _empty(fd, os.fstat(fd).st_dev, path, failures)
    finally:
        os.close(fd)
    return failures + _try(os.rmdir, path)


def _try(action, path: Path) -> list[str]:
    try:
        action(path)
    except FileNotFoundError:
        pass
    except OSError as e:
        return [f"{path}: {e}"]
    return []


def _empty(top: int, device: int, where: Path, failures: list[str]) -> None:
    """Remove everything in the folder open as ``top``."""
    counter = 0
    stuck: set[str] = set()
    for _ in range(MAX_PASSES):
        names = [n for n in os.listdir(top) if n not in stuck]
        if not names:
            return
        for name in names:
            try:
                st = os.stat(name, dir_fd=top, follow_symlinks=False)
                if not stat.S_ISDIR(st.st_mode):
                    os.unlink(name, dir_fd=top)
                elif st.st_dev != device:
                    raise OSError(f"{name} is a mount point: not entered")
                else:
                    counter = _hoist(top, name, counter)
                    os.rmdir(name, dir_fd=top)
            except FileNotFoundError:
                continue
            except OSError as e:
                stuck.add(name)
                failures.append(f"{where / name}: {e}")
    failures.append(f"{where}: still changing after {MAX_PASSES} passes")


def _hoist(top: int, name: str, counter: int) -> int:
    """Move every entry of the folder ``name`` (in ``top``) up into ``top``, under a
    fresh name. Returns the counter used to make fresh names."""
    sub = os.open(name, OPEN_DIR, dir_fd=top)
    try:
        for child in os.listdir(sub):
            while True:
                counter += 1
                fresh = f".removing-{counter}"
                try:
                    os.stat(fresh, dir_fd=top, follow_symlinks=False)
                except FileNotFoundError:
                    break
            os.rename(child, fresh, src_dir_fd=sub, dst_dir_fd=top)
    finally:
        os.close(sub)
    return counter
