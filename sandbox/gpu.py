"""NVIDIA devices for CUDA jobs: which nodes to bind, and one grading job per GPU.

Found without initialising CUDA (the worker must not: a forked template would inherit a
broken driver state): from ``/proc/driver/nvidia/gpus/*/information`` and ``/dev``.

A CUDA job's sandbox gets the control nodes (``nvidiactl``, ``nvidia-uvm``,
``nvidia-uvm-tools``, ``nvidia-modeset``, ``nvidia-caps/*``) and the node of the one GPU it
holds, ``/dev/nvidiaN``: the others are not in its ``/dev``, so it cannot use them even if
it sets ``CUDA_VISIBLE_DEVICES`` itself.

A GPU has no hard per-process memory cap without MIG, so it is leased to one grading job
at a time: an ``flock`` on ``/run/torch-judge/gpu-N.lock`` (across workers on the machine),
held while any runner of that grading job is alive. The submission's and the reference's
runners of one job share the lease (their folders share a parent, the job's root), so they
never wait for each other.
"""

from __future__ import annotations

import fcntl
import glob
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

LOCKS = Path("/run/torch-judge")
CONTROL_NODES = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools",
                 "/dev/nvidia-modeset")


@dataclass(frozen=True)
class Gpu:
    minor: int
    uuid: str
    name: str

    @property
    def node(self) -> str:
        return f"/dev/nvidia{self.minor}"


def devices() -> list[Gpu]:
    """The NVIDIA GPUs whose device node exists, from the driver's /proc files."""
    found = []
    for info in sorted(glob.glob("/proc/driver/nvidia/gpus/*/information")):
        try:
            text = Path(info).read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
        fields = {k.strip(): v.strip() for k, v in fields.items()}
        minor = fields.get("Device Minor", "")
        if minor.isdigit() and os.path.exists(f"/dev/nvidia{minor}"):
            found.append(Gpu(int(minor), fields.get("GPU UUID", ""), fields.get("Model", "")))
    return found


def device_nodes(gpu: Gpu) -> list[str]:
    """The nodes a job on ``gpu`` gets with ``--dev-bind``."""
    nodes = [n for n in CONTROL_NODES if os.path.exists(n)]
    nodes += sorted(glob.glob("/dev/nvidia-caps/*"))
    return [*nodes, gpu.node]


class Lease:
    def __init__(self, leases: GpuLeases, key: str, gpu: Gpu) -> None:
        self.leases, self.key, self.gpu = leases, key, gpu
        self.released = False

    def release(self) -> None:
        if not self.released:
            self.released = True
            self.leases._drop(self.key)


class GpuLeases:
    """In-process reference counts over cross-process ``flock``s, one per GPU."""

    def __init__(self, gpus: list[Gpu]) -> None:
        self.gpus = gpus
        self.lock = threading.Condition()
        self.held: dict[str, tuple[Gpu, int, int]] = {}  # key -> (gpu, lock fd, count)

    def acquire(self, key: str, timeout_s: float = 3600.0) -> Lease:
        """A lease on a GPU for grading job ``key``: the one it already holds, or the
        first free one (waiting for one, up to ``timeout_s``)."""
        deadline = time.monotonic() + timeout_s
        with self.lock:
            while True:
                if key in self.held:
                    held, fd, count = self.held[key]
                    self.held[key] = (held, fd, count + 1)
                    return Lease(self, key, held)
                taken = {g.minor for g, _, _ in self.held.values()}
                for gpu in self.gpus:
                    if gpu.minor in taken:
                        continue
                    lock = self._try_lock(gpu)
                    if lock is not None:
                        self.held[key] = (gpu, lock, 1)
                        return Lease(self, key, gpu)
                if time.monotonic() > deadline:
                    raise TimeoutError("no GPU became free")
                self.lock.wait(0.2)  # another worker may free one: poll

    @staticmethod
    def _try_lock(gpu: Gpu) -> int | None:
        LOCKS.mkdir(parents=True, exist_ok=True)
        fd = os.open(LOCKS / f"gpu-{gpu.minor}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC,
                     0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            os.close(fd)
            return None

    def _drop(self, key: str) -> None:
        with self.lock:
            gpu, fd, count = self.held[key]
            if count > 1:
                self.held[key] = (gpu, fd, count - 1)
                return
            del self.held[key]
            os.close(fd)  # releases the flock
            self.lock.notify_all()


def job_key(job_dir: Path) -> str:
    """The grading job a runner's folder belongs to (``judge-XXXX`` of ``judge-XXXX/sub``)."""
    return os.path.dirname(os.path.abspath(job_dir))
