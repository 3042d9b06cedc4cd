"""What a sandboxed runner is: its uid, capabilities, filters, namespaces, environment and
file system — on the warm and the cold path alike."""

from __future__ import annotations

import os

import pytest

from sandbox.launch import Limits
from tests.sandbox.helpers import call

pytestmark = pytest.mark.sandbox

IDENTITY = """
import os, socket
def f():
    status = dict(l.split(':', 1) for l in open('/proc/self/status'))
    return {k: status[k].strip() for k in ('Uid', 'Gid', 'Groups', 'CapEff', 'CapPrm',
                                           'CapBnd', 'CapAmb', 'NoNewPrivs', 'Seccomp')}
"""


def test_runs_as_the_slot_uid_without_privileges(any_launcher, tmp_path):
    got = call(any_launcher, tmp_path, IDENTITY)
    uid = str(any_launcher.uid)
    assert got["Uid"].split() == [uid] * 4 and got["Gid"].split() == [uid] * 4
    assert got["Groups"] == ""
    for caps in ("CapEff", "CapPrm", "CapBnd", "CapAmb"):
        assert int(got[caps], 16) == 0, (caps, got)
    assert got["NoNewPrivs"] == "1"
    assert got["Seccomp"] == "2"  # filter mode


ENVIRONMENT = """
import os
def f():
    return dict(os.environ), os.getcwd(), os.uname().nodename
"""


def test_environment_is_cleared(any_launcher, tmp_path, monkeypatch):
    # Set after the launcher started: a cold runner would see it if env leaked through.
    monkeypatch.setenv("JUDGE_WORKER_TOKEN", "tj-secret-token-for-the-test")
    env, cwd, hostname = call(any_launcher, tmp_path, ENVIRONMENT)
    assert "JUDGE_WORKER_TOKEN" not in env
    assert not any("tj-secret" in v for v in env.values())
    assert set(env) <= {"PATH", "LANG", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "HOME", "USER",
                        "LOGNAME", "TMPDIR", "PWD", "PYTHONPATH", "PYTHONNOUSERSITE",
                        "PYTHONDONTWRITEBYTECODE", "PYTHONHASHSEED", "PYTHONUNBUFFERED",
                        # set by torch._dynamo's import (warm: preloaded by the template)
                        "TORCHINDUCTOR_CACHE_DIR",
                        # the interpreter's libpython where the layout moved it
                        "LD_LIBRARY_PATH"}
    assert env.get("TORCHINDUCTOR_CACHE_DIR", "/tmp/").startswith("/tmp/")
    assert env.get("LD_LIBRARY_PATH", "/opt/python/lib") == "/opt/python/lib"
    assert cwd == "/job"
    assert hostname == "sandbox"


NAMESPACES = """
import os, socket
def f():
    pids = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())
    with open('/proc/net/dev') as fh:
        devices = [l.split(':')[0].strip() for l in fh.readlines()[2:]]
    try:
        socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        inet = 'allowed'
    except OSError as e:
        inet = e.errno
    return pids, devices, inet, open('/proc/self/cgroup').read()
"""


def test_own_namespaces_and_no_network(any_launcher, tmp_path):
    pids, devices, inet, cgroups = call(any_launcher, tmp_path, NAMESPACES)
    assert len(pids) < 10, pids  # only the job's own processes
    assert devices in ([], ["lo"])  # a fresh network namespace: no way out
    assert inet == 97  # EAFNOSUPPORT from the seccomp filter
    assert all(line.endswith(":/") for line in cgroups.split()), cgroups


FILES = """
import os
def f():
    out = {}
    for path in ('/usr/x', '/x', '/etc/x', '/opt/torch-judge/sandbox/x', '/proc/sys/kernel/x'):
        try:
            open(path, 'w').write('x')
            out[path] = 'written'
        except OSError as e:
            out[path] = e.errno
    for path in ('/tmp/x', '/job/x', '/dev/shm/x'):
        open(path, 'w').write('x')
        out[path] = 'written'
    out['root'] = sorted(os.listdir('/'))
    out['jobs'] = os.listdir('/jobs') if os.path.exists('/jobs') else None
    return out
"""


def test_read_only_root_and_private_writable_places(any_launcher, tmp_path):
    got = call(any_launcher, tmp_path, FILES)
    for path in ("/usr/x", "/x", "/etc/x", "/opt/torch-judge/sandbox/x", "/proc/sys/kernel/x"):
        assert got[path] in (13, 30, 2), (path, got[path])  # EACCES, EROFS, ENOENT
    for path in ("/tmp/x", "/job/x", "/dev/shm/x"):
        assert got[path] == "written"
    assert got["jobs"] in (None, [])  # the other jobs' folders are not there
    # Only what the runner needs: no /home, /var, /srv, /mnt, no project folder.
    assert not {"home", "var", "srv", "mnt", "boot"} & set(got["root"]), got["root"]


SIZES = """
import errno
def f(path, mb):
    try:
        with open(path, 'wb') as fh:
            for _ in range(mb + 8):
                fh.write(b'x' * (1 << 20))
                fh.flush()
    except OSError as e:
        return errno.errorcode[e.errno]
    return 'no limit'
"""


@pytest.mark.parametrize("where", ["/tmp/big", "/dev/shm/big", "/job/big"])
def test_writable_places_are_size_limited(any_launcher, tmp_path, where):
    limits = Limits(tmp_mb=8, shm_mb=4, job_mb=8, file_mb=64)
    assert call(any_launcher, tmp_path, SIZES, where, 16, limits=limits) == "ENOSPC"


def test_file_size_rlimit(any_launcher, tmp_path):
    limits = Limits(file_mb=2, tmp_mb=16)
    assert call(any_launcher, tmp_path, SIZES, "/tmp/big", 4, limits=limits) == "EFBIG"


SYSCALLS = """
import ctypes, errno, os, socket
libc = ctypes.CDLL(None, use_errno=True)
def attempt(name, *args):
    r = getattr(libc, name)(*args)
    return errno.errorcode.get(ctypes.get_errno(), '?') if r == -1 else 'allowed'
def f():
    return {
        'ptrace': attempt('ptrace', 16, 1, 0, 0),          # PTRACE_ATTACH to pid 1
        'unshare_user': attempt('unshare', 0x10000000),
        'unshare_mount': attempt('unshare', 0x00020000),
        'mount': attempt('mount', b'none', b'/tmp', b'tmpfs', 0, None),
        'clone3': attempt('syscall', 435, 0, 0),
        'keyctl': attempt('syscall', 250, 0, 0, 0, 0),   # x86_64 keyctl
        'bpf': attempt('syscall', 321, 0, 0, 0),
        'chroot': attempt('chroot', b'/tmp'),
        'setuid0': attempt('setuid', 0),
    }
"""


def test_seccomp_and_missing_privileges_deny_escapes(any_launcher, tmp_path):
    if os.uname().machine != "x86_64":
        pytest.skip("syscall numbers below are x86_64's")
    got = call(any_launcher, tmp_path, SYSCALLS)
    assert "allowed" not in got.values(), got
    assert got["clone3"] == "ENOSYS"


TORCH_WORK = """
import os, subprocess, threading, torch
def f():
    x = torch.randn(64, 64)
    y = (x @ x.T).sum().item()
    t = threading.Thread(target=lambda: None); t.start(); t.join()
    out = subprocess.run(['/bin/echo', 'child'], capture_output=True, text=True).stdout
    pid = os.fork()
    if pid == 0:
        os._exit(7)
    return y == y, out.strip(), os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
"""


def test_ordinary_work_still_works(any_launcher, tmp_path):
    assert list(call(any_launcher, tmp_path, TORCH_WORK)) == [True, "child", 7]


INIT_FDS = """
import os
def f():
    return sorted(os.listdir('/proc/1/fd'))
"""


def test_the_warm_jobs_init_holds_nothing_of_the_template(warm_launcher, tmp_path):
    assert call(warm_launcher, tmp_path, INIT_FDS) == ["0", "1", "2"]  # /dev/null, thrice
