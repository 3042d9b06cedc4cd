"""DataLoader worker processes inside the sandbox: they start under every start method
(``spawn`` re-executes the interpreter and imports the submission and the fixture by
name), the memory limit counts them with the runner, the judge reads the job's memory
from outside, and nothing of them outlives the job."""

from __future__ import annotations

import textwrap

import pytest

from judge.session import RunnerSession, SubmissionError
from sandbox.launch import Job, Limits
from tests.sandbox.helpers import job_folder, leftovers, processes_of

pytestmark = pytest.mark.sandbox

CODE = """
import os
import torch
from torch.utils.data import DataLoader, Dataset


def double(x):  # a module-level helper the dataset refers to: pickled by name
    return 2 * x


class Numbers(Dataset):
    def __init__(self, n, hog_mb=0):
        self.n = n
        self.hog_mb = hog_mb

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.hog_mb:  # every worker holds this much, touched page by page
            hog = bytearray(self.hog_mb << 20)
            for k in range(0, len(hog), 4096):
                hog[k] = 1
            self.keep = hog
        info = torch.utils.data.get_worker_info()
        return {"value": double(i), "worker": info.id, "pid": os.getpid()}


def load(method, n, hog_mb=0, workers=2):
    loader = DataLoader(Numbers(n, hog_mb), batch_size=4, shuffle=True, num_workers=workers,
                        multiprocessing_context=method, collate_fn=list,
                        generator=torch.Generator().manual_seed(0))
    return [item for batch in loader for item in batch]


def hold(mb):
    global held
    held = bytearray(mb << 20)
    for k in range(0, len(held), 4096):
        held[k] = 1
    return len(held)
"""

FIXTURE = """
import torch
from torch.utils.data import DataLoader


class Tagged:  # a fixture-level callable, pickled by name into spawned workers
    def __call__(self, batch):
        return [dict(item, tagged=True) for item in batch]


def load_tagged(sol, ctx, method, n):
    loader = DataLoader(sol.Numbers(n), batch_size=3, num_workers=2, collate_fn=Tagged(),
                        multiprocessing_context=method)
    return [item for batch in loader for item in batch]
"""


def start(launcher, tmp_path, limits: Limits | None = None) -> RunnerSession:
    folder = job_folder(tmp_path, CODE)
    (folder / "judge_fixture.py").write_text(textwrap.dedent(FIXTURE))
    hello = {"submission": folder / "submission.py", "fixture": folder / "judge_fixture.py",
             "names": ["load"], "threads": 1, "device": "cpu"}
    session = RunnerSession(launcher, Job(folder, limits or Limits()), hello)
    session.start()
    session.ready()
    return session


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_dataloader_workers_start_under_every_method(any_launcher, tmp_path, method):
    before = processes_of(any_launcher.uid)
    s = start(any_launcher, tmp_path)
    try:
        items = s.call("sub", "load", [method, 24], {}).value
        assert sorted(item["value"] for item in items) == [2 * i for i in range(24)]
        assert {item["worker"] for item in items} == {0, 1}
        assert len({item["pid"] for item in items}) == 2
        tagged = s.call("fixture", "load_tagged", [method, 9], {}).value
        assert [item["value"] for item in tagged] == [2 * i for i in range(9)]
        assert all(item["tagged"] for item in tagged)
    finally:
        s.close()
    assert not leftovers(any_launcher, before)


def test_workers_count_against_the_jobs_memory(any_launcher, tmp_path):
    """Workers that each stay under the per-process limit (RLIMIT_AS: a forked worker
    starts with the runner's ~820 MiB of mappings, most of them shared) but together
    exceed the job's: the OOM killer ends one, the DataLoader raises, and that is a
    memory verdict, not a runtime error."""
    if any_launcher.hierarchy is None:
        pytest.skip(f"no cgroups here: {any_launcher.applied.get('degraded')}")
    # cgroup: 2000 + 8 + 4 + 16 + 128 = 2156 MiB for the job; 8 workers x 300 MiB. Each
    # worker stays far under RLIMIT_AS (2000 MiB): with 1200 MiB and 350 MiB hogs a CI run
    # saw a worker's own MemoryError (its mappings vary) instead of the OOM killer.
    limits = Limits(memory_mb=2000, tmp_mb=8, shm_mb=4, job_mb=16)
    s = start(any_launcher, tmp_path, limits)
    try:
        with pytest.raises(SubmissionError) as info:
            s.call("sub", "load", ["fork", 32, 300, 8], {})
        assert info.value.oom_killed and info.value.is_memory, info.value
        assert "ran out of memory" in info.value.describe().en
    finally:
        s.close()


def test_memory_in_use_is_measured_from_outside(any_launcher, tmp_path):
    if any_launcher.hierarchy is None:
        pytest.skip(f"no cgroups here: {any_launcher.applied.get('degraded')}")
    s = start(any_launcher, tmp_path)
    try:
        before = s.memory_bytes()
        assert before is not None
        s.call("sub", "hold", [200], {})
        after = s.memory_bytes()
        assert after is not None and after - before >= 190 << 20, (before, after)
    finally:
        s.close()
    assert s.memory_bytes() is None  # a runner that is gone holds nothing
