""""Run examples" (``/api/runs``): public cases only, above submissions in the queue, its own
rate limit, live like a submission, and never counted as one."""

from __future__ import annotations

import json

import pytest

from tests.web.support import (
    HIDDEN_MARK,
    WRONG,
    browser_login,
    csrf,
    fake_report,
    make_user,
    progress_events,
    rows,
    submit,
)
from web.main import create_app

pytestmark = pytest.mark.both_databases  # each test on SQLite and on PostgreSQL


def start_run(client, headers, code: str = WRONG, problem: str = "add-one"):
    return client.post("/api/runs", json={"problem": problem, "code": code}, headers=headers)


def play_run(worker, report: dict | None = None) -> int:
    """Claim the next job, which must be a run, and post its progress and result."""
    wid = worker.register("w", False, {})
    job = worker.claim(wid, False, 0)
    assert job is not None and job.kind == "run" and job.submission_id is None
    assert worker.events(job, progress_events(report or fake_report(passed=False)))
    assert worker.result(job, report or fake_report(passed=False)) == "stored"
    assert job.run_id is not None
    return job.run_id


def read_stream(client, rid: int, headers: dict, lang: str = "en") -> list[dict]:
    events = []
    with client.stream("GET", f"/api/runs/{rid}/events?lang={lang}", headers=headers) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        events = [json.loads(line[5:]) for line in r.iter_lines() if line.startswith("data:")]
    return events


def main_part(html: str) -> str:
    return html.split('<main id="main"', 1)[1].split("</main>", 1)[0]


def test_a_run_is_claimed_before_an_older_submission(client, alice, worker):
    sid = submit(client, alice).json()["id"]
    bob = make_user(client, "bob")
    r = start_run(client, bob)
    assert r.status_code == 202, r.text
    rid = r.json()["id"]
    assert r.json()["url"] == f"/api/runs/{rid}"
    wid = worker.register("w", False, {})
    first = worker.claim(wid, False, 0)
    assert first is not None and first.kind == "run" and first.run_id == rid
    assert first.code == WRONG and first.problem == "add-one" and first.submission_id is None
    second = worker.claim(wid, False, 0)
    assert second is not None and second.kind == "judge" and second.submission_id == sid


def test_the_result_holds_public_tests_only(client, alice, worker):
    rid = start_run(client, alice).json()["id"]
    queued = client.get(f"/api/runs/{rid}", headers=alice).json()
    assert queued["status"] == "queued" and queued["position"] == 0 and queued["kind"] == "run"
    # whatever the worker posts, the hidden case is left out, and the verdict is the
    # public tests' own
    assert play_run(worker) == rid
    run = client.get(f"/api/runs/{rid}?lang=en", headers=alice).json()
    assert run["status"] == "done" and run["verdict"] == "accepted"
    assert [t["name"] for t in run["tests"]] == ["example_small"]
    assert (run["passed"], run["total"]) == (1, 1)
    assert HIDDEN_MARK not in json.dumps(run) and "large_values" not in json.dumps(run)
    events = read_stream(client, rid, alice)
    assert [e["event"] for e in events] == ["start", "test", "done"]
    assert events[0]["tests"] == [{"name": "example_small", "visibility": "public"}]
    assert events[-1]["verdict"] == "accepted" and events[-1]["total"] == 1


def test_live_events_while_it_runs(client, alice, worker):
    rid = start_run(client, alice).json()["id"]
    wid = worker.register("w", False, {})
    job = worker.claim(wid, False, 0)
    assert job is not None
    report = fake_report(output="printed\n")
    report["tests"] = report["tests"][:1]  # a worker grading public cases only
    assert worker.events(job, progress_events(report)[:3])  # start, running, test
    live = client.get(f"/api/runs/{rid}", headers=alice).json()
    assert live["status"] == "running" and live["tests"][0]["verdict"] == "accepted"
    assert live["tests"][0]["output"] == "printed\n"
    assert worker.result(job, report) == "stored"
    assert rows(client.app, "select count(*) from job_events") == [(0,)]  # cleared
    assert client.get(f"/api/runs/{rid}", headers=alice).json()["status"] == "done"


def test_a_run_is_never_counted_as_a_submission(client, alice, worker):
    browser_login(client, "alice")
    rid = start_run(client, alice, code="def add_one(x):\n    return x + 1\n").json()["id"]
    play_run(worker, fake_report(passed=True))
    assert client.get(f"/api/runs/{rid}", headers=alice).json()["verdict"] == "accepted"
    assert rows(client.app, "select count(*) from submissions") == [(0,)]
    (p,) = client.get("/api/problems").json()
    assert (p["accepted"], p["judged"], p["acceptance"]) == (0, 0, None)
    board = main_part(client.get("/leaderboard").text)
    assert "还没有人通过题目" in board and "alice" not in board
    assert "还没有提交" in main_part(client.get("/submissions").text)  # the history
    problem_list = client.get("/").text
    assert "已通过" not in problem_list and "尝试过" not in problem_list  # her status
    assert client.get("/api/submissions/1", headers=alice).status_code == 404
    profile = client.get("/api/users/alice").json()  # the profile (issue 14, point 6)
    assert profile["submissions"] == 0 and profile["solved"] == [] and profile["tried"] == []
    assert client.get("/api/problems/add-one/solution", headers=alice).status_code == 403


def test_rate_limits_answer_429(settings, clock):
    from fastapi.testclient import TestClient

    from judge.worker_client import WorkerClient

    app = create_app(settings.model_copy(update={"runs_per_minute": 2}), clock=clock)
    with TestClient(app) as client:
        alice = make_user(client, "alice")
        worker = WorkerClient("", "worker-secret", http=client)
        assert start_run(client, alice).status_code == 202
        busy = start_run(client, alice)  # one already queued
        assert busy.status_code == 429 and "样例运行" in busy.json()["detail"]
        busy_en = client.post("/api/runs?lang=en", json={"problem": "add-one", "code": WRONG},
                              headers=alice)
        assert busy_en.status_code == 429 and "queued or running" in busy_en.json()["detail"]
        play_run(worker)
        assert start_run(client, alice).status_code == 202
        play_run(worker)
        fast = client.post("/api/runs?lang=en", json={"problem": "add-one", "code": WRONG},
                           headers=alice)
        assert fast.status_code == 429 and "at most 2 a minute" in fast.json()["detail"]
        assert int(fast.headers["Retry-After"]) >= 1
        assert rows(app, "select count(*) from runs") == [(2,)]  # nothing stored
        # submissions have limits of their own: runs do not use them up
        assert submit(client, alice).status_code == 202
        clock.advance(61)
        assert start_run(client, alice).status_code == 202
    app.state.engine.dispose()


def test_another_user_cannot_read_a_run(client, alice):
    rid = start_run(client, alice).json()["id"]
    bob = make_user(client, "bob")
    for path in (f"/api/runs/{rid}", f"/api/runs/{rid}/events"):
        r = client.get(path, headers=bob)
        assert r.status_code == 404 and "run" in client.get(
            path + "?lang=en", headers=bob).json()["detail"]
    assert client.get(f"/api/runs/{rid}").status_code == 401


def test_bad_runs_are_refused(client, alice):
    assert start_run(client, alice, problem="nope").status_code == 404
    assert start_run(client, alice, code="  ").status_code == 400
    assert start_run(client, alice, code="x" * 5000).status_code == 413
    assert rows(client.app, "select count(*) from runs") == [(0,)]


def test_the_problem_page_runs_with_its_session_and_csrf(client, alice):
    html = client.get("/problems/add-one").text
    assert 'id="run-button"' not in html  # anonymous
    browser_login(client, "alice")
    html = client.get("/problems/add-one").text
    assert 'id="run-button"' in html and "运行样例" in html and "/static/run.js" in html
    body = {"problem": "add-one", "code": WRONG}
    assert client.post("/api/runs", json=body).status_code == 403  # a cookie without CSRF
    token = csrf(client, "/problems/add-one")
    r = client.post("/api/runs", json=body, headers={"X-CSRF-Token": token})
    assert r.status_code == 202, r.text
    assert client.get(f"/api/runs/{r.json()['id']}").json()["status"] == "queued"


def test_a_lost_run_goes_back_and_is_given_up_on(client, alice, worker, clock):
    rid = start_run(client, alice).json()["id"]
    wid = worker.register("w", False, {})
    for _ in range(3):  # web.data.queue.MAX_ATTEMPTS
        assert worker.claim(wid, False, 0) is not None
        clock.advance(31)  # the lease expires
    assert worker.claim(wid, False, 0) is None  # the third expiry ended it
    run = client.get(f"/api/runs/{rid}?lang=en", headers=alice).json()
    assert run["status"] == "done" and run["verdict"] == "internal_error"
    assert "worker was lost" in run["message"]


def test_only_the_newest_runs_are_kept(settings, clock):
    from fastapi.testclient import TestClient

    from judge.worker_client import WorkerClient

    app = create_app(settings.model_copy(update={"runs_kept": 2, "runs_per_minute": 50}),
                     clock=clock)
    with TestClient(app) as client:
        alice, bob = make_user(client, "alice"), make_user(client, "bob")
        worker = WorkerClient("", "worker-secret", http=client)
        start_run(client, bob)
        play_run(worker)
        for _ in range(4):
            assert start_run(client, alice).status_code == 202
            play_run(worker)
        # alice's newest two (the last one started pruned the older ones); bob's is his own
        assert rows(app, "select id from runs order by id") == [(1,), (4,), (5,)]
        assert rows(app, "select run_id from jobs order by run_id") == [(1,), (4,), (5,)]
        assert client.get("/api/runs/2", headers=alice).status_code == 404
    app.state.engine.dispose()
