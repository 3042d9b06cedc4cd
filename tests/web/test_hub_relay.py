"""Wake-ups across web processes (web/pg_relay.py: LISTEN/NOTIFY on PostgreSQL): two apps
on one database, as two web processes behind a load balancer. A worker posts to app A, a
learner's stream hangs on app B. (tests/web/test_deployment.py does the same with real
processes.) Also: the streams wait out a database that does not answer."""

from __future__ import annotations

import json
import statistics
import threading
import time

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.exc import OperationalError

from judge.worker import WorkerClient
from tests.web.support import fake_report, make_user, passing_report, progress_events
from tests.web.support import submit as api_submit
from web import streams
from web.main import create_app

ON_POSTGRES = pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
TESTS = 12
GAP_S = 0.08  # between two posts: below the streams' 1 s poll, so only a wake-up is prompt


@pytest.fixture
def two_apps(settings, clock):
    """App A and app B on the same database (and data folder), each with its lifespan
    running (their relays listening)."""
    apps = [create_app(settings, clock=clock), create_app(settings, clock=clock)]
    with TestClient(apps[0]) as a, TestClient(apps[1]) as b:
        for app in apps:
            assert app.state.relay is not None
            assert app.state.relay.listening.wait(10), "the relay never listened"
        yield a, b
    for app in apps:
        app.state.engine.dispose()


@ON_POSTGRES
def test_a_wake_up_on_one_app_wakes_a_waiter_on_another(two_apps):
    a, b = two_apps
    hub_b = b.app.state.hub
    waiting = b.portal.start_task_soon(hub_b.wait, ("submission", 991), 5.0)
    deadline = time.monotonic() + 5
    while ("submission", 991) not in hub_b.waiters and time.monotonic() < deadline:
        time.sleep(0.01)
    started = time.monotonic()
    a.app.state.hub.notify(("submission", 991))
    waiting.result(timeout=6)
    assert time.monotonic() - started < 1.0, "woken by the timeout, not by the relay"


@ON_POSTGRES
def test_events_posted_to_one_app_stream_from_the_other_in_order_promptly(two_apps):
    """Every event a worker posts to A reaches a stream on B exactly once, in order, and
    promptly: each within 1 s, the median well under the streams' 1 s poll."""
    a, b = two_apps
    alice = make_user(a, "alice")
    sid = api_submit(a, alice).json()["id"]
    worker = WorkerClient("", "worker-secret", http=a)
    report = passing_report(TESTS)
    events = progress_events(report)[:-1]  # start, then running and test per test
    posted: list[float] = []
    seen: list[tuple[dict, float]] = []
    attached = threading.Event()

    def judge() -> None:
        assert attached.wait(20)
        wid = worker.register("w", False, {})
        job = worker.claim(wid, False, 0)
        for event in events:
            time.sleep(GAP_S)
            assert worker.events(job, [event])
            posted.append(time.monotonic())
        time.sleep(GAP_S)  # the grader builds its report
        assert worker.result(job, report) == "stored"

    poster = threading.Thread(target=judge)
    poster.start()
    with b.stream("GET", f"/api/submissions/{sid}/events", headers=alice) as r:
        for line in r.iter_lines():
            if line.startswith("data:"):
                seen.append((json.loads(line[5:]), time.monotonic()))
                attached.set()
    poster.join()
    live = [(e, at) for e, at in seen if e["event"] not in ("queued", "done")]
    assert [(e["event"], e.get("index")) for e, _ in live] == \
        [(e["event"], e.get("index")) for e in events], "lost, duplicated or reordered"
    delays = [at - sent for (_, at), sent in zip(live, posted, strict=True)]
    assert max(delays) < 1.0, delays
    assert statistics.median(delays) < 0.3, delays
    assert seen[-1][0]["event"] == "done" and seen[-1][0]["passed"] == TESTS


def test_a_stream_waits_out_a_database_that_does_not_answer(client, alice, worker,
                                                            monkeypatch):
    """The database restarts under an open stream: it looks again a second later instead
    of ending (the reader would have to reconnect), and misses nothing (here: the stored
    result, replayed)."""
    sid = api_submit(client, alice).json()["id"]
    report = fake_report()
    wid = worker.register("w", False, {})
    job = worker.claim(wid, False, 0)
    assert worker.result(job, report) == "stored"
    real, failures = streams.snapshot, []

    def flaky(*args):
        if len(failures) < 2:
            failures.append(1)
            raise OperationalError("select", {}, Exception("server closed the connection"))
        return real(*args)

    monkeypatch.setattr(streams, "snapshot", flaky)
    monkeypatch.setattr(streams, "POLL_S", 0.05)
    with client.stream("GET", f"/api/submissions/{sid}/events", headers=alice) as r:
        seen = [json.loads(line[5:]) for line in r.iter_lines() if line.startswith("data:")]
    assert len(failures) == 2
    assert [e["event"] for e in seen] == ["start", "test", "test", "done"]
