"""A learner is told when a rejudge changed a verdict they saw: the submission page and its
API view say what it was, what it is and when and with which version it changed; the
history marks the row; the problem page says so until the submission is opened. An
unchanged verdict says nothing, and no one else is told."""

from __future__ import annotations

from datetime import datetime

import pytest
from fastapi.testclient import TestClient

from tests.web.support import (
    browser_login,
    csrf,
    fake_report,
    judge_next,
    make_user,
    submit,
)
from web.data.submissions import CHANGE_COLUMNS, verdict_change
from web.models import Submission

pytestmark = pytest.mark.both_databases  # each test on SQLite and on PostgreSQL


def rejudged(client, admin, worker, sid: int, passed: bool) -> None:
    r = client.post("/api/admin/problems/add-one/rejudge", headers=admin,
                    json={"submissions": [sid]})
    assert r.json() == {"queued": [sid]}
    judge_next(worker, fake_report(passed=passed))


def learner_session(app, name: str) -> TestClient:
    """A browser-like client of its own, logged in as ``name`` (the admin has the other)."""
    session = TestClient(app)
    browser_login(session, name)
    return session


def test_a_changed_verdict_is_told_to_its_owner_until_opened(client, app, admin, alice,
                                                            worker, clock):
    app.state.page_cache.ttl = 3600  # only a write may refresh the cached views
    sid = submit(client, alice).json()["id"]
    judge_next(worker, fake_report(passed=False))
    amy = learner_session(app, "alice")
    assert client.get(f"/api/submissions/{sid}", headers=alice).json()["rejudged"] is None
    assert 'id="rejudged-notice"' not in amy.get("/problems/add-one").text  # cached now
    clock.advance(60)
    rejudged(client, admin, worker, sid, passed=True)

    shown = client.get(f"/api/submissions/{sid}", headers=alice).json()
    assert shown["verdict"] == "accepted"
    change = shown["rejudged"]
    assert (change["previous_verdict"], change["verdict"], change["seen"]) == (
        "wrong_answer", "accepted", False)
    assert change["at"] == "2026-01-01T08:01:00Z" and change["version"] == shown[
        "problem_version"]
    problem = amy.get("/problems/add-one").text
    notice = problem[problem.index('id="rejudged-notice"'):]
    assert f'href="/submissions/{sid}"' in notice and "原为" in notice
    assert f'data-id="{sid}" data-rejudged="new"' in amy.get("/submissions").text

    amy.post("/lang", data={"lang": "en", "csrf_token": csrf(amy)})
    page = amy.get(f"/submissions/{sid}").text
    assert 'id="rejudged-notice"' in page
    text = page[page.index('id="rejudged-notice"'):page.index("</p>", page.index(
        'id="rejudged-notice"'))]
    assert "Rejudged on" in text and change["version"][:12] in text
    assert 'data-verdict="wrong_answer"' in text and 'data-verdict="accepted"' in text
    # opened: the problem page stops telling, the submission page and API keep the record
    assert 'id="rejudged-notice"' not in amy.get("/problems/add-one").text
    assert f'data-id="{sid}" data-rejudged="seen"' in amy.get("/submissions").text
    assert client.get(f"/api/submissions/{sid}", headers=alice).json()["rejudged"]["seen"]
    assert 'id="rejudged-notice"' in amy.get(f"/submissions/{sid}").text


def test_another_learner_and_an_admin_opening_it_change_nothing(client, app, admin, alice,
                                                               worker):
    sid = submit(client, alice).json()["id"]
    judge_next(worker, fake_report(passed=False))
    rejudged(client, admin, worker, sid, passed=True)
    bob = make_user(client, "bob")
    assert client.get(f"/api/submissions/{sid}", headers=bob).status_code == 404
    bo = learner_session(app, "bob")
    assert 'id="rejudged-notice"' not in bo.get("/problems/add-one").text
    assert bo.get(f"/submissions/{sid}").status_code == 404
    assert 'id="rejudged-notice"' in client.get(f"/submissions/{sid}").text  # the admin's
    # neither made it seen: the owner is still told
    assert 'id="rejudged-notice"' in learner_session(app, "alice").get("/problems/add-one").text


def test_an_unchanged_verdict_says_nothing(client, app, admin, alice, worker):
    sid = submit(client, alice).json()["id"]
    judge_next(worker, fake_report(passed=True))
    rejudged(client, admin, worker, sid, passed=True)
    assert client.get(f"/api/submissions/{sid}", headers=alice).json()["rejudged"] is None
    amy = learner_session(app, "alice")
    assert 'id="rejudged-notice"' not in amy.get("/problems/add-one").text
    assert 'id="rejudged-notice"' not in amy.get(f"/submissions/{sid}").text
    assert "data-rejudged" not in amy.get("/submissions").text


def test_what_a_change_records():
    now = datetime(2026, 1, 2)
    sub = Submission(verdict="wrong_answer")
    assert verdict_change(Submission(verdict=None), "accepted", "v", now) == {}  # first
    assert verdict_change(sub, "wrong_answer", "v", now) == {}  # the same
    assert verdict_change(sub, "accepted", "v2", now) == {
        "previous_verdict": "wrong_answer", "verdict_changed_at": now,
        "verdict_changed_version": "v2", "verdict_change_seen_at": None}
    # changed again before the learner saw it: "was" stays the verdict they last saw ...
    unseen = Submission(verdict="accepted", previous_verdict="wrong_answer",
                        verdict_changed_at=now)
    assert verdict_change(unseen, "runtime_error", "v3", now)["previous_verdict"] == (
        "wrong_answer")
    # ... and back to it, there is nothing to tell
    assert verdict_change(unseen, "wrong_answer", "v3", now) == dict.fromkeys(CHANGE_COLUMNS)
    seen = Submission(verdict="accepted", previous_verdict="wrong_answer",
                      verdict_changed_at=now, verdict_change_seen_at=now)
    assert verdict_change(seen, "wrong_answer", "v3", now)["previous_verdict"] == "accepted"
