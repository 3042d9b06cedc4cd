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
    from sqlalchemy.exc import OperationalError

    from web import db

    calls = []

    def migrate(engine):
        calls.append(1)
        if len(calls) < 3:
            raise OperationalError("select 1", {}, Exception("terminating connection"))

    monkeypatch.setattr(db, "migrate", migrate)
    monkeypatch.setattr(db.time, "sleep", lambda s: None)
    db.migrate_when_ready(None, wait_s=5)
    assert len(calls) == 3
    calls.clear()
    monkeypatch.setattr(db, "migrate", lambda engine: (_ for _ in ()).throw(
        OperationalError("select 1", {}, Exception("no such host"))))
    with pytest.raises(OperationalError):
        db.migrate_when_ready(None, wait_s=0)
