# expect: runtime_error
# what: tries the system calls that escapes are made of
import ctypes
import errno
import os

libc = ctypes.CDLL(None, use_errno=True)


def attempt(name, *args):
    r = getattr(libc, name)(*args)
    return errno.errorcode.get(ctypes.get_errno(), "?") if r == -1 else "allowed"


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    results = {
        "unshare(user)": attempt("unshare", 0x10000000),
        "unshare(mount)": attempt("unshare", 0x00020000),
        "unshare(net)": attempt("unshare", 0x40000000),
        "mount tmpfs": attempt("mount", b"none", b"/job", b"tmpfs", 0, None),
        "umount /proc": attempt("umount2", b"/proc", 2),
        "ptrace(attach 1)": attempt("ptrace", 16, 1, 0, 0),
        "chroot": attempt("chroot", b"/tmp"),
        "setuid(0)": attempt("setuid", 0),
        "setgroups": attempt("setgroups", 0, None),
        "sethostname": attempt("sethostname", b"x", 1),
    }
    if os.uname().machine == "x86_64":
        results.update({
            "clone3": attempt("syscall", 435, 0, 0),
            "keyctl": attempt("syscall", 250, 0, 0, 0, 0),
            "bpf": attempt("syscall", 321, 0, 0, 0),
            "perf_event_open": attempt("syscall", 298, 0, 0, -1, -1, 0),
            "userfaultfd": attempt("syscall", 323, 0),
            "io_uring_setup": attempt("syscall", 425, 1, 0),
            "setns": attempt("syscall", 308, 0, 0),
        })
    raise RuntimeError(f"ATTACK-RAN {results!r}")
