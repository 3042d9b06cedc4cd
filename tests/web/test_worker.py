"""The worker loop against the app in-process: real grading of the small problem with the
plain launcher (the sandbox has its own suite), the lease keeper, release on shutdown."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from judge.events import Running
from judge.worker import Problems, Worker
from judge.worker_client import Claimed, LeaseKeeper
from judge.worker_main import choose_gpu
from tests.web.support import GOOD, HIDDEN_MARK, WRONG, fake_report, submit

pytestmark = pytest.mark.both_databases  # each test on SQLite and on PostgreSQL


def make_worker(worker_client, launcher, problems_root, **kw) -> Worker:
    return Worker(worker_client, launcher, Problems(problems_root), name="test", **kw)


@pytest.mark.slow
def test_the_worker_judges_queued_submissions(client, alice, worker, plain, problems_root):
    good = submit(client, alice, GOOD).json()["id"]
    bob_headers = _user(client, "bob")
    wrong = submit(client, bob_headers, WRONG).json()["id"]
    w = make_worker(worker, plain, problems_root)
    # The second judging runs in the runners the first one started for it (its head start).
    assert w.run(until_idle=True) == 2
    assert w.head_start.next is None  # and none are left running once the worker stops
    good_again = submit(client, alice, GOOD).json()["id"]
    assert w.run(until_idle=True) == 1
    assert client.get(f"/api/submissions/{good_again}", headers=alice).json()["verdict"] \
        == "accepted"
    done = client.get(f"/api/submissions/{good}", headers=alice).json()
    assert done["verdict"] == "accepted" and done["passed"] == 2
    learner = client.get(f"/api/submissions/{wrong}", headers=bob_headers).json()
    assert learner["verdict"] == "wrong_answer"
    assert [t["verdict"] for t in learner["tests"]] == ["accepted", "wrong_answer"]
    assert HIDDEN_MARK not in str(learner)
    (report,) = _stored_reports(client, wrong)
    assert HIDDEN_MARK in str(report)  # the full report is kept (for admins)


def _user(client, name):
    from tests.web.support import make_user

    return make_user(client, name)


def _stored_reports(client, sid):
    from sqlalchemy import text

    with client.app.state.engine.connect() as conn:
        return [r[0] for r in conn.execute(text(f"select report from submissions where id={sid}"))]


def _fake_grade(problem, code, launcher, options, on_progress):
    from judge.report import Report

    return Report.from_json(fake_report())


def test_an_edited_problem_is_judged_at_its_current_version(client, alice, worker, plain,
                                                            problems_root, app):
    from sqlalchemy import text

    sid = submit(client, alice).json()["id"]
    with app.state.engine.begin() as conn:  # as if the package was edited since
        conn.execute(text("update submissions set problem_version = :v where id = :i"),
                     {"v": "0" * 64, "i": sid})
    make_worker(worker, plain, problems_root, grade=_fake_grade).run(until_idle=True)
    done = client.get(f"/api/submissions/{sid}", headers=alice).json()
    assert done["verdict"] == "accepted"
    assert done["problem_version"] == app.state.catalog.get("add-one").version


def test_a_problem_the_worker_lacks_is_an_internal_error(client, alice, worker, plain,
                                                         problems_root, app):
    from sqlalchemy import text

    sid = submit(client, alice).json()["id"]
    with app.state.engine.begin() as conn:
        conn.execute(text("update submissions set problem = 'gone' where id = :i"), {"i": sid})
    make_worker(worker, plain, problems_root, grade=_fake_grade).run(until_idle=True)
    done = client.get(f"/api/submissions/{sid}?lang=en", headers=alice).json()
    assert done["verdict"] == "internal_error"
    assert "does not have the problem gone" in done["message"]


def test_a_download_that_cannot_reach_the_server_gives_the_job_back(client, alice, worker,
                                                                    plain, problems_root):
    """The server restarts while a worker fetches a package: that is no verdict (an
    internal_error would be the judge's fault made the learner's); the job goes back to
    the queue and is judged when the server answers again."""
    class Flaky(Problems):
        failed = 0

        def get(self, slug, version):
            if not self.failed:
                self.failed += 1
                raise httpx.ConnectError("connection refused")
            return super().get(slug, version)

    sid = submit(client, alice).json()["id"]
    w = Worker(worker, plain, Flaky(problems_root), name="test", grade=_fake_grade)
    w.run(until_idle=True)
    done = client.get(f"/api/submissions/{sid}?lang=en", headers=alice).json()
    assert done["verdict"] == "accepted", done["message"]
    assert [r[0] for r in _rows(client, f"select attempts from jobs where submission_id={sid}")
            ] == [2]


def _rows(client, sql):
    from sqlalchemy import text

    with client.app.state.engine.connect() as conn:
        return list(conn.execute(text(sql)))


def test_a_crashing_grader_is_an_internal_error_not_a_dead_worker(client, alice, worker, plain,
                                                                  problems_root):
    def explode(*args, **kwargs):
        raise RuntimeError("boom")

    sid = submit(client, alice).json()["id"]
    w = make_worker(worker, plain, problems_root, grade=explode)
    assert w.run(until_idle=True) == 1
    done = client.get(f"/api/submissions/{sid}?lang=en", headers=alice).json()
    assert done["verdict"] == "internal_error" and "RuntimeError: boom" in done["message"]


def test_the_lease_keeper_renews_and_posts_progress(client, alice, worker, problems_root,
                                                    plain, settings):
    from judge.report import Report

    sid = submit(client, alice).json()["id"]
    renewals = []
    real_renew = worker.renew
    worker.renew = lambda job: renewals.append(job.job_id) or real_renew(job)

    def slow_grade(problem, code, launcher, options, on_progress):
        report = fake_report()
        for event in _events(report):
            on_progress(event)
        deadline = time.monotonic() + 20  # wait for renewals, not a fixed time (noisy CI)
        while len(renewals) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        return Report.from_json(report)

    w = make_worker(worker, plain, problems_root, grade=slow_grade)
    w.worker_id = worker.register("w", False, {})
    job = worker.claim(w.worker_id, False, 0)
    job = Claimed(**{**job.__dict__, "lease_seconds": 0.3})  # renew every 0.2 s
    w.judge(job)
    assert len(renewals) >= 2
    assert client.get(f"/api/submissions/{sid}", headers=alice).json()["verdict"] == "accepted"


def _events(report):
    from tests.web.support import grader_events

    return grader_events(report)


def test_a_lost_lease_drops_the_result(client, alice, worker, clock):
    sid = submit(client, alice).json()["id"]
    wid = worker.register("w", False, {})
    job = worker.claim(wid, False, 0)
    clock.advance(31)
    keeper = LeaseKeeper(worker, Claimed(**{**job.__dict__, "lease_seconds": 0.3}))
    keeper.start()
    keeper.push({"event": "running", "index": 0, "name": "example_small"})
    keeper.close()
    assert keeper.lost
    assert client.get(f"/api/submissions/{sid}", headers=alice).json()["verdict"] is None


def test_an_interrupted_worker_releases_its_job(client, alice, worker, plain, problems_root):
    sid = submit(client, alice).json()["id"]
    started = threading.Event()

    def interrupted(problem, code, launcher, options, on_progress):
        started.set()
        raise KeyboardInterrupt  # what SIGTERM does in the worker process

    w = make_worker(worker, plain, problems_root, grade=interrupted)
    with pytest.raises(KeyboardInterrupt):
        w.run(until_idle=True)
    assert started.is_set()
    assert client.get(f"/api/submissions/{sid}", headers=alice).json()["status"] == "queued"


def test_the_worker_waits_for_the_server(monkeypatch, plain, problems_root):
    calls = []

    class Down:
        def register(self, *args):
            calls.append(args)
            if len(calls) < 3:
                raise httpx.ConnectError("refused")
            return 7

    monkeypatch.setattr(time, "sleep", lambda s: None)
    w = Worker(Down(), plain, Problems(problems_root), name="w")
    w.register()
    assert w.worker_id == 7 and len(calls) == 3


def test_choose_gpu():
    two = {"devices": ["A", "B"]}
    assert choose_gpu("auto", 0, two) == 0 and choose_gpu("auto", 1, two) == 1
    assert choose_gpu("auto", 2, two) is None and choose_gpu("none", 0, two) is None
    assert choose_gpu("auto", 0, {"devices": []}) is None
    assert choose_gpu("1", 0, two) == 1
    from judge.worker_client import Fatal

    with pytest.raises(Fatal):
        choose_gpu("3", 0, two)


def test_a_worker_the_server_forgot_registers_again(client, alice, worker, plain,
                                                    problems_root):
    from judge.report import Report

    sid = submit(client, alice).json()["id"]
    w = make_worker(worker, plain, problems_root,
                    grade=lambda *a, **k: Report.from_json(fake_report()))
    w.worker_id = 4242  # e.g. the server's database was reset while the worker ran
    assert w.run(until_idle=True) == 1
    assert w.worker_id != 4242
    assert client.get(f"/api/submissions/{sid}", headers=alice).json()["verdict"] == "accepted"


# ---------------------------------------------------------------- nothing a job holds stops it

SURROGATE = "bad \ud800 char"  # a lone surrogate: no UTF-8 encoder accepts it


def _report_with(message: str):
    from judge.i18n import T
    from judge.report import Report
    from judge.verdict import Verdict

    report = Report.from_json(fake_report(message=message, output=message))
    report.verdict = Verdict.RUNTIME_ERROR
    report.message = T(message, message)
    return report


def test_lone_surrogates_in_a_report_and_its_progress_are_posted_cleaned(
        client, alice, worker, plain, problems_root):
    """A report (and progress events) holding lone surrogates, as a submission's exception
    message once could: httpx cannot encode them, which killed the lease thread and the
    worker, and the job was claimed again forever."""
    sid = submit(client, alice).json()["id"]
    renewals = []
    real_renew = worker.renew
    worker.renew = lambda job: renewals.append(job.job_id) or real_renew(job)

    def grade(problem, code, launcher, options, on_progress):
        on_progress(Running(SURROGATE, 0))
        # The lease keeper must still be renewing after that batch. Wait for two renewals
        # rather than a fixed time: a loaded CI machine may take longer than 0.5 s for them.
        deadline = time.monotonic() + 20
        while len(renewals) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        return _report_with(SURROGATE)

    w = make_worker(worker, plain, problems_root, grade=grade)
    w.worker_id = worker.register("w", False, {})
    job = worker.claim(w.worker_id, False, 0)
    w.current = job
    w.judge(Claimed(**{**job.__dict__, "lease_seconds": 0.3}))
    assert len(renewals) >= 2
    done = client.get(f"/api/submissions/{sid}?lang=en", headers=alice).json()
    assert done["status"] == "done" and done["verdict"] == "runtime_error"
    assert done["message"] == "bad \ufffd char"


def test_a_result_that_cannot_be_posted_becomes_an_internal_error(client, alice, worker,
                                                                  plain, problems_root):
    sid = submit(client, alice).json()["id"]
    real_result, sent = worker.result, []

    def result(job, report):
        sent.append(report["verdict"])
        if len(sent) == 1:
            raise ValueError("Out of range float values are not JSON compliant")
        return real_result(job, report)

    worker.result = result
    w = make_worker(worker, plain, problems_root, grade=_fake_grade)
    assert w.run(until_idle=True) == 1
    assert sent == ["accepted", "internal_error"]
    done = client.get(f"/api/submissions/{sid}?lang=en", headers=alice).json()
    assert done["verdict"] == "internal_error"
    assert "could not send this result: ValueError" in done["message"]


def test_a_result_that_never_posts_releases_the_job_and_the_worker_goes_on(
        client, alice, worker, plain, problems_root):
    sid = submit(client, alice).json()["id"]

    def result(job, report):
        raise UnicodeEncodeError("utf-8", "\ud800", 0, 1, "surrogates not allowed")

    worker.result = result
    w = make_worker(worker, plain, problems_root, grade=_fake_grade)
    w.worker_id = worker.register("w", False, {})
    job = worker.claim(w.worker_id, False, 0)
    w.current = job
    w.judge(job)  # does not raise
    assert client.get(f"/api/submissions/{sid}", headers=alice).json()["status"] == "queued"


def test_a_crash_outside_grade_is_an_internal_error(client, alice, worker, plain,
                                                    problems_root):
    sid = submit(client, alice).json()["id"]
    w = make_worker(worker, plain, problems_root, grade=_fake_grade)

    def broken(*args, **kwargs):
        raise OSError("disk gone")

    w.problems.get = broken  # type: ignore[method-assign]
    assert w.run(until_idle=True) == 1
    done = client.get(f"/api/submissions/{sid}?lang=en", headers=alice).json()
    assert done["verdict"] == "internal_error" and "OSError: disk gone" in done["message"]


def test_an_error_escaping_judge_releases_the_job_and_the_loop_goes_on(
        client, alice, worker, plain, problems_root, monkeypatch):
    sid = submit(client, alice).json()["id"]
    w = make_worker(worker, plain, problems_root, grade=_fake_grade)
    calls = []

    def judge(job):
        calls.append(job.attempt)
        if len(calls) == 1:
            raise RuntimeError("a bug in the worker")
        Worker.judge(w, job)

    monkeypatch.setattr(w, "judge", judge)
    monkeypatch.setattr(time, "sleep", lambda s: None)
    assert w.run(until_idle=True) == 1  # the first attempt released, the second judged
    assert calls == [1, 2]
    assert client.get(f"/api/submissions/{sid}", headers=alice).json()["verdict"] == "accepted"


def test_a_job_claimed_too_often_is_ended_not_judged_again(client, alice, worker, plain,
                                                          problems_root, app):
    from sqlalchemy import text

    from judge.worker import MAX_ATTEMPTS

    sid = submit(client, alice).json()["id"]
    with app.state.engine.begin() as conn:  # as if every earlier attempt was released
        conn.execute(text("update jobs set attempts = :n"), {"n": MAX_ATTEMPTS})

    def never(*args, **kwargs):
        raise AssertionError("judged again")

    assert make_worker(worker, plain, problems_root, grade=never).run(until_idle=True) == 1
    done = client.get(f"/api/submissions/{sid}?lang=en", headers=alice).json()
    assert done["verdict"] == "internal_error"
    assert f"attempted {MAX_ATTEMPTS} times without a result" in done["message"]
