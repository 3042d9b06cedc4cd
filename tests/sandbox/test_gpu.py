"""CUDA jobs: a fresh (cold) sandbox with the device nodes of one GPU, a cgroup memory limit
instead of RLIMIT_AS, and one grading job per GPU at a time. Run on a machine with an
NVIDIA GPU (``pytest -m gpu``); skipped elsewhere."""

from __future__ import annotations

import threading
import time

import pytest

from sandbox import gpu
from sandbox.launch import Limits
from tests.sandbox.helpers import call, job_folder, session

pytestmark = [pytest.mark.gpu, pytest.mark.sandbox]

if not gpu.devices():
    pytest.skip("no NVIDIA GPU on this machine", allow_module_level=True)

PROBE = """
import os, resource, torch
def f():
    x = torch.arange(10, device='cuda').float()
    return {
        'available': torch.cuda.is_available(),
        'count': torch.cuda.device_count(),
        'sum': float((x * 2).sum().item()),
        'nodes': sorted(n for n in os.listdir('/dev') if n.startswith('nvidia')),
        'as_limit': resource.getrlimit(resource.RLIMIT_AS)[0],
    }
"""


def test_a_cuda_job_sees_one_gpu_without_an_address_space_limit(warm_launcher, tmp_path):
    got = call(warm_launcher, tmp_path, PROBE, device="cuda")
    assert got["available"] and got["count"] == 1
    assert got["sum"] == 90.0
    assert len([n for n in got["nodes"] if n[len("nvidia"):].isdigit()]) == 1
    assert got["as_limit"] == -1  # RLIM_INFINITY: the cgroup limits memory instead


def test_one_grading_job_per_gpu_at_a_time(warm_launcher, tmp_path):
    gpus = len(warm_launcher.gpus)
    holders = [session(warm_launcher, job_folder(tmp_path, PROBE), Limits(), device="cuda")
               for _ in range(gpus)]
    for h in holders:
        h.__enter__()
    started: list[float] = []
    waiter = threading.Thread(target=lambda: started.append(
        call(warm_launcher, tmp_path, PROBE, device="cuda") and time.monotonic()))
    waiter.start()
    time.sleep(3.0)
    assert not started  # every GPU is leased to another grading job
    released = time.monotonic()
    holders[0].__exit__(None, None, None)
    waiter.join(120)
    assert started and started[0] >= released
    for h in holders[1:]:
        h.__exit__(None, None, None)


def test_the_reference_shares_its_jobs_gpu(warm_launcher, tmp_path):
    sub = job_folder(tmp_path, PROBE, role="sub")
    ref = sub.parent / "ref"
    ref.mkdir()
    (ref / "submission.py").write_text((sub / "submission.py").read_text())
    with session(warm_launcher, sub, device="cuda") as a, \
            session(warm_launcher, ref, device="cuda") as b:
        assert a.call("sub", "f", [], {}).value["count"] == 1
        assert b.call("sub", "f", [], {}).value["count"] == 1
