"""Data files that the grader writes into its runners' job folders.

A problem about reading files (``jsonl-dataset``) needs a file that is fresh for every
submission, made on the trusted side from the case's seed, in the folder the runner sees
as its working directory. That folder is the submission's to write in: it may have planted
a name there beforehand, a symbolic link to a host file above all. So every file is created
anew through a descriptor of the folder opened without following links, with
``O_CREAT | O_EXCL | O_NOFOLLOW`` (a name that exists, link or not, is never written
through: another name is taken), read-only (mode 0444), and removed afterwards by name in
that folder (``unlink`` removes a link, it never follows one).

The name is derived from a seed: the case's seed for test cases, so that a public case
asks the reference the same question on every machine (the practice pack replays the
reference's recorded answers, matched by a digest of the arguments) while a hidden case's
names are as unpredictable as its seed; a secret one for the speed checks.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
from collections.abc import Iterable
from pathlib import Path

from judge.i18n import T

OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
ATTEMPTS = 64


class JobFolderFull(Exception):
    """The submission's own job folder could not take the file (it filled it, or removed
    or replaced the folder): the submission's doing. ``message`` says so to the learner."""

    def __init__(self, message: T) -> None:
        self.message = message
        super().__init__(message.en)


class JobFiles:
    """Files written into the job folders of some runners (``{"sub": Path, "ref": Path}``),
    each under one name that is free in all of them; :meth:`remove_all` takes them away."""

    def __init__(self, folders: dict[str, Path], seed: int | str) -> None:
        self.folders = dict(folders)
        self.seed = seed
        self.count = 0
        self.written: list[tuple[Path, str]] = []

    def put(self, data: bytes | Iterable[bytes], suffix: str = "") -> str:
        """Write ``data`` (bytes, or chunks of bytes) into every folder; return the file's
        name, which is its path for a runner (relative to its working directory)."""
        chunks = [data] if isinstance(data, bytes | bytearray | memoryview) else list(data)
        self.count += 1
        for attempt in range(ATTEMPTS):
            digest = hashlib.sha256(f"{self.seed}:{self.count}:{attempt}".encode())
            name = f"data-{digest.hexdigest()[:16]}{suffix}"
            if self._try(name, chunks):
                return name
        raise JobFolderFull(T("作业目录里的文件名全被占用了，无法写入测试数据",
                              "every name the judge tried for its data file was taken in "
                              "the job folder"))

    def _try(self, name: str, chunks: list) -> bool:
        """Create ``name`` in every folder; False (nothing left behind) if one has it."""
        done: list[Path] = []
        for role, folder in self.folders.items():
            try:
                _create(folder, name, chunks)
            except FileExistsError:
                self._remove(done, name)
                return False
            except OSError as e:
                self._remove(done, name)
                if role != "sub":
                    raise
                raise JobFolderFull(_full_message(e)) from None
            done.append(folder)
        self.written.extend((folder, name) for folder in done)
        return True

    def remove_all(self) -> None:
        for folder, name in self.written:
            _unlink(folder, name)
        self.written.clear()

    @staticmethod
    def _remove(folders: list[Path], name: str) -> None:
        for folder in folders:
            _unlink(folder, name)


def _create(folder: Path, name: str, chunks: list) -> None:
    dirfd = os.open(folder, OPEN_DIR)
    try:
        fd = os.open(name, CREATE, 0o444, dir_fd=dirfd)
        try:
            for chunk in chunks:
                view = memoryview(chunk)
                while view:
                    view = view[os.write(fd, view):]
        except BaseException:
            os.close(fd)
            fd = -1
            with contextlib.suppress(OSError):
                os.unlink(name, dir_fd=dirfd)
            raise
        finally:
            if fd >= 0:
                os.close(fd)
    finally:
        os.close(dirfd)


def _unlink(folder: Path, name: str) -> None:
    """Remove ``name`` from ``folder`` if it is still there; a folder replaced by a link
    is not followed, and anything in the way is left for the job's clean-up."""
    try:
        dirfd = os.open(folder, OPEN_DIR)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=dirfd)
    finally:
        os.close(dirfd)


def _full_message(e: OSError) -> T:
    if e.errno in (errno.ENOSPC, errno.EDQUOT):
        return T("评测程序无法把测试数据写进你的作业目录：目录已满。你的代码在里面写了太多东西，"
                 "或者还开着评测程序已经删除的数据文件（打开的文件要关闭：删除的文件在关闭之前仍然占着空间）",
                 "the judge could not write its data file into your job folder: the folder "
                 "is full. Did your code write too much there, or does it keep the judge's "
                 "earlier data files open (a removed file takes its space until it is "
                 "closed: close the files you open)?")
    return T(f"评测程序无法把测试数据写进你的作业目录（{os.strerror(e.errno or 0)}）：目录被删除或"
             f"替换了吗？", f"the judge could not write its data file into your job folder "
             f"({os.strerror(e.errno or 0)}): was the folder removed or replaced?")
