"""bench/gpu_worker_check.py (step 5 of bench/gpu_check.sh) is run on the lent GPU machine
only once per session: its plumbing (a server, a worker with its own cache, submissions
through the API, verdicts read back, a mismatch or a skipped CUDA check made an error)
is checked here on the CPU, with ``--gpu none``."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.web.served import ROOT, SANDBOXED

pytestmark = pytest.mark.slow


def run(*cases: str, gpu: str = "none") -> subprocess.CompletedProcess:
    isolation = [] if SANDBOXED else ["--no-sandbox"]
    return subprocess.run([sys.executable, "bench/gpu_worker_check.py", "--gpu", gpu,
                           *isolation, *cases], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


def test_a_worker_judges_what_learners_submit_and_a_wrong_expectation_fails():
    done = run("padding-collate:reference.py:accepted",
               "padding-collate:submissions/wrong_answer/always_rounds_up.py:accepted")
    out = done.stdout
    assert "✓ padding-collate reference.py: accepted in" in out, out + done.stderr
    assert "speed " in out and " cpu " in out  # the speed check's line, with its ratio
    assert "✗ padding-collate submissions/wrong_answer/always_rounds_up.py: wrong_answer" \
        in out, out
    assert done.returncode == 1, "a verdict other than the one expected must fail the run"


def test_a_skipped_cuda_check_fails_the_run_unless_no_gpu_was_asked_for():
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import gpu_worker_check
    finally:
        sys.path.pop(0)
    data = {"verdict": "accepted", "throughput": [
        {"name": "epoch_cpu", "device": "cpu", "verdict": "accepted", "ratio": 1.0},
        {"name": "epoch_cuda", "device": "cuda", "verdict": "skipped", "ratio": None}]}
    assert gpu_worker_check.check(data, "accepted", "0") == [
        "the CUDA check epoch_cuda was skipped: the worker saw no GPU"]
    assert gpu_worker_check.check(data, "accepted", "none") == []
    assert gpu_worker_check.check(data, "too_slow", "none") == [
        "verdict accepted, expected too_slow"]
