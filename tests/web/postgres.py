"""A throwaway PostgreSQL cluster for the tests: ``initdb`` and ``pg_ctl`` in a temporary
folder, listening on 127.0.0.1 on a free port (and a Unix socket in the folder only), with
``trust`` authentication for its one role, ``judge``. PostgreSQL refuses to run as root, so
as root the server runs as ``nobody`` (through ``setpriv``); the folder belongs to it.

:func:`binaries` finds the server programs on PATH or under Debian's
``/usr/lib/postgresql/<version>/bin`` (``apt-get install postgresql``; the set-up installs
it for the tests)."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

USER = "nobody"  # who runs the server when the tests run as root
ROLE = "judge"


def binaries() -> Path | None:
    """The folder holding ``initdb`` and ``pg_ctl``, newest version first; None if absent."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(found).parent
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"),
                      key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit()
                      else 0, reverse=True)
    return versions[0].parent if versions else None


@dataclass
class Cluster:
    folder: Path
    port: int

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://{ROLE}@127.0.0.1:{self.port}/{database}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_server_user(argv: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return argv
    user = pwd.getpwnam(USER)
    return ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups",
            "--", *argv]


def _run(argv: list[str], **kwargs) -> None:
    done = subprocess.run(_as_server_user(argv), stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=120, **kwargs)
    if done.returncode != 0:
        raise RuntimeError(f"{argv[0]} failed ({done.returncode}):\n{done.stdout}{done.stderr}")


@contextlib.contextmanager
def cluster(bin_dir: Path) -> Iterator[Cluster]:
    """Start a cluster, yield it, stop it and remove its folder."""
    # Not under pytest's tmp_path: that is private to root, and the server runs as nobody.
    folder = Path(tempfile.mkdtemp(prefix="torch-judge-pg-"))
    data = folder / "data"
    if os.geteuid() == 0:
        user = pwd.getpwnam(USER)
        os.chown(folder, user.pw_uid, user.pw_gid)
    port = _free_port()
    try:
        _run([str(bin_dir / "initdb"), "-D", str(data), "-U", ROLE, "--auth=trust",
              "-E", "UTF8", "--locale=C", "--no-sync"])
        options = (f"-c listen_addresses=127.0.0.1 -c port={port} "
                   f"-c unix_socket_directories={folder} -c fsync=off "
                   f"-c synchronous_commit=off -c full_page_writes=off -c max_connections=200")
        _run([str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(folder / "server.log"),
              "-o", options, "-w", "-t", "60", "start"])
        yield Cluster(folder, port)
    finally:
        if (data / "postmaster.pid").exists():
            with contextlib.suppress(Exception):
                _run([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w",
                      "stop"])
        for _ in range(50):  # the server may take a moment to let go of its files
            with contextlib.suppress(FileNotFoundError):
                shutil.rmtree(folder)
            if not folder.exists():
                break
            time.sleep(0.1)


def restart(bin_dir: Path, running: Cluster, mode: str = "fast") -> None:
    """``pg_ctl restart`` (``fast``: every session is cut, as when the server restarts);
    the same options, port and log. For the fault tests (tests/web/deployment.py)."""
    _run([str(bin_dir / "pg_ctl"), "-D", str(running.folder / "data"), "-l",
          str(running.folder / "server.log"), "-m", mode, "-w", "-t", "60", "restart"])
