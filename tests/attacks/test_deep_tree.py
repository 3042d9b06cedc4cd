"""A worker judging the deep-tree attack again and again holds no more memory than before.

The attack leaves 1500 nested folders and 144 MB in its job folder (a tmpfs). Before the
fix the grader's clean-up died of RecursionError, the tmpfs stayed mounted and its memory
(Shmem) grew by the attack's size with every judging, until the worker restarted."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from judge.grader import Options, grade
from judge.package import load_problem
from judge.verdict import Verdict
from tests.sandbox.helpers import ROOT, job_mounts

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]

ATTACK = Path(__file__).resolve().parent / "submissions" / "deep_folder_tree.py"
BALLAST_KB = 144 * 1024  # what one judging of the attack leaves in its job folder


def shmem_kb() -> int:
    with open("/proc/meminfo") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("Shmem:"))


def settled_shmem_kb(below: int | None = None, wait_s: float = 10.0) -> int:
    """The lowest Shmem seen over a few samples (other tests on this machine write to
    tmpfs too); with ``below``, waits up to ``wait_s`` for it to get there."""
    deadline = time.monotonic() + wait_s
    low = shmem_kb()
    for _ in range(5):
        time.sleep(0.05)
        low = min(low, shmem_kb())
    while below is not None and low >= below and time.monotonic() < deadline:
        time.sleep(0.2)
        low = min(low, shmem_kb())
    return low


def test_judging_the_deep_tree_five_times_holds_nothing(attack_launcher, tmp_path):
    problem = load_problem(ROOT / "problems" / "padding-collate")
    options = Options(cases=("example_basic",), throughput=False, jobs_root=tmp_path)
    store = str(attack_launcher.jobdirs.store)
    before = settled_shmem_kb()
    mounts_before = [m for m in job_mounts() if m.startswith(store)]
    for _ in range(5):
        report = grade(problem, ATTACK.read_text(), attack_launcher, options)
        assert report.verdict is Verdict.RUNTIME_ERROR, report.message.en
        assert "ATTACK-RAN" in report.message.en
        # Released at the end of the judging itself, not later by the collector.
        assert attack_launcher.jobdirs.entries == {}
        assert [m for m in job_mounts() if m.startswith(store)] == mounts_before
        assert list(tmp_path.iterdir()) == []
    # Five leaks would be 5 x 144 MB; allow less than one for the rest of the machine.
    after = settled_shmem_kb(below=before + BALLAST_KB // 2)
    assert after - before < BALLAST_KB // 2, f"Shmem grew by {(after - before) // 1024} MB"
