"""Every limit ends in the Exit reason (and so the verdict) it should, and a runner's whole
process tree goes with it."""

from __future__ import annotations

import time

import pytest

from judge.session import RunnerLost, SubmissionError
from judge.verdict import Verdict
from sandbox.launch import Limits
from tests.sandbox.helpers import call, job_folder, leftovers, processes_of, session

pytestmark = pytest.mark.sandbox

FOREVER = """
import os, signal, time
def busy():
    while True:
        pass
def sleep():
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGXCPU):
        signal.signal(s, signal.SIG_IGN)
    while True:
        time.sleep(1)
def shout():
    while True:
        print('x' * 1000)
"""


def lost(launcher, tmp_path, code: str, fn: str, limits: Limits, device: str = "cpu"):
    folder = job_folder(tmp_path, code)
    with session(launcher, folder, limits, names=(fn,), device=device) as s:
        started = time.monotonic()
        with pytest.raises(RunnerLost) as info:
            s.call("sub", fn, [], {})
        return info.value, time.monotonic() - started


def test_cpu_time_limit(any_launcher, tmp_path):
    # A cold runner spends its first second of CPU importing torch; a warm one does not.
    cpu_s = 1.0 if any_launcher.template is not None else 5.0
    e, took = lost(any_launcher, tmp_path, FOREVER, "busy", Limits(cpu_s=cpu_s))
    assert e.exit is not None and e.exit.reason == "cpu", e.exit
    assert e.verdict is Verdict.TIME_LIMIT_EXCEEDED
    assert took < cpu_s + 8


def test_wall_clock_kills_a_sleeper_that_ignores_signals(any_launcher, tmp_path):
    # The runner's lifetime clock starts at its start: a cold one imports torch first.
    lifetime = 1.5 if any_launcher.template is not None else 20.0
    e, took = lost(any_launcher, tmp_path, FOREVER, "sleep", Limits(lifetime_s=lifetime))
    assert e.exit is not None and e.exit.reason == "wall", e.exit
    assert e.verdict is Verdict.TIME_LIMIT_EXCEEDED
    assert took < lifetime + 5


def test_output_limit(any_launcher, tmp_path):
    e, took = lost(any_launcher, tmp_path, FOREVER, "shout", Limits(output_bytes=64 * 1024))
    assert e.exit is not None and e.exit.reason == "output", e.exit
    assert e.verdict is Verdict.OUTPUT_LIMIT_EXCEEDED
    assert took < 10


GREEDY = """
def f(mb):
    chunks = []
    for _ in range(mb):
        chunks.append(bytearray(1 << 20))
    return len(chunks)
"""


def test_address_space_limit_is_a_memory_error(any_launcher, tmp_path):
    folder = job_folder(tmp_path, GREEDY)
    with session(any_launcher, folder, Limits(memory_mb=1536)) as s, \
            pytest.raises(SubmissionError) as info:
        s.call("sub", "f", [4096], {})
    assert info.value.is_memory, info.value


def test_cgroup_memory_limit_without_address_space_limit(any_launcher, tmp_path):
    """CUDA jobs get no RLIMIT_AS (CUDA reserves huge ranges): the cgroup OOM killer ends
    them, and that must read as a memory verdict. Here on the CPU: device="cuda" without
    a GPU takes the same path."""
    if any_launcher.hierarchy is None:
        pytest.skip(f"no cgroups here: {any_launcher.applied.get('degraded')}")
    limits = Limits(memory_mb=256, tmp_mb=16, shm_mb=4, job_mb=16)  # cgroup: 256+36+128 MiB
    e, _ = lost(any_launcher, tmp_path, GREEDY.replace("def f(mb)", "def g(mb=2048)"), "g",
                limits, device="cuda")
    assert e.exit is not None and e.exit.reason == "memory", e.exit
    assert e.verdict is Verdict.MEMORY_LIMIT_EXCEEDED


COUNTS = """
import errno, os, time
def procs():
    made = 0
    while True:
        try:
            pid = os.fork()
        except OSError as e:
            return made, errno.errorcode[e.errno]
        if pid == 0:
            time.sleep(60)
            os._exit(0)
        made += 1
def files():
    held = []
    while True:
        try:
            held.append(open('/dev/null'))
        except OSError as e:
            return len(held), errno.errorcode[e.errno]
"""


def test_process_limit(any_launcher, tmp_path):
    limits = Limits(nproc=20)
    made, err = call(any_launcher, tmp_path, COUNTS, limits=limits, fn="procs")
    assert err == "EAGAIN"
    assert made <= 20


def test_open_files_limit(any_launcher, tmp_path):
    held, err = call(any_launcher, tmp_path, COUNTS, limits=Limits(nofile=64), fn="files")
    assert err == "EMFILE" and held < 64


def test_a_second_job_is_not_starved_by_a_fork_bomb(warm_launcher, tmp_path):
    """RLIMIT_NPROC counts per user namespace: jobs of one slot do not share the count."""
    bomb = job_folder(tmp_path, COUNTS)
    with session(warm_launcher, bomb, Limits(nproc=20), names=("procs",)) as s:
        made, err = s.call("sub", "procs", [], {}).value
        assert err == "EAGAIN" and made <= 20
        # The bomb's processes are still alive while this session is: another job starts.
        made2, err2 = call(warm_launcher, tmp_path, COUNTS, limits=Limits(nproc=20), fn="procs")
        assert err2 == "EAGAIN" and made2 >= 15


DAEMON = """
import os, time
def f(path):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            while True:  # a daemon, detached from the runner, writing forever
                with open(path, 'a') as fh:
                    fh.write('.')
                time.sleep(0.05)
        os._exit(0)
    time.sleep(0.3)
    return os.path.getsize(path)
"""


def test_no_process_of_a_job_survives_it(any_launcher, tmp_path):
    before = processes_of(any_launcher.uid)
    folder = job_folder(tmp_path, DAEMON)
    with session(any_launcher, folder) as s:
        assert s.call("sub", "f", ["/job/beat"], {}).value > 0
    assert s.process is not None and not s.process.alive
    assert not leftovers(any_launcher, before)
    size = (folder / "beat").stat().st_size
    time.sleep(0.3)
    assert (folder / "beat").stat().st_size == size  # nobody writes any more


def test_killing_a_runner_takes_its_tree(any_launcher, tmp_path):
    before = processes_of(any_launcher.uid)
    folder = job_folder(tmp_path, DAEMON)
    with session(any_launcher, folder) as s:
        s.call("sub", "f", ["/job/beat"], {})
        assert leftovers(any_launcher, before, grace_s=0)  # the daemon runs
        ended = s.kill()
    assert ended is not None and ended.reason == "killed"
    assert not leftovers(any_launcher, before)
