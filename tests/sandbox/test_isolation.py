"""Jobs of one slot (same uid, same template) cannot see or touch each other."""

from __future__ import annotations

import pytest

from tests.sandbox.helpers import job_folder, session

pytestmark = pytest.mark.sandbox

VICTIM = """
import os, socket
listener = None
def settle(secret):
    global listener
    for path in ('/tmp/secret', '/dev/shm/secret', '/job/secret'):
        with open(path, 'w') as fh:
            fh.write(secret)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind('\\0tj-victim')  # an abstract socket: scoped by network namespace
    listener.listen(1)
    return os.getpid()
def check():
    return [open(p).read() for p in ('/tmp/secret', '/dev/shm/secret', '/job/secret')]
"""

INTRUDER = """
import errno, os, signal, socket
def snoop(secret):
    found = []
    for root in ('/tmp', '/dev/shm', '/job', '/jobs', '/proc'):
        for dirpath, dirs, files in os.walk(root):
            if dirpath.startswith('/proc/') and dirpath.count('/') > 3:
                dirs[:] = []
            for name in files:
                path = os.path.join(dirpath, name)
                if path.startswith('/proc') and name not in ('environ', 'cmdline'):
                    continue
                try:
                    with open(path, 'rb') as fh:
                        if secret.encode() in fh.read(1 << 20):
                            found.append(path)
                except OSError:
                    pass
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect('\\0tj-victim')
        found.append('abstract socket')
    except OSError:
        pass
    pids = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())
    for pid in pids:
        if pid != os.getpid():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    return found, pids
def control(secret):
    with open('/tmp/own', 'w') as fh:
        fh.write(secret)
    return snoop(secret)[0]
"""


@pytest.mark.parametrize("intruder_path", ["warm", "cold"])
def test_jobs_cannot_see_or_signal_each_other(warm_launcher, cold_launcher, tmp_path,
                                              intruder_path):
    intruder_launcher = warm_launcher if intruder_path == "warm" else cold_launcher
    secret = "tj-isolation-secret-41af"
    victim = job_folder(tmp_path, VICTIM)
    with session(warm_launcher, victim, names=("settle", "check")) as v:
        v.call("sub", "settle", [secret], {})
        intruder = job_folder(tmp_path, INTRUDER)
        with session(intruder_launcher, intruder, names=("snoop", "control")) as i:
            found, pids = i.call("sub", "snoop", [secret], {}).value
            # The search does find the secret where it can be seen: in the job's own files.
            assert i.call("sub", "control", [secret], {}).value == ["/tmp/own"]
        assert found == []
        assert len(pids) < 10  # its own namespace's processes only
        # The victim is alive and untouched.
        assert v.alive
        assert v.call("sub", "check", [], {}).value == [secret] * 3


KILLERS = """
import os, signal
def group():
    os.killpg(0, signal.SIGKILL)  # its process group: were it shared, the template too
def everyone():
    try:
        os.kill(-1, signal.SIGKILL)  # every process it may signal, but itself and init
    except ProcessLookupError:
        pass  # there was none
    return sorted(int(p) for p in os.listdir('/proc') if p.isdigit())
"""


def test_signalling_its_group_or_everyone_reaches_no_other_job(warm_launcher, tmp_path):
    from judge.session import RunnerLost

    victim = job_folder(tmp_path, VICTIM)
    with session(warm_launcher, victim, names=("settle", "check")) as v:
        v.call("sub", "settle", ["still here"], {})
        killer = job_folder(tmp_path, KILLERS)
        with session(warm_launcher, killer, names=("group", "everyone")) as k:
            left = k.call("sub", "everyone", [], {}).value
            assert len(left) <= 2  # its init (which ignores it) and itself
            with pytest.raises(RunnerLost):
                k.call("sub", "group", [], {})
        assert v.call("sub", "check", [], {}).value == ["still here"] * 3
    assert warm_launcher.template is not None and warm_launcher.template.alive
