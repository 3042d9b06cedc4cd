"""judge.worker dispatches a claimed job by its kind: a ``rank`` job (the low-priority
follow-up of an accepted submission) is judged in ranking mode, and what it posts is a
normal report."""

from __future__ import annotations

from judge.events import Phase
from judge.grader import Options
from judge.report import Report, ThroughputResult
from judge.verdict import Verdict
from judge.worker import Worker
from judge.worker_client import Claimed


class FakeClient:
    """The worker API, answered in memory: what the worker posted is kept."""

    def __init__(self) -> None:
        self.results: list[dict] = []
        self.posted_events: list[dict] = []

    def renew(self, job) -> bool:
        return True

    def events(self, job, events) -> bool:
        self.posted_events += events
        return True

    def result(self, job, report) -> str:
        self.results.append(report)
        return "stored"


class Bank:
    def __init__(self, problem) -> None:
        self.problem = problem

    def get(self, slug, version):
        return self.problem


class FakeProblem:
    content_hash = "f" * 64


def _job(kind: str) -> Claimed:
    return Claimed(job_id=3, lease_token="t", lease_seconds=30.0, submission_id=7,
                   problem="p", problem_version="f" * 64, code="def f(): pass\n", kind=kind)


def _run(kind: str) -> tuple[list[Options], list[dict], list[dict]]:
    seen: list[Options] = []

    def grade(problem, code, launcher, options, on_progress):
        seen.append(options)
        on_progress(Phase("ranking" if options.speed == "ranking" else "measuring"))
        refined = options.speed == "ranking"
        return Report(Verdict.ACCEPTED, "p", 1, "none", throughput=[ThroughputResult(
            "big", "cpu", Verdict.ACCEPTED, 0.25, 1.01, pairs=90, refined=refined,
            interval=(0.99, 1.03), pair_ratios=(1.0, 1.01))])

    client = FakeClient()
    worker = Worker(client, None, Bank(FakeProblem()), name="t", grade=grade)  # type: ignore[arg-type]
    worker.judge(_job(kind))
    return seen, client.results, client.posted_events


def test_a_rank_job_is_graded_in_ranking_mode_and_posts_a_normal_report():
    (options,), (posted,), events = _run("rank")
    assert options.speed == "ranking"
    assert events == [{"event": "phase", "phase": "ranking"}]
    report = Report.from_json(posted)  # what the server validates a result with
    (tp,) = report.throughput
    assert tp.refined and tp.ratio == 1.01 and tp.interval == (0.99, 1.03)
    assert posted["problem_version"] == "f" * 64


def test_a_judge_job_is_graded_for_the_verdict():
    (options,), (posted,), _ = _run("judge")
    assert options.speed == "verdict"
    assert posted["throughput"][0]["refined"] is False
