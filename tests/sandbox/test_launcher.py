"""The launcher as the judge uses it: the default, its report, its recovery, its cleanup."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from judge.grader import Options, grade
from judge.package import load_problem
from judge.verdict import Verdict
from tests.sandbox.helpers import ROOT, call, job_mounts, leftovers, processes_of

pytestmark = pytest.mark.sandbox

PADDING = ROOT / "problems" / "padding-collate"


@pytest.mark.slow
def test_cli_grades_in_the_sandbox_by_default(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "JUDGE_NO_SANDBOX"}
    env["JUDGE_SANDBOX_SLOT"] = str(7)
    done = subprocess.run([sys.executable, "-m", "judge", "grade", str(PADDING),
                           str(PADDING / "reference.py"), "--json", "--no-throughput"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["isolation"] == "bwrap"
    assert report["verdict"] == "accepted"
    assert "SANDBOX DISABLED" not in done.stderr


def test_the_grader_reports_bwrap_and_cleans_up(warm_launcher, tmp_path):
    problem = load_problem(PADDING)
    before = processes_of(warm_launcher.uid)
    report = grade(problem, problem.read("reference.py"), warm_launcher,
                   Options(throughput=False, jobs_root=tmp_path))
    assert report.verdict is Verdict.ACCEPTED, report.message
    assert report.isolation == "bwrap"
    assert not leftovers(warm_launcher, before)
    assert warm_launcher.jobdirs is not None
    warm_launcher.jobdirs.collect()
    assert not [m for m in job_mounts() if m.startswith(str(tmp_path))]
    assert list(tmp_path.iterdir()) == []  # the grader's folders are gone too
    hierarchy = warm_launcher.hierarchy
    if hierarchy is not None:
        mine = f"{os.getpid()}-{warm_launcher.slot}-"
        assert not [g for g in hierarchy.memory.iterdir() if g.name.startswith(mine)]


def test_a_dead_template_is_replaced(tmp_path):
    from tests.sandbox.helpers import make_launcher

    launcher = make_launcher()
    try:
        template = launcher.template
        assert template is not None
        template.wait_ready()
        os.killpg(template.proc.pid, signal.SIGKILL)
        template.proc.wait(5)
        assert call(launcher, tmp_path, "def f():\n    return 42\n") == 42
        assert launcher.template is not template and launcher.template.alive
    finally:
        launcher.close()


def descendants(pid: int) -> set[int]:
    """``pid`` and every live process below it."""
    children: dict[int, list[int]] = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(int(entry))
    found, todo = set(), [pid]
    while todo:
        p = todo.pop()
        found.add(p)
        todo += children.get(p, [])
    return found


def test_closing_the_launcher_leaves_nothing(tmp_path):
    from tests.sandbox.helpers import make_launcher

    launcher = make_launcher()
    launcher.template.wait_ready()
    call(launcher, tmp_path, "def f():\n    return 1\n")
    tree = descendants(launcher.template.proc.pid)
    assert len(tree) >= 3  # bwrap, its init, the template
    launcher.close()
    deadline = time.monotonic() + 10  # reaping can lag on a loaded machine; poll, don't guess
    while tree & descendants(1) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not tree & descendants(1)  # none of them is alive anywhere


def test_printed_output_lands_under_its_own_case(any_launcher, tmp_path):
    """In the sandbox too (warm and cold runners), each public case shows what its own
    call printed, on stdout and stderr, also when the call raised."""
    from tests.conftest import write_problem
    from tests.core.test_grader import (
        MANY_PUBLIC,
        SAYS_WHICH_CALL,
        assert_each_case_shows_its_own_output,
    )

    problem = load_problem(write_problem(tmp_path / "problems", tests=MANY_PUBLIC))
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    for _ in range(2):
        report = grade(problem, SAYS_WHICH_CALL, any_launcher,
                       Options(throughput=False, jobs_root=jobs))
        assert report.isolation == "bwrap"
        assert_each_case_shows_its_own_output(report)


def test_each_worker_slot_runs_as_its_own_uid():
    """`judge worker --slot N` (what serve starts for worker N) runs jobs as uid
    UID_BASE + N, so two workers' jobs never share a uid."""
    from judge.isolation import make_launcher
    from sandbox.bwrap import UID_BASE

    launchers = [make_launcher(False, slot) for slot in (6, 7)]  # slots no test uses
    try:
        assert [launcher.uid for launcher in launchers] == [UID_BASE + 6, UID_BASE + 7]
    finally:
        for launcher in launchers:
            launcher.close()


HOG = """
import os
import time


def double(x):
    return x * 2


def start_hog():
    # A process left running beside the runner, in a new session (out of its process
    # group): it counts into a file as fast as it can.
    if os.fork() == 0:
        os.setsid()
        n = 0
        with open("count", "ab", buffering=0) as f:
            while True:
                n += 1
                if n % 20000 == 0:
                    f.write(b".")  # the file's size counts
    return True
"""


def test_a_paused_runner_and_what_it_left_running_stop(any_launcher, tmp_path):
    """While one side of a throughput comparison is timed the other side's runner is
    paused (judge/throughput.py): a process it left running, even in a session of its own,
    stops too, and goes on after."""
    from judge.throughput import paused
    from tests.conftest import double_it_sessions

    with double_it_sessions(any_launcher, tmp_path, HOG) as sessions:
        sub = sessions.get("sub")
        assert sub.call("sub", "start_hog", [], {}).value is True
        count = sessions.jobs["sub"].dir / "count"

        def counted() -> int:
            time.sleep(0.3)
            return count.stat().st_size if count.exists() else 0

        assert counted() < counted()  # running
        with paused(sub):
            time.sleep(0.05)
            assert counted() == counted()  # frozen, the escaped process included
        assert counted() < counted()  # running again


HEAP = """
import torch
def f():
    x = torch.empty(20 * 1024 * 1024 // 8, dtype=torch.int64)  # 20 MiB, as a big batch
    del x  # glibc's default would now serve blocks this size from the heap
    y = torch.empty(20 * 1024 * 1024 // 8, dtype=torch.int64)
    ptr = y.data_ptr()
    with open("/proc/self/maps") as maps:
        for line in maps:
            if line.rstrip().endswith("[heap]"):
                lo, hi = (int(v, 16) for v in line.split()[0].split("-"))
                return not lo <= ptr < hi
    return True
"""


def test_runners_map_big_tensors_afresh_whatever_was_freed_before(any_launcher, tmp_path):
    """Fixed malloc thresholds in every runner: a 20 MiB tensor is a fresh mapping even after
    one of that size was freed (glibc's adaptive default then serves it from the heap, and
    the same code's speed differed from one runner to the next)."""
    assert call(any_launcher, tmp_path, HEAP) is True


RESUMERS = """
import mmap
import os
import signal


def double(x):
    return x * 2


def start(kind):
    # Helpers in sessions of their own, each pinned to one CPU of its choice: "sigcont"
    # ones resume each other as fast as they can (a pause made of one SIGSTOP per pid
    # loses that race), "populate" ones sit in mmap(MAP_POPULATE) calls, which a pending
    # SIGSTOP waits for.
    cpus = sorted(os.sched_getaffinity(0))
    pids = []
    read, write = os.pipe()
    for index in range(4):
        pid = os.fork()
        if pid == 0:
            os.setsid()
            os.sched_setaffinity(0, {cpus[index % len(cpus)]})
            others = [int(p) for p in os.read(read, 100).split()]
            while True:
                if kind == "sigcont":
                    for other in others:
                        try:
                            os.kill(other, signal.SIGCONT)
                        except OSError:
                            pass
                else:
                    area = mmap.mmap(-1, 128 << 20, flags=mmap.MAP_PRIVATE
                                     | mmap.MAP_ANONYMOUS | mmap.MAP_POPULATE)
                    area.close()
        pids.append(pid)
    for _ in pids:
        os.write(write, " ".join(map(str, pids)).encode().ljust(100))
    return pids
"""


@pytest.mark.parametrize("kind", ["sigcont", "populate"])
def test_the_paused_side_is_frozen_kept_off_the_timing_core_and_its_cpu_counted(
        warm_launcher, tmp_path, kind):
    """The idle side of a speed comparison cannot undo its pause: helpers that SIGCONT each
    other, or sit in a long system call, are frozen by the cgroup freezer (confirmed before
    the other side is timed), are kept off the timing core by their cpuset meanwhile, and
    the CPU time they use in the window is counted, so a window in which they ran anyway is
    known (judge/throughput.py throws such a pair away)."""
    from judge.throughput import TIMING_CPU, paused
    from sandbox.cgroup import parse_cpus
    from tests.conftest import double_it_sessions

    if warm_launcher.hierarchy is None or warm_launcher.hierarchy.freezer is None:
        pytest.skip("no cgroup freezer here")
    with double_it_sessions(warm_launcher, tmp_path, RESUMERS) as sessions:
        sub = sessions.get("sub")
        assert len(sub.call("sub", "start", [kind], {}).value) == 4
        group = sub.process.group
        helpers = group.pids()  # as the host numbers them
        assert len(helpers) >= 5
        time.sleep(0.2)
        for _ in range(3):
            with paused(sub, away_from=TIMING_CPU) as window:
                time.sleep(0.1)
                if len(os.sched_getaffinity(0)) > 1:
                    for pid in helpers:
                        assert TIMING_CPU not in os.sched_getaffinity(pid)
            assert window.ran_s is not None
            # Stopped, and nothing ran; or not known to be stopped, and then counted.
            assert (window.stopped and not window.disturbed) or (
                not window.stopped and window.disturbed), window
            if kind == "sigcont":
                assert window.stopped and window.ran_s < 0.001, window
        if group.cpuset is not None:  # let go again: everywhere it may run
            assert parse_cpus((group.cpuset / "cpuset.cpus").read_text()) == group.cpus
        assert sub.alive
