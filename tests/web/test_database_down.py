"""While the database does not answer (it restarts), requests get 503 with Retry-After,
not a 500 with a traceback in the log: workers and clients retry a 5xx, and nothing about
the request was wrong."""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy.exc import OperationalError

from tests.web.support import submit
from web.data import queue, submissions


def down(*_args, **_kwargs):
    raise OperationalError("select", {}, Exception("server closed the connection unexpectedly"))


def test_an_api_request_gets_503_while_the_database_is_down(client, alice, monkeypatch,
                                                           caplog):
    sid = submit(client, alice).json()["id"]
    monkeypatch.setattr(submissions, "get_submission", down)
    r = client.get(f"/api/submissions/{sid}?lang=en", headers=alice)
    assert r.status_code == 503 and r.headers["retry-after"] == "1"
    assert "database is not answering" in r.json()["detail"]
    assert "Traceback" not in caplog.text


def test_a_worker_is_told_to_retry_and_its_client_raises_a_retryable_error(client, worker,
                                                                          monkeypatch):
    wid = worker.register("w", False, {})
    monkeypatch.setattr(queue, "claim", down)
    r = client.post("/worker/claim", json={"worker_id": wid, "gpu": False, "wait_s": 0},
                    headers=worker.headers)
    assert r.status_code == 503
    with pytest.raises(httpx.HTTPStatusError):  # judge.worker retries these
        worker.claim(wid, False, 0)


def test_a_starting_web_process_waits_for_its_database(monkeypatch):
    """The database restarts while a web process starts (compose, a fault): it tries again
    instead of exiting; a database that never answers still fails, after the wait."""
    from web import db

    calls = []

    def migrate():
        calls.append(1)
        if len(calls) < 3:
            raise OperationalError("select 1", {}, Exception("terminating connection"))
        return "migrated"

    monkeypatch.setattr(db.time, "sleep", lambda s: None)
    assert db.when_ready(migrate, wait_s=5) == "migrated"
    assert len(calls) == 3
    with pytest.raises(OperationalError):
        db.when_ready(lambda: down(), wait_s=0)


def test_the_database_going_away_after_the_migrations_does_not_stop_the_start(
        settings, monkeypatch, caplog):
    """CI caught a web process that exited: PostgreSQL restarted between its migrations and
    its first load of the problem bank. The whole start waits for the database."""
    from web import bundled, db
    from web.main import create_app

    seed, failed = bundled.seed, []

    def seed_once_down(*args, **kwargs):
        if not failed:
            failed.append(1)
            raise OperationalError("select", {}, Exception("terminating connection due to "
                                                          "administrator command"))
        return seed(*args, **kwargs)

    monkeypatch.setattr(bundled, "seed", seed_once_down)
    monkeypatch.setattr(db.time, "sleep", lambda s: None)
    app = create_app(settings)
    try:
        assert failed and [p.slug for p in app.state.catalog] == ["add-one"]
        assert "the database does not answer yet" in caplog.text
    finally:
        app.state.engine.dispose()
