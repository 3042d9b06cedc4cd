"""What a sandbox sees: its read-only root, its environment, and the bwrap options for them.

The root holds only what the runner needs, all read-only, and nothing in it names a folder
of the host (issue 10: ``sys.prefix`` was the project's virtualenv, ``/proc/self/mountinfo``
showed the interpreter under ``/root``):

    /usr (+ the merged-usr links /bin, /lib, /lib64, /sbin), /etc/ld.so.cache
    /opt/python              the interpreter's installation (``sys.base_prefix``), unless
                             it lives under /usr (then it is simply there)
    /opt/venv/lib            the virtual environment's packages (``sys.prefix``), with a
    /opt/venv/pyvenv.cfg     pyvenv.cfg of our own (home = /opt/python/bin) and
    /opt/venv/bin/python     a link to the interpreter: ``sys.executable`` works inside
                             (a DataLoader's spawned workers start it)
    /opt/torch-judge/sandbox this package (a snapshot taken when the launcher started) —
                             not the project: ``judge/``, ``problems/`` (references, tests),
                             the database and the worker's token stay outside.

A bind mount of a host folder shows that folder's path in ``/proc/self/mountinfo`` (the
"root" field is the path within its file system), so each tree comes from a file system of
its own, made per launcher (:class:`Layers`): a read-only overlay of the host folder whose
lower layers are named by *relative* paths (``lowerdir=tree:empty``, which is all its
mount options show), and a small tmpfs for the package snapshot and the generated files.
The overlay also makes folders that the slot uid cannot reach on the host (a pyenv under
``/root``, 0700) readable inside: overlayfs reaches its layers with the mounter's rights.
Files that name the host folders for Python's sake are replaced: the editable install's
finder and ``.pth`` and every ``direct_url.json`` by empty files, ``_sysconfigdata`` by a
copy naming /opt/python. Left as they are: strings built into the interpreter's own files
(a pyenv build's RUNPATH, the Makefile under ``config-3.x``) say where it was built; an
interpreter installed under /usr or /opt says nothing a learner could use.

Where overlayfs is unavailable the trees are bind-mounted as they are (``/proc`` then
shows their host paths): logged as ``SANDBOX DEGRADED``.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import stat
import subprocess
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from sandbox import linux
from sandbox.launch import runner_env

log = logging.getLogger("sandbox.layout")
PACKAGE = Path(__file__).resolve().parent
INSIDE_ROOT = "/opt/torch-judge"
INSIDE_PYTHON = "/opt/python"
INSIDE_VENV = "/opt/venv"
LAYERS = Path("/run/torch-judge/layers")
VIEWS = Path("/run/torch-judge/views")
LAYER_SOURCE = "tj-layer"
MERGED_USR = ("bin", "lib", "lib32", "lib64", "libx32", "sbin")
USR = Path("/usr")


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
    """A read-only bind mount of ``path`` under VIEWS (the fallback without overlayfs, for
    a folder the slot uid cannot reach: bubblewrap opens its sources with that uid)."""
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


def under(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


@dataclass(frozen=True)
class Python:
    """Where this interpreter and its packages live on the host."""

    base: Path  # sys.base_prefix, resolved
    venv: Path | None  # sys.prefix when it is a virtual environment
    executable: str  # the name of sys.executable ("python")
    binary: str  # the name of the interpreter's binary in base/bin ("python3.11")

    @classmethod
    def current(cls) -> Python:
        base = Path(os.path.realpath(sys.base_prefix))
        prefix = Path(os.path.realpath(sys.prefix))
        import torch

        torch_at = Path(os.path.realpath(torch.__file__))
        if not (under(torch_at, prefix) or under(torch_at, base)):
            raise LayoutError(f"torch is installed at {torch_at.parent}, outside the "
                              f"interpreter ({base}) and its virtual environment ({prefix}): "
                              f"install it into the environment the judge runs in")
        binary = Path(os.path.realpath(sys.executable)).name
        return cls(base, None if prefix == base else prefix, Path(sys.executable).name, binary)

    @property
    def inside_base(self) -> str:
        return str(self.base) if under(self.base, USR) else INSIDE_PYTHON

    def inside_executable(self) -> str:
        if self.venv is not None:
            return f"{INSIDE_VENV}/bin/{self.executable}"
        return f"{self.inside_base}/bin/{self.binary}"


class Layers:
    """Trees of the host on file systems of their own, for one launcher (see the module's
    docstring): ``LAYERS/<tag>`` is a small tmpfs holding the package snapshot and the
    generated files, and the overlay mounts of the host folders, removed by :meth:`close`
    or, after a crash, by :func:`sweep` (``<tag>`` starts with the worker's pid)."""

    def __init__(self, tag: str) -> None:
        self.root = LAYERS / tag
        self.degraded: str | None = None
        for p in (LAYERS.parent, LAYERS):
            p.mkdir(exist_ok=True)
            os.chmod(p, 0o755)
        self.root.mkdir(mode=0o755)
        linux.mount("tj-layers", str(self.root), "tmpfs", linux.MS_NOSUID | linux.MS_NODEV,
                    "size=16m,nr_inodes=4096,mode=0755")
        src = self.root / ".src"  # the overlays' lower layers, by relative name
        src.mkdir(mode=0o700)
        (src / "empty").mkdir(mode=0o755)

    def tree(self, name: str, host: Path) -> Path:
        """``host`` read-only on a file system of its own (or, without overlayfs, the host
        folder itself, recorded in ``degraded``)."""
        target = self.root / name
        target.mkdir(mode=0o755)
        (self.root / ".src" / name).symlink_to(host)
        done = subprocess.run(
            ["mount", "-t", "overlay", LAYER_SOURCE, "-o",
             f"ro,nosuid,nodev,lowerdir={name}:empty", str(target)],
            cwd=self.root / ".src", capture_output=True, text=True, timeout=30)
        if done.returncode != 0:
            target.rmdir()
            self.degraded = (f"no overlayfs ({done.stderr.strip() or done.returncode}): the "
                             f"sandbox's /proc/self/mountinfo shows the host paths of the "
                             f"interpreter and its packages")
            return host
        return target

    def file(self, name: str, data: bytes) -> Path:
        path = self.root / name
        path.write_bytes(data)
        os.chmod(path, 0o444)
        return path

    def snapshot(self, name: str, folder: Path) -> Path:
        """A copy of the package's Python files, as they are now."""
        target = self.root / name
        target.mkdir(mode=0o755)
        for source in sorted(folder.glob("*.py")):
            shutil.copyfile(source, target / source.name)
            os.chmod(target / source.name, 0o444)
        return target

    def close(self) -> None:
        unmount_under(self.root)


def unmount_under(folder: Path) -> None:
    """Unmount ``folder`` and everything mounted below it (deepest first), then remove it."""
    with open("/proc/self/mountinfo") as f:
        targets = [line.split()[4] for line in f]
    for target in sorted((t for t in targets if under(Path(t), folder)), key=len,
                         reverse=True):
        try:
            linux.umount(target)
        except OSError as e:
            if e.errno not in (22, 2):  # EINVAL: not a mount point; ENOENT: gone
                log.warning("cannot unmount %s: %s", target, e)
    with contextlib.suppress(OSError):
        folder.rmdir()


def sweep() -> None:
    """Remove the layers of launchers whose worker is no longer running."""
    if not LAYERS.is_dir():
        return
    for entry in LAYERS.iterdir():
        owner = entry.name.split("-", 1)[0]
        if owner.isdigit() and not linux.pid_alive(int(owner)):
            unmount_under(entry)


def _masked(site: Path, secrets: list[Path]) -> list[Path]:
    """Files of a site-packages folder that name host folders for Python's sake: an
    editable install's finder and .pth, and every ``direct_url.json`` (file://...)."""
    found = [p for p in site.glob("__editable__*") if p.is_file()]
    found += [p for p in site.glob("*.egg-link") if p.is_file()]
    found += [p for p in site.glob("*.dist-info/direct_url.json") if p.is_file()]
    for pth in site.glob("*.pth"):
        text = pth.read_text(errors="replace")
        if any(str(s) in text for s in secrets):
            found.append(pth)
    return sorted(set(found))


@dataclass
class Layout:
    """The read-only binds and the environment, for one slot uid."""

    uid: int
    gid: int
    binds: list[tuple[Path, str]] = field(default_factory=list)  # (host source, inside)
    symlinks: list[tuple[str, str]] = field(default_factory=list)  # (target, inside)
    extra_env: dict[str, str] = field(default_factory=dict)
    views: list[str] = field(default_factory=list)  # descriptions of views made
    python: str = ""
    layers: Layers | None = None
    degraded: str | None = None

    @classmethod
    def build(cls, uid: int, gid: int, tag: str) -> Layout:
        """The layout for slot ``uid``, on layers named ``tag`` (needs root)."""
        if os.geteuid() != 0:
            raise LayoutError("the sandbox's layout is mounted as root")
        layout = cls(uid, gid, layers=Layers(tag))
        try:
            layout._system()
            layout._python(Python.current())
            layout.add(PACKAGE, f"{INSIDE_ROOT}/sandbox", snapshot=True)
        except BaseException:
            layout.close()
            raise
        if layout.layers is not None:
            layout.degraded = layout.layers.degraded
        return layout

    def _system(self) -> None:
        self.binds.append((USR, "/usr"))
        for name in MERGED_USR:
            host = Path("/") / name
            if host.is_symlink():
                self.symlinks.append((os.readlink(host), f"/{name}"))
            elif host.is_dir():
                self._bind(host, f"/{name}")

    def _python(self, py: Python) -> None:
        hidden = [py.base, *([py.venv] if py.venv else []), PACKAGE.parent]
        inside_base = py.inside_base
        if inside_base != str(py.base):
            self.add(py.base, inside_base)
            for data in sorted(py.base.glob("lib/python3*/_sysconfigdata_*.py")):
                text = data.read_text(errors="replace").replace(str(py.base), inside_base)
                self._generated(f"{inside_base}/{data.relative_to(py.base)}", text.encode())
            if any(py.base.glob("lib/libpython*.so*")):
                # The binary's RUNPATH names the host folder: find libpython at ours.
                self.extra_env["LD_LIBRARY_PATH"] = f"{inside_base}/lib"
        if py.venv is not None:
            self.add(py.venv / "lib", f"{INSIDE_VENV}/lib")
            if (py.venv / "lib64").is_symlink():
                self.symlinks.append(("lib", f"{INSIDE_VENV}/lib64"))
            cfg = (f"home = {inside_base}/bin\ninclude-system-site-packages = false\n"
                   f"version = {sysconfig.get_python_version()}\n")
            self._generated(f"{INSIDE_VENV}/pyvenv.cfg", cfg.encode())
            self.symlinks.append((f"{inside_base}/bin/{py.binary}", py.inside_executable()))
        self._mask(Path(sysconfig.get_paths()["purelib"]), hidden, py)
        self.python = py.inside_executable()

    def _mask(self, site: Path, hidden: list[Path], py: Python) -> None:
        inside = _inside(site, py)
        if inside is None or not site.is_dir():
            return
        for path in _masked(site, hidden):
            self._generated(f"{inside}/{path.relative_to(site)}", b"")

    def _generated(self, inside: str, data: bytes) -> None:
        """A file of ours at ``inside``, over the host's."""
        assert self.layers is not None
        name = "file-" + hashlib.sha256(inside.encode()).hexdigest()[:16]
        self.binds.append((self.layers.file(name, data), inside))

    def add(self, host: Path, inside: str, *, snapshot: bool = False) -> None:
        """``host`` at ``inside``, on a file system of its own where layers are in use."""
        if self.layers is not None:
            name = inside.strip("/").replace("/", "-")
            source = (self.layers.snapshot(name, host) if snapshot
                      else self.layers.tree(name, host))
            if source != host:
                self.binds.append((source, inside))
                return
        self._bind(host, inside)

    def _bind(self, host: Path, inside: str) -> None:
        if os.geteuid() == 0 and not reachable(host, self.uid, self.gid):
            self.views.append(f"{host} (through {_view(host)})")
            host = _view(host)
        self.binds.append((host, inside))

    def close(self) -> None:
        if self.layers is not None:
            self.layers.close()
            self.layers = None

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        return runner_env({"PYTHONPATH": INSIDE_ROOT, "PYTHONNOUSERSITE": "1", "HOME": "/tmp",
                           "TMPDIR": "/tmp", "USER": "sandbox", "LOGNAME": "sandbox",
                           **self.extra_env, **(extra or {})})

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


def _inside(path: Path, py: Python) -> str | None:
    """Where host ``path`` (in the interpreter or the venv) appears inside."""
    path = Path(os.path.realpath(path))
    if py.venv is not None and under(path, py.venv / "lib"):
        return str(PurePosixPath(INSIDE_VENV, "lib", path.relative_to(py.venv / "lib")))
    if under(path, py.base):
        return str(PurePosixPath(py.inside_base, path.relative_to(py.base)))
    return None
