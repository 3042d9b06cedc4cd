"""Every admin route refuses everyone else: the test walks the app's route table, so a
route added later is covered without being listed. Anonymous: pages redirect to the login
page, the API answers 401. Logged-in learners (session and bearer token): 403."""

from __future__ import annotations

import re

from fastapi.routing import APIRoute

from tests.web.support import browser_login, csrf, make_admin, make_user, rows

PARAMS = {"slug": "add-one", "vid": "1", "uid": "1"}


def all_routes(routes) -> list[APIRoute]:
    """Every APIRoute, also inside included routers (FastAPI >= 0.120 keeps an included
    router as one entry; the routers here add no prefix of their own when included)."""
    found: list[APIRoute] = []
    for route in routes:
        if isinstance(route, APIRoute):
            found.append(route)
        elif getattr(route, "original_router", None) is not None:
            found += all_routes(route.original_router.routes)
    return found


def admin_routes(app) -> list[tuple[str, str]]:
    found = []
    for route in all_routes(app.routes):
        if route.path.startswith(("/admin", "/api/admin")):
            path = re.sub(r"\{(\w+)\}", lambda m: PARAMS[m.group(1)], route.path)
            found += [(method, path) for method in sorted(route.methods)]
    return found


def call(client, method: str, path: str, token: str, headers: dict | None = None):
    data = {"csrf_token": token, "which": "all", "action": "promote"}
    if method == "GET":
        return client.get(path, headers=headers, follow_redirects=False)
    if path.startswith("/api/"):
        return client.request(method, path, json={}, headers=headers, follow_redirects=False)
    return client.request(method, path, data=data, headers=headers, follow_redirects=False)


def test_the_walk_finds_every_kind_of_admin_route(app):
    routes = admin_routes(app)
    assert len(routes) >= 20
    assert ("POST", "/admin/problems/upload") in routes
    assert ("GET", "/api/admin/versions/1/events") in routes
    assert ("POST", "/admin/users/1") in routes


def test_anonymous_visitors_are_refused_everywhere(client):
    token = csrf(client, "/login")  # a valid form: only the missing login refuses it
    for method, path in admin_routes(client.app):
        r = call(client, method, path, token)
        if path.startswith("/api/"):
            assert r.status_code == 401, (method, path, r.status_code)
        else:
            assert r.status_code == 303, (method, path, r.status_code)
            assert r.headers["location"].startswith("/login?next="), (method, path)


def test_learners_are_refused_everywhere(client):
    make_admin(client, "root")  # there is something to see
    client.cookies.clear()
    headers = make_user(client, "learner")
    browser_login(client, "learner")
    token = csrf(client, "/")
    for method, path in admin_routes(client.app):
        r = call(client, method, path, token)  # with the session cookie
        assert r.status_code == 403, (method, path, r.status_code)
        if path.startswith("/api/"):
            anonymous = client.__class__(client.app)
            r = call(anonymous, method, path, token, headers)  # with the bearer token
            assert r.status_code == 403, (method, path, r.status_code)
    # nothing changed: the learner is still a learner, the problem still published
    assert client.get("/api/problems/add-one").status_code == 200
    assert "admin-link" not in client.get("/").text


def test_admins_get_through(client):
    headers = make_admin(client, "root")
    assert client.get("/admin/problems").status_code == 200
    assert client.get("/api/admin/problems", headers=headers).status_code == 200
    assert client.get("/api/admin/audit").status_code == 200  # the session works too


def test_the_admin_api_changes_nothing_for_a_session_cookie_without_the_csrf_token(client):
    """A cookie goes with any request the browser makes, also one another (same-site)
    page makes: a write by cookie must send the page's CSRF token in X-CSRF-Token.
    Bearer tokens are not sent by browsers on their own and need none."""
    bearer = make_admin(client, "root")  # logged in on the client's session too
    writes = [(m, p) for m, p in admin_routes(client.app) if p.startswith("/api/") and m != "GET"]
    assert ("POST", "/api/admin/problems") in writes and len(writes) >= 4
    for method, path in writes:
        for sent in ({}, {"X-CSRF-Token": "not-the-session-token-123456"}):
            r = client.request(method, path + "?lang=en", json={}, headers=sent,
                               follow_redirects=False)
            assert r.status_code == 403, (method, path, r.status_code)
            assert "X-CSRF-Token" in r.json()["detail"], r.json()
    r = client.post("/api/admin/problems", files={"file": ("p.zip", b"PK", "application/zip")})
    assert r.status_code == 403 and "CSRF" in r.json()["detail"]
    # nothing changed: still published, no version or audit entry added
    assert client.get("/api/problems/add-one").status_code == 200
    assert rows(client.app, "select count(*) from problem_versions") == [(1,)]
    assert rows(client.app, "select count(*) from audit_log") == [(0,)]
    assert client.get("/api/admin/audit").status_code == 200  # reads need no token

    token = csrf(client, "/admin/problems")  # what the admin pages' scripts would send
    r = client.post("/api/admin/problems/add-one/unpublish", headers={"X-CSRF-Token": token})
    assert r.status_code == 200 and r.json() == {"slug": "add-one", "published": None}
    cookieless = client.__class__(client.app)
    r = cookieless.post("/api/admin/versions/1/publish", headers=bearer)
    assert r.status_code == 200 and r.json()["published"] is True
