"""The seccomp deny-lists, compiled to BPF with libseccomp (through ctypes, no Python
dependency: Debian's ``libseccomp2`` is enough).

A deny-list, not an allow-list: torch, its BLAS and (on GPU machines) the CUDA driver
make syscalls no list can predict, and an allow-list that misses one turns a correct
submission into a runtime error. What is denied is what a sandboxed process has no use
for and what kernel exploits and escapes are made of:

* debugging other processes (``ptrace``, ``process_vm_*``, ``pidfd_getfd``, ``kcmp``);
* new namespaces and mounts (``unshare``, ``setns``, ``clone`` with a ``CLONE_NEW*`` flag,
  the whole mount API, ``pivot_root``, ``chroot``) — ``clone3`` answers ENOSYS, since its
  flags sit in memory a filter cannot read, and the C library then falls back to ``clone``;
* kernel attack surface that unprivileged code rarely needs (``bpf``, ``perf_event_open``,
  ``userfaultfd``, ``io_uring_*``, the key-ring calls, file handles);
* administration (modules, ``kexec``, ``reboot``, swap, clocks, host names, ``acct``…);
* network: ``socket`` for any family but ``AF_UNIX`` (the sandbox has no network device
  either; this keeps even a loopback in a fresh namespace out of reach);
* ``ioctl(TIOCSTI/TIOCLINUX)``, which push keystrokes into a terminal.

Two programs: :func:`job_filter` for the submission's processes, and :func:`template_filter`
for the warm template (see ``forkserver.py``), which must still create namespaces and mount
file systems for each job before it installs the job filter on top (filters stack: a call
must pass both).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import functools
import os

ACT_ALLOW = 0x7FFF0000


def ACT_ERRNO(code: int) -> int:
    return 0x00050000 | (code & 0xFFFF)


CMP_NE = 1
CMP_MASKED_EQ = 7

AF_UNIX = 1
TIOCSTI = 0x5412
TIOCLINUX = 0x541C
CLONE_NEW_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000,
                   0x40000000)

# Denied everywhere (EPERM). Names the running architecture lacks are skipped.
DENIED = (
    # other processes
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp",
    # namespaces, roots
    "pivot_root", "chroot",
    # kernel attack surface
    "bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter",
    "io_uring_register", "add_key", "request_key", "keyctl", "name_to_handle_at",
    "open_by_handle_at", "fanotify_init", "lookup_dcookie", "uselib", "memfd_secret",
    # administration
    "init_module", "finit_module", "delete_module", "create_module", "kexec_load",
    "kexec_file_load", "reboot", "swapon", "swapoff", "syslog", "acct", "quotactl",
    "quotactl_fd", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
    "sethostname", "setdomainname", "iopl", "ioperm", "vhangup", "nfsservctl", "_sysctl",
)
# Denied to jobs; the template needs them to build each job's namespaces.
MOUNT_CALLS = ("mount", "umount2", "unshare", "setns", "open_tree", "move_mount", "fsopen",
               "fsconfig", "fsmount", "fspick", "mount_setattr")


class _ArgCmp(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("datum_a", ctypes.c_uint64),
                ("datum_b", ctypes.c_uint64)]


@functools.cache
def _lib() -> ctypes.CDLL:
    path = ctypes.util.find_library("seccomp") or "libseccomp.so.2"
    lib = ctypes.CDLL(path, use_errno=True)
    lib.seccomp_init.argtypes = (ctypes.c_uint32,)
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_release.argtypes = (ctypes.c_void_p,)
    lib.seccomp_release.restype = None
    lib.seccomp_syscall_resolve_name.argtypes = (ctypes.c_char_p,)
    lib.seccomp_syscall_resolve_name.restype = ctypes.c_int
    lib.seccomp_rule_add_array.argtypes = (ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int,
                                           ctypes.c_uint, ctypes.POINTER(_ArgCmp))
    lib.seccomp_rule_add_array.restype = ctypes.c_int
    lib.seccomp_export_bpf.argtypes = (ctypes.c_void_p, ctypes.c_int)
    lib.seccomp_export_bpf.restype = ctypes.c_int
    return lib


def available() -> bool:
    try:
        _lib()
        return True
    except OSError:
        return False


class _Filter:
    def __init__(self) -> None:
        self.lib = _lib()
        self.ctx = self.lib.seccomp_init(ACT_ALLOW)
        if not self.ctx:
            raise OSError("seccomp_init failed")

    def rule(self, action: int, name: str, *cmps: tuple[int, int, int, int]) -> None:
        nr = self.lib.seccomp_syscall_resolve_name(name.encode())
        if nr < 0:
            return  # not a syscall on this architecture
        args = (_ArgCmp * max(1, len(cmps)))(*[_ArgCmp(*c) for c in cmps])
        rc = self.lib.seccomp_rule_add_array(self.ctx, action, nr, len(cmps), args)
        if rc < 0:
            raise OSError(-rc, f"seccomp rule for {name}: {os.strerror(-rc)}")

    def export(self) -> bytes:
        fd = os.memfd_create("seccomp-bpf")
        try:
            rc = self.lib.seccomp_export_bpf(self.ctx, fd)
            if rc < 0:
                raise OSError(-rc, f"seccomp_export_bpf: {os.strerror(-rc)}")
            size = os.lseek(fd, 0, os.SEEK_END)
            return os.pread(fd, size, 0)
        finally:
            os.close(fd)
            self.lib.seccomp_release(self.ctx)


def _build(job: bool) -> bytes:
    f = _Filter()
    eperm = ACT_ERRNO(errno.EPERM)
    for name in DENIED + (MOUNT_CALLS if job else ()):
        f.rule(eperm, name)
    for flag in CLONE_NEW_FLAGS:
        f.rule(eperm, "clone", (0, CMP_MASKED_EQ, flag, flag))
    f.rule(ACT_ERRNO(errno.ENOSYS), "clone3")
    f.rule(ACT_ERRNO(errno.EAFNOSUPPORT), "socket", (0, CMP_NE, AF_UNIX, 0))
    for request in (TIOCSTI, TIOCLINUX):
        f.rule(eperm, "ioctl", (1, CMP_MASKED_EQ, 0xFFFFFFFF, request))
    return f.export()


@functools.cache
def job_filter() -> bytes:
    """The BPF program every submission process runs under."""
    return _build(job=True)


@functools.cache
def template_filter() -> bytes:
    """The warm template's program: the job filter less the namespace and mount calls."""
    return _build(job=False)
