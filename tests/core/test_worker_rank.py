"""judge.worker dispatches a claimed job by its kind: a ``rank`` job (the low-priority
follow-up of an accepted submission) is judged in ranking mode, and what it posts is a
normal report."""

from __future__ import annotations

import time

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


def test_a_rank_job_gives_way_when_the_server_asks_and_is_released_not_reported():
    """The server answers a rank job's events with ``yield`` while other work waits: the
    worker stops it at its next event and releases it; nothing is posted as its result.
    A judge job is never stopped so."""
    graded: list[str] = []

    class Asking(FakeClient):
        def __init__(self) -> None:
            super().__init__()
            self.yield_asked: set[int] = set()
            self.released: list[int] = []

        def events(self, job, events) -> bool:
            self.yield_asked.add(job.job_id)  # as WorkerClient does on {"yield": true}
            return super().events(job, events)

        def release(self, job) -> bool:
            self.released.append(job.job_id)
            return True

    def grade(problem, code, launcher, options, on_progress):
        for i in range(50):
            on_progress(Phase("ranking"))
            time.sleep(0.02)  # the keeper posts the event; the answer asks to give way
            graded.append(f"{options.speed}:{i}")
        return Report(Verdict.ACCEPTED, "p", 1, "none")

    client = Asking()
    Worker(client, None, Bank(FakeProblem()), name="t", grade=grade).judge(_job("rank"))  # type: ignore[arg-type]
    assert client.released == [3] and client.results == []
    assert len(graded) < 50, "the rank job ran to its end"
    client = Asking()
    Worker(client, None, Bank(FakeProblem()), name="t", grade=grade).judge(_job("judge"))  # type: ignore[arg-type]
    assert client.released == [] and len(client.results) == 1


def test_the_client_remembers_which_jobs_the_server_asked_to_give_way():
    import httpx

    from judge.worker_client import WorkerClient

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"lease_seconds": 30, "yield": "renew" in str(request.url)})

    client = WorkerClient("http://judge", "tok",
                          http=httpx.Client(base_url="http://judge",
                                            transport=httpx.MockTransport(answer)))
    job = _job("rank")
    assert client.events(job, []) and 3 not in client.yield_asked
    assert client.renew(job) and 3 in client.yield_asked
    assert client.events(job, []) and 3 not in client.yield_asked  # the latest answer counts


def test_a_rank_job_given_back_and_claimed_again_is_not_stopped_for_the_old_answer():
    import httpx

    from judge.worker_client import WorkerClient

    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/claim"):
            return httpx.Response(200, json={
                "job_id": 3, "lease_token": "t2", "lease_seconds": 30.0, "submission_id": 7,
                "problem": "p", "problem_version": "f" * 64, "code": "", "kind": "rank"})
        return httpx.Response(200, json={"lease_seconds": 30, "yield": True})

    client = WorkerClient("http://judge", "tok",
                          http=httpx.Client(base_url="http://judge",
                                            transport=httpx.MockTransport(answer)))
    assert client.renew(_job("rank")) and 3 in client.yield_asked
    assert client.claim(1, False, 0).job_id == 3
    assert 3 not in client.yield_asked


def test_a_rank_job_stops_within_a_second_on_its_renewals_answer_not_only_an_events_post():
    """A ranking measurement posts nothing for many seconds (its heartbeat repeats one
    phase, which the worker does not post): the lease keeper renews every RANK_POLL_S and
    the answer's ``yield`` stops the job at its next heartbeat."""
    from judge.worker import RANK_POLL_S

    class AskingOnRenew(FakeClient):
        def __init__(self) -> None:
            super().__init__()
            self.yield_asked: set[int] = set()
            self.released: list[float] = []

        def renew(self, job) -> bool:
            self.yield_asked.add(job.job_id)  # live work arrived
            return True

        def release(self, job) -> bool:
            self.released.append(time.monotonic())
            return True

    def grade(problem, code, launcher, options, on_progress):
        for _ in range(1000):  # 20 s of pairs of 20 ms, a heartbeat after each
            on_progress(Phase("ranking"))
            time.sleep(0.02)
        return Report(Verdict.ACCEPTED, "p", 1, "none")

    client = AskingOnRenew()
    started = time.monotonic()
    Worker(client, None, Bank(FakeProblem()), name="t", grade=grade).judge(_job("rank"))  # type: ignore[arg-type]
    assert client.results == [] and len(client.released) == 1
    assert client.released[0] - started < RANK_POLL_S + 2.0
    assert client.posted_events == [{"event": "phase", "phase": "ranking"}]  # posted once


def test_the_result_is_posted_as_soon_as_the_verdict_is_known_and_only_once():
    """A grade function that takes ``on_verdict`` (judge.grader.grade does) has the worker
    post the result from there, before the runners are stopped; nothing is posted again
    when it returns."""
    moments: list[str] = []

    class Recording(FakeClient):
        def result(self, job, report) -> str:
            moments.append("posted")
            return super().result(job, report)

    def grade(problem, code, launcher, options, on_progress, on_verdict=None):
        report = Report(Verdict.WRONG_ANSWER, "p", 1, "none")
        on_verdict(report)
        moments.append("runners stopped")
        return report

    client = Recording()
    Worker(client, None, Bank(FakeProblem()), name="t", grade=grade).judge(_job("judge"))  # type: ignore[arg-type]
    assert moments == ["posted", "runners stopped"]
    (posted,) = client.results
    assert posted["verdict"] == "wrong_answer" and posted["problem_version"] == "f" * 64
