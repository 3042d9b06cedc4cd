"""One throughput measurement at a time on this machine: the machine-wide lock every
worker slot takes to time its pairs (two measurements sharing two cores would time each
other, not the code), and a probe of it. judge.throughput takes it; a grader box's
throughput module is given one through its broker instead (judge/boxed.py)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path


def _lock_path() -> Path:
    return Path(tempfile.gettempdir()) / "torch-judge-throughput.lock"


@contextlib.contextmanager
def measuring_alone(path: Path | None = None) -> Iterator[None]:
    """One throughput measurement at a time on this machine (all worker slots): two
    measurements sharing two cores would time each other, not the code."""
    path = path or _lock_path()
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def measuring_now() -> bool:
    """Whether a throughput measurement on this machine holds :func:`measuring_alone`'s
    lock now (another worker's): a probe, the lock taken and let go at once when free."""
    try:
        fd = os.open(_lock_path(), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # lets go of the lock, if the probe took it
