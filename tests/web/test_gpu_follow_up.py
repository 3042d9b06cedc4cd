"""A problem with CUDA cases judged while no GPU worker is alive: a CPU worker judges the
CPU cases, the report says the CUDA parts were not run, and the submission is queued again
for GPU workers only; the GPU's full report then replaces the CPU one."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from judge.i18n import T
from judge.report import (
    NEEDS_CUDA,
    Report,
    SkipReason,
    TestResult,
    ThroughputResult,
    cpu_only_message,
)
from judge.verdict import Verdict
from tests.web.support import browser_login, rows, submit

pytestmark = pytest.mark.both_databases  # each test on SQLite and on PostgreSQL


def cpu_report(verdict: Verdict = Verdict.ACCEPTED) -> dict:
    """What a CPU worker posts for a problem with one CPU case, one CUDA case and a CUDA
    speed check."""
    tests = [
        TestResult("example_small", "public", T("样例", "example"), verdict),
        TestResult("on_gpu", "hidden", T("GPU", "GPU"), Verdict.SKIPPED, NEEDS_CUDA,
                   skip=SkipReason.NEEDS_CUDA),
    ]
    report = Report(verdict, "add-one", 5, "none", tests=tests, device="cpu",
                    throughput=[ThroughputResult("overlap", "cuda", Verdict.SKIPPED, 0.8)])
    if verdict is Verdict.ACCEPTED:
        report.message = cpu_only_message(report.cuda_not_run)
    return report.to_json("zh")


def gpu_report(verdict: Verdict) -> dict:
    tests = [TestResult("example_small", "public", T("样例", "example"), Verdict.ACCEPTED),
             TestResult("on_gpu", "hidden", T("GPU", "GPU"), verdict)]
    return Report(verdict, "add-one", 6, "none", tests=tests, device="cuda").to_json("zh")


def gpu_jobs(app, sid: int) -> list:
    return rows(app, f"select status, needs_gpu from jobs where submission_id = {sid} "
                     f"and needs_gpu order by id")


def prefer_gpu(app) -> None:
    with app.state.engine.begin() as conn:
        conn.execute(text("update jobs set prefers_gpu = true"))


def test_accepted_without_cuda_is_judged_again_on_a_gpu(client, app, alice, worker):
    sid = submit(client, alice).json()["id"]
    prefer_gpu(app)
    cpu = worker.register("cpu", False, {})
    job = worker.claim(cpu, False, 0)  # no GPU worker alive: the CPU worker takes it
    assert worker.result(job, cpu_report()) == "stored"
    shown = client.get(f"/api/submissions/{sid}", headers=alice).json()
    assert shown["status"] == "done" and shown["verdict"] == "accepted"
    assert shown["cuda_not_run"] == 2 and "covers the CPU cases only" in shown["messages"]["en"]
    assert [tuple(r) for r in gpu_jobs(app, sid)] == [("queued", True)]
    assert worker.claim(cpu, False, 0) is None  # only a GPU worker may take it

    browser_login(client, "alice")
    page = client.get(f"/submissions/{sid}").text
    assert 'id="cuda-pending"' in page and "完整地重新评测" in page

    gpu = worker.register("gpu", True, {"devices": ["H200"]})
    again = worker.claim(gpu, True, 0)
    assert again is not None and again.submission_id == sid
    # While the GPU judges, the CPU result stands.
    assert client.get(f"/api/submissions/{sid}", headers=alice).json()["verdict"] == "accepted"
    assert worker.result(again, gpu_report(Verdict.WRONG_ANSWER)) == "stored"
    shown = client.get(f"/api/submissions/{sid}", headers=alice).json()
    assert shown["verdict"] == "wrong_answer" and shown["device"] == "cuda"
    # the learner saw "accepted": the GPU's judging changed it, and they are told so
    assert shown["rejudged"]["previous_verdict"] == "accepted"
    assert [tuple(r) for r in gpu_jobs(app, sid)] == [("done", True)]  # no third judging


def test_only_a_cpu_acceptance_with_cuda_parts_not_run_is_followed_up(client, app, alice,
                                                                      worker):
    cpu = worker.register("cpu", False, {})
    sid = submit(client, alice).json()["id"]
    prefer_gpu(app)
    # A CPU case failed: the GPU cannot change that verdict.
    assert worker.result(worker.claim(cpu, False, 0), cpu_report(Verdict.WRONG_ANSWER))
    sid2 = submit(client, alice).json()["id"]
    # Nothing was skipped (a problem without CUDA parts).
    plain = Report(Verdict.ACCEPTED, "add-one", 1, "none",
                   tests=[TestResult("example_small", "public", T("样例", "example"),
                                     Verdict.ACCEPTED)]).to_json("zh")
    assert worker.result(worker.claim(cpu, False, 0), plain) == "stored"
    assert gpu_jobs(app, sid) == [] and gpu_jobs(app, sid2) == []
