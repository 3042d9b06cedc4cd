"""The JSON API on a temporary SQLite database: accounts, problems, submissions, and
bad input answered with a clear 4xx and nothing stored."""

from __future__ import annotations

import json

import pytest

from tests.web.support import GOOD, fake_report, judge_next, make_user, rows, submit

API_ROUTES = {
    ("post", "/api/users"), ("post", "/api/token"), ("get", "/api/problems"),
    ("get", "/api/problems/{slug}"), ("post", "/api/submissions"),
    ("get", "/api/submissions/{sid}"), ("get", "/api/submissions/{sid}/events"),
    ("get", "/api/submissions/{sid}/ranking/events"),
    # learners' own record (tests/web/test_profile.py)
    ("get", "/api/users/{name}"), ("get", "/api/problems/{slug}/solution"),
    ("get", "/api/submissions/{a}/diff/{b}"),
    # "Run examples" (tests/web/test_runs.py)
    ("post", "/api/runs"), ("get", "/api/runs/{rid}"), ("get", "/api/runs/{rid}/events"),
    # admins (tests/web/test_admin_authz.py walks them as anonymous and as a learner)
    ("get", "/api/admin/problems"), ("post", "/api/admin/problems"),
    ("get", "/api/admin/versions/{vid}"), ("get", "/api/admin/versions/{vid}/events"),
    ("post", "/api/admin/versions/{vid}/publish"), ("post", "/api/admin/problems/{slug}/unpublish"),
    ("delete", "/api/admin/versions/{vid}"),
    ("post", "/api/admin/problems/{slug}/rejudge"), ("get", "/api/admin/audit"),
}


def test_openapi_has_exactly_the_api_routes(client):
    paths = client.get("/openapi.json").json()["paths"]
    found = {(method, path) for path, ops in paths.items() if path.startswith("/api")
             for method in ops}
    assert found == API_ROUTES
    for path, ops in paths.items():
        for op in ops.values():
            assert op.get("description") or op.get("summary"), path


# ---------------------------------------------------------------- accounts


def test_register_and_token(client):
    r = client.post("/api/users", json={"username": "Alice", "password": "password1"})
    assert r.status_code == 201 and r.json()["username"] == "Alice"
    again = client.post("/api/users", json={"username": "alice", "password": "password2"})
    assert again.status_code == 409 and again.json()["detail"] == "这个用户名已经有人用了"
    r = client.post("/api/token", data={"username": "alice", "password": "password1"})
    assert r.status_code == 200
    assert r.json()["token_type"] == "bearer" and len(r.json()["access_token"]) > 30
    bad = client.post("/api/token", data={"username": "alice", "password": "wrong-pass"})
    assert bad.status_code == 401 and bad.json()["detail"] == "用户名或密码不对"
    ghost = client.post("/api/token?lang=en", data={"username": "nobody", "password": "x" * 9})
    assert ghost.json()["detail"] == "wrong username or password"


@pytest.mark.parametrize("body, fragment", [
    ({"username": "a", "password": "password1"}, "2 to 32"),
    ({"username": "bad name!", "password": "password1"}, "2 to 32"),
    ({"username": "bob", "password": "short"}, "8 to 256"),
    ({"username": "bob"}, "password"),
])
def test_bad_accounts_are_refused(client, app, body, fragment):
    r = client.post("/api/users?lang=en", json=body)
    assert r.status_code == 422 and fragment in r.json()["detail"]
    assert rows(app, "select count(*) from users")[0][0] == 0


def test_passwords_are_stored_as_argon2_hashes(client, app):
    make_user(client, "carol", "password1")
    (stored,) = rows(app, "select password_hash from users")[0]
    assert stored.startswith("$argon2id$") and "password1" not in stored


# ---------------------------------------------------------------- problems


def test_problem_list(client):
    (p,) = client.get("/api/problems").json()
    assert p["slug"] == "add-one" and p["number"] == 3 and p["difficulty"] == "easy"
    assert p["title"] == "加一" and p["titles"]["en"] == "Add one" and p["tags"] == ["warm-up"]
    assert client.get("/api/problems?lang=en").json()[0]["title"] == "Add one"


def test_problem_detail_has_public_parts_only(client, problems_root):
    p = client.get("/api/problems/add-one").json()
    assert p["statement"]["en"].startswith("# 加一") and "Add one." in p["statement"]["en"]
    assert p["starter"].startswith("def add_one") and p["limits"]["case_wall_s"] == 5.0
    assert [e["name"] for e in p["examples"]] == ["example_small"]
    assert p["examples"][0]["category"] == {"zh": "样例", "en": "example"}
    text = str(p)
    assert "large_values" not in text and "1234567" not in text  # the hidden case
    assert "return x + 1" not in text  # the reference
    assert client.get("/api/problems/3").json()["slug"] == "add-one"


def test_unknown_problem(client, alice):
    assert client.get("/api/problems/nope").status_code == 404
    r = submit(client, alice, problem="nope")
    assert r.status_code == 404 and "nope" in r.json()["detail"]


def test_public_routes_answer_in_the_bearer_users_language(client, app, alice):
    with app.state.sessionmaker() as db:  # alice switched to English (saved on the account)
        from web.data.accounts import set_lang, user_by_name

        set_lang(db, user_by_name(db, "alice"), "en")
    r = client.get("/api/problems/nope", headers=alice)
    assert r.status_code == 404 and r.json()["detail"] == "no such problem: 'nope'"
    assert client.get("/api/problems", headers=alice).json()[0]["title"] == "Add one"
    assert client.get("/api/problems/nope").json()["detail"] == "没有这道题：'nope'"
    expired = {"Authorization": "Bearer not-a-token"}  # public data: an old token is ignored
    assert client.get("/api/problems/add-one", headers=expired).status_code == 200


# ---------------------------------------------------------------- submissions


def test_submit_and_read(client, alice, worker):
    r = submit(client, alice)
    assert r.status_code == 202 and r.json()["status"] == "queued"
    sid = r.json()["id"]
    sub = client.get(f"/api/submissions/{sid}", headers=alice).json()
    assert sub["status"] == "queued" and sub["verdict"] is None and sub["position"] == 0
    assert sub["problem"] == "add-one" and sub["tests"] == []
    judge_next(worker)
    sub = client.get(f"/api/submissions/{sid}", headers=alice).json()
    assert sub["status"] == "done" and sub["verdict"] == "accepted"
    assert [(t["name"], t["visibility"], t["verdict"]) for t in sub["tests"]] == [
        ("example_small", "public", "accepted"), ("large_values", "hidden", "accepted")]
    assert {"name", "visibility", "verdict", "message", "time_ms"} <= set(sub["tests"][0])
    assert "seed" not in sub


def test_only_the_owner_or_an_admin_reads_a_submission(client, app, alice, worker):
    sid = submit(client, alice).json()["id"]
    judge_next(worker, fake_report(passed=False))
    bob = make_user(client, "bob")
    r = client.get(f"/api/submissions/{sid}", headers=bob)
    assert r.status_code == 404
    assert client.get(f"/api/submissions/{sid}/events", headers=bob).status_code == 404
    assert client.get(f"/api/submissions/{sid}").status_code == 401
    with app.state.engine.begin() as conn:
        from sqlalchemy import text

        conn.execute(text("update users set is_admin = true where username = 'bob'"))
    # a write by another program (here: not through the app's sessions) is seen within the
    # page cache's TTL (web/page_cache.py); the app's own writes at once
    app.state.page_cache.changed()
    full = client.get(f"/api/submissions/{sid}", headers=bob).json()
    assert full["view"] == "full" and "HIDDEN-SECRET" in full["tests"][1]["message"]


def test_missing_or_bad_token(client, app):
    r = submit(client, {})
    assert r.status_code == 401 and "Bearer" in r.json()["detail"]
    assert r.headers["www-authenticate"] == "Bearer"
    r = submit(client, {"Authorization": "Bearer not-a-token"})
    assert r.status_code == 401 and "令牌无效" in r.json()["detail"]
    assert rows(app, "select count(*) from submissions")[0][0] == 0


@pytest.mark.parametrize("body, status, fragment", [
    ({"problem": "add-one", "code": "x" * 2001}, 413, "too long"),
    ({"problem": "add-one", "code": "x = '\ud800'"}, 400, "UTF-8"),
    ({"problem": "add-one", "code": "x = 1\x00"}, 400, "NUL"),
    ({"problem": "add-one", "code": "  \n"}, 400, "empty"),
    ({"problem": "add-one"}, 422, "code"),
    ({"problem": "add-one", "code": 5}, 422, "code"),
    ({"problem": "nope", "code": GOOD}, 404, "no such problem"),
])
def test_bad_submissions_store_nothing(client, app, alice, body, status, fragment):
    # json.dumps escapes a lone surrogate as \ud800: valid JSON, not encodable as UTF-8
    r = client.post("/api/submissions?lang=en", content=json.dumps(body),
                    headers={**alice, "Content-Type": "application/json"})
    assert r.status_code == status, r.text
    assert fragment in r.json()["detail"]
    assert rows(app, "select count(*) from submissions")[0][0] == 0
    assert rows(app, "select count(*) from jobs")[0][0] == 0


@pytest.mark.parametrize("raw", [b"{not json", b'{"problem": "add-one", "code": "\xff\xfe"}'])
def test_malformed_or_non_utf8_json(client, app, alice, raw):
    r = client.post("/api/submissions?lang=en", content=raw,
                    headers={**alice, "Content-Type": "application/json"})
    assert r.status_code == 400 and "UTF-8" in r.json()["detail"]
    assert r.json()["detail"].startswith("the request body")
    assert rows(app, "select count(*) from submissions")[0][0] == 0


def test_oversized_body_is_refused_before_reading(client, alice):
    r = client.post("/api/submissions?lang=en", content=b"x" * (2 * 1024 * 1024),
                    headers={**alice, "Content-Type": "application/json"})
    assert r.status_code == 413 and "too large" in r.json()["detail"]


def test_one_submission_in_flight(client, alice, worker):
    assert submit(client, alice).status_code == 202
    r = submit(client, alice)
    assert r.status_code == 429 and "排队或评测中" in r.json()["detail"]
    judge_next(worker)
    assert submit(client, alice).status_code == 202


def test_submissions_in_flight_is_a_setting(settings, clock):
    """Load tests (bench/chaos.py) let one user have several submissions queued."""
    from fastapi.testclient import TestClient

    from web.main import create_app

    settings.submissions_in_flight = 2
    with TestClient(create_app(settings, clock=clock)) as client:
        alice = make_user(client, "alice")
        assert submit(client, alice).status_code == 202
        assert submit(client, alice).status_code == 202
        r = client.post("/api/submissions?lang=en", json={"problem": "add-one", "code": GOOD},
                        headers=alice)
        assert r.status_code == 429 and "2 submissions queued" in r.json()["detail"]
        client.app.state.engine.dispose()


def test_per_minute_cap(client, app, alice, worker, clock):
    for _ in range(3):  # the test settings allow 3 a minute
        assert submit(client, alice).status_code == 202
        judge_next(worker)
        clock.advance(5)
    r = client.post("/api/submissions?lang=en", json={"problem": "add-one", "code": GOOD},
                    headers=alice)
    assert r.status_code == 429 and "at most 3 a minute" in r.json()["detail"]
    assert 1 <= int(r.headers["retry-after"]) <= 60
    assert rows(app, "select count(*) from submissions")[0][0] == 3
    clock.advance(int(r.headers["retry-after"]))
    assert submit(client, alice).status_code == 202


def test_a_user_submits_to_another_problem_while_limits_are_per_user(client, alice):
    bob = make_user(client, "bob")
    assert submit(client, alice).status_code == 202
    assert submit(client, bob).status_code == 202


def test_the_health_check_answers_while_the_database_does(client, app, tmp_path, monkeypatch):
    from web import db

    r = client.get("/healthz")
    assert r.status_code == 200 and r.json() == {"status": "ok", "database": "ok"}
    gone = db.make_engine(f"sqlite:///{tmp_path / 'no-such-folder' / 'judge.db'}")
    monkeypatch.setattr(app.state, "sessionmaker", db.make_sessionmaker(gone))
    r = client.get("/healthz")
    assert r.status_code == 503 and r.json()["database"] == "down"
    gone.dispose()
