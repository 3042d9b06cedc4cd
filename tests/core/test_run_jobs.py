"""The worker's "Run examples" jobs (``kind="run"``): graded for real on a small problem,
public cases only and no speed check; a submission's job still gets every case."""

from __future__ import annotations

from judge.grader import Options
from judge.worker import Problems, Worker, grade_options
from judge.worker_client import Claimed
from tests.conftest import write_problem

GOOD = "def double(x):\n    return x * 2\n"


def job(kind: str, problem: str = "double-it", code: str = GOOD) -> Claimed:
    return Claimed(job_id=1, lease_token="t", lease_seconds=30, submission_id=None,
                   problem=problem, problem_version="", code=code, kind=kind, run_id=4)


def test_a_run_is_graded_on_public_cases_without_a_speed_check():
    assert grade_options(job("run"), cuda=False) == Options(public_only=True, throughput=False)
    assert grade_options(job("run"), cuda=True).cuda is True
    judged = grade_options(job("judge"), cuda=False)
    assert judged.throughput and not judged.public_only


def test_the_worker_runs_only_the_public_cases(tmp_path, launcher):
    write_problem(tmp_path / "problems")
    worker = Worker(None, launcher, Problems(tmp_path / "problems"), name="t")
    events: list[dict] = []
    try:
        ran = worker.grade(job("run"), events.append)
        full = worker.grade(job("judge"), lambda _: None)
    finally:
        launcher.close()
    assert ran["verdict"] == "accepted" and ran["throughput"] == []
    assert [t["visibility"] for t in ran["tests"]] == ["public"]
    assert [t["visibility"] for t in full["tests"]] == ["public", "hidden", "hidden"]
    start = next(e for e in events if e["event"] == "start")
    assert [t["visibility"] for t in start["tests"]] == ["public"]


def test_a_run_never_measures_speed(tmp_path, launcher):
    """A problem with a speed check: the run's options skip it (the grader measures only
    when ``throughput`` is on and not ``public_only``)."""
    seen: list[Options] = []

    def spy(problem, code, launcher, options, on_progress):
        from judge.report import Report
        from judge.verdict import Verdict

        seen.append(options)
        return Report(Verdict.ACCEPTED, problem.slug, 0, "none")

    write_problem(tmp_path / "problems")
    worker = Worker(None, launcher, Problems(tmp_path / "problems"), name="t", grade=spy)
    worker.grade(job("run"), lambda _: None)
    worker.grade(job("judge"), lambda _: None)
    assert [(o.public_only, o.throughput) for o in seen] == [(True, False), (False, True)]
