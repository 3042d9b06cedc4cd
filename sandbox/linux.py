"""Thin ctypes wrappers over the Linux calls the sandbox needs and Python lacks.

Used on both sides of the boundary: by the host (mounting job folders) and by the fork
server inside the sandbox (namespaces, mounts, capabilities, seccomp). Only the standard
library; every failure raises ``OSError`` with the call's name.
"""

from __future__ import annotations

import ctypes
import os

_libc = ctypes.CDLL(None, use_errno=True)

CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_REMOUNT = 0x20
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
MS_SLAVE = 1 << 19
MS_SHARED = 1 << 20

MNT_DETACH = 0x2
UMOUNT_NOFOLLOW = 0x8

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
PR_SET_CHILD_SUBREAPER = 36

CAP_LAST_CAP_GUESS = 63  # capabilities above the kernel's last one fail with EINVAL


def _check(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return result


def _b(s: str | None) -> bytes | None:
    return s.encode() if s is not None else None


def mount(source: str | None, target: str, fstype: str | None, flags: int,
          data: str | None = None) -> None:
    _check(_libc.mount(_b(source), _b(target), _b(fstype), ctypes.c_ulong(flags), _b(data)),
           f"mount {target}")


def umount(target: str, flags: int = MNT_DETACH | UMOUNT_NOFOLLOW) -> None:
    _check(_libc.umount2(_b(target), flags), f"umount {target}")


def unshare(flags: int) -> None:
    _check(_libc.unshare(flags), "unshare")


def prctl(option: int, arg2: int = 0, arg3: int = 0) -> int:
    return _check(_libc.prctl(option, ctypes.c_ulong(arg2), ctypes.c_ulong(arg3),
                              ctypes.c_ulong(0), ctypes.c_ulong(0)), f"prctl {option}")


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


def drop_capabilities() -> None:
    """Empty the bounding, ambient, effective, permitted and inheritable sets."""
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    for cap in range(CAP_LAST_CAP_GUESS + 1):
        try:
            prctl(PR_CAPBSET_DROP, cap)
        except OSError as e:
            if e.errno == 22:  # EINVAL: past the kernel's last capability
                break
            raise
    header = _CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (_CapData * 2)()
    _check(_libc.capset(ctypes.byref(header), data), "capset")


def capabilities_effective() -> int:
    """This process's effective capability mask, from /proc (for tests and checks)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("CapEff:"):
                return int(line.split()[1], 16)
    return 0


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def load_seccomp(bpf: bytes) -> None:
    """Install a classic-BPF seccomp program (8-byte instructions, as libseccomp exports
    them). Needs no_new_privs. Filters stack: an earlier one still applies."""
    if not bpf or len(bpf) % 8:
        raise ValueError("a seccomp program is a non-empty list of 8-byte instructions")
    buf = ctypes.create_string_buffer(bpf, len(bpf))
    prog = _SockFprog(len(bpf) // 8, ctypes.cast(buf, ctypes.c_void_p))
    _check(_libc.prctl(PR_SET_SECCOMP, ctypes.c_ulong(SECCOMP_MODE_FILTER),
                       ctypes.byref(prog), ctypes.c_ulong(0), ctypes.c_ulong(0)), "seccomp")


def pidfd_host_pid(pidfd: int) -> int:
    """The pid a pidfd refers to, as seen from this process's pid namespace."""
    with open(f"/proc/self/fdinfo/{pidfd}") as f:
        for line in f:
            if line.startswith("Pid:"):
                pid = int(line.split()[1])
                if pid <= 0:
                    raise ProcessLookupError("the process has exited")
                return pid
    raise OSError("no Pid in the pidfd's fdinfo")


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (one of another user's counts)."""
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
