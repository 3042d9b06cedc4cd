"""What a sandbox sees: its read-only root, its environment, and the bwrap options for them.

The root holds only what the runner needs, all read-only: ``/usr`` (with the merged-usr
links ``/bin``, ``/lib``, ``/lib64``, ``/sbin``), ``/etc/ld.so.cache``, the Python
installation and virtual environment at their own paths (a venv finds its base by path),
and this package at ``/opt/torch-judge/sandbox`` — not the project: ``judge/``,
``problems/`` (references, tests), the database and the worker's token stay outside.
Everything is derived at run time from ``sys.prefix``, ``sys.base_prefix`` and torch's
location, never hard-coded.

A path the slot's uid cannot reach on the host (``/root`` is 0700 here, and a pyenv
interpreter lives under it) is first bind-mounted read-only at
``/run/torch-judge/views/<hash>`` and bound from there: bubblewrap runs as the slot uid
and opens its sources by path, with that uid's rights.
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path

from sandbox import linux
from sandbox.launch import runner_env

PACKAGE = Path(__file__).resolve().parent
INSIDE_ROOT = "/opt/torch-judge"
VIEWS = Path("/run/torch-judge/views")
MERGED_USR = ("bin", "lib", "lib32", "lib64", "libx32", "sbin")
# Inside the sandbox these are fresh mounts (tmpfs, proc, the job folder): a host folder
# below one of them would be hidden by it.
SHADOWED = (Path("/tmp"), Path("/dev"), Path("/proc"), Path("/job"))


class LayoutError(RuntimeError):
    """The interpreter or its packages lie where the sandbox cannot show them."""


def reachable(path: Path, uid: int, gid: int) -> bool:
    """Whether ``uid`` (with only ``gid`` as its group) can list ``path`` and every
    folder above it, judging by the mode bits."""
    path = Path(os.path.realpath(path))
    for p in [*reversed(path.parents), path]:
        try:
            st = os.stat(p)
        except OSError:
            return False
        need = stat.S_IXOTH if p != path else stat.S_IXOTH | stat.S_IROTH
        if st.st_uid == uid:
            need <<= 6
        elif st.st_gid == gid:
            need <<= 3
        if st.st_mode & need != need:
            return False
    return True


def _view(path: Path) -> Path:
    """A read-only bind mount of ``path`` under VIEWS (made once, shared by workers)."""
    view = VIEWS / hashlib.sha256(str(path).encode()).hexdigest()[:16]
    with open("/proc/self/mountinfo") as f:
        if any(line.split()[4] == str(view) for line in f):
            return view
    for p in (VIEWS.parent, VIEWS):
        p.mkdir(exist_ok=True)
        os.chmod(p, 0o755)
    view.mkdir(exist_ok=True)
    linux.mount(str(path), str(view), None, linux.MS_BIND | linux.MS_REC)
    linux.mount(None, str(view), None, linux.MS_BIND | linux.MS_REMOUNT | linux.MS_RDONLY
                | linux.MS_NOSUID | linux.MS_NODEV)
    return view


def python_roots() -> list[Path]:
    """The host folders the interpreter and its packages live in, outermost only."""
    roots = {Path(os.path.realpath(p)) for p in (sys.base_prefix, sys.prefix)}
    import torch

    roots.add(Path(os.path.realpath(Path(torch.__file__).parent.parent)))
    usr = Path("/usr")
    keep = [r for r in roots if r != usr and usr not in r.parents]
    return sorted(r for r in keep if not any(o in r.parents for o in keep))


@dataclass
class Layout:
    """The read-only binds and the environment, for one slot uid."""

    uid: int
    gid: int
    binds: list[tuple[Path, str]] = field(default_factory=list)  # (host source, inside)
    symlinks: list[tuple[str, str]] = field(default_factory=list)  # (target, inside)
    views: list[str] = field(default_factory=list)  # descriptions of views made
    python: str = ""

    @classmethod
    def build(cls, uid: int, gid: int) -> Layout:
        layout = cls(uid, gid)
        layout.binds.append((Path("/usr"), "/usr"))
        for name in MERGED_USR:
            host = Path("/") / name
            if host.is_symlink():
                layout.symlinks.append((os.readlink(host), f"/{name}"))
            elif host.is_dir():
                layout.add(host, f"/{name}")
        for root in python_roots():
            hidden = [str(h) for h in SHADOWED if h == root or h in root.parents]
            if hidden:
                raise LayoutError(
                    f"the Python installation or virtual environment {root} lies under "
                    f"{hidden[0]}, which the sandbox replaces with a mount of its own: put it "
                    f"elsewhere (e.g. make the checkout's .venv outside {hidden[0]})")
            layout.add(root, str(root))
        layout.add(PACKAGE, f"{INSIDE_ROOT}/sandbox")
        prefix = Path(os.path.realpath(sys.prefix))
        layout.python = str(prefix / "bin" / Path(sys.executable).name)
        return layout

    def add(self, host: Path, inside: str) -> None:
        if os.geteuid() == 0 and not reachable(host, self.uid, self.gid):
            self.views.append(f"{host} (through {_view(host)})")
            host = _view(host)
        self.binds.append((host, inside))

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        return runner_env({"PYTHONPATH": INSIDE_ROOT, "PYTHONNOUSERSITE": "1", "HOME": "/tmp",
                           "TMPDIR": "/tmp", "USER": "sandbox", "LOGNAME": "sandbox",
                           **(extra or {})})

    def root_args(self) -> list[str]:
        """bwrap options for the read-only part of the root (before /proc, /dev, tmpfs)."""
        args: list[str] = []
        for host, inside in self.binds:
            args += ["--ro-bind", str(host), inside]
        for target, inside in self.symlinks:
            args += ["--symlink", target, inside]
        args += ["--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache"]
        return args

    def env_args(self, extra: dict[str, str] | None = None) -> list[str]:
        args = ["--clearenv"]
        for key, value in self.env(extra).items():
            args += ["--setenv", key, value]
        return args
