"""Invariants: hidden tests' messages never reach a learner; every setting is documented;
the models and the migrations agree; only sanitised HTML is marked safe; apps share nothing."""

from __future__ import annotations

import re
from pathlib import Path

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from fastapi.testclient import TestClient

from tests.web.support import (
    HIDDEN_MARK,
    browser_login,
    fake_report,
    progress_events,
    submit,
)
from web.main import create_app
from web.models import Base
from web.settings import Settings

WEB = Path(__file__).resolve().parents[2] / "web"


def test_hidden_messages_never_reach_a_learner(client, alice, worker):
    sid = submit(client, alice).json()["id"]
    job = worker.claim(worker.register("w", False, {}), False, 0)
    report = fake_report(passed=False)  # the hidden case's message and output hold the mark
    assert worker.events(job, progress_events(report)[:-1])
    browser_login(client, "alice")
    seen = []
    for lang in ("zh", "en"):  # while it runs...
        seen.append(client.get(f"/api/submissions/{sid}?lang={lang}", headers=alice).text)
        seen.append(client.get(f"/submissions/{sid}").text)
    assert worker.result(job, report) == "stored"
    for lang in ("zh", "en"):  # ...and once it is done
        final = client.get(f"/api/submissions/{sid}?lang={lang}", headers=alice)
        seen.append(final.text)
        with client.stream("GET", f"/api/submissions/{sid}/events?lang={lang}",
                           headers=alice) as r:
            seen.append("".join(r.iter_text()))
    for path in (f"/submissions/{sid}", "/submissions", "/", "/problems/add-one",
                 "/leaderboard", "/api/problems", "/api/problems/add-one"):
        seen.append(client.get(path).text)
    leaks = [text for text in seen if HIDDEN_MARK in text or "1234567" in text]
    assert leaks == []
    # the failure itself is reported, by name and category
    hidden = final.json()["tests"][1]
    assert (hidden["name"], hidden["verdict"], hidden["message"]) == (
        "large_values", "wrong_answer", "")


def test_every_setting_is_documented():
    readme = (WEB / "README.md").read_text(encoding="utf-8")
    for name in Settings.model_fields:
        assert f"`JUDGE_{name.upper()}`" in readme, f"JUDGE_{name.upper()} is not in web/README.md"


def test_models_match_the_migrations(app):
    with app.state.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    assert diff == []


SAFE_ALLOWED = {"p.statement_html(lang)|safe", "ex.code|python|safe", "sub.code|python|safe",
                "preview.statement_html(lang)|safe", "preview.statement_html(code)|safe",
                # solutions after solving (web.solutions): the explanation is rendered by
                # web.markdown like a statement; code is highlighted by Pygments
                "solution.explanation_html(lang)|safe", "solution.reference|python|safe",
                "s.code|python|safe",
                # the preview (python -m judge preview) shows the solution as a statement
                "p.solution_html(lang)|safe"}


def test_only_sanitised_html_is_marked_safe():
    for path in (WEB / "templates").glob("*.html"):
        for expr in re.findall(r"\{\{\s*([^}]*?\|safe)\s*\}\}", path.read_text()):
            assert expr in SAFE_ALLOWED, f"{path.name}: {expr}"
    for path in (WEB / "static").glob("*.js"):
        assert "innerHTML" not in path.read_text(), path.name


def test_two_apps_share_no_state(tmp_path, problems_root):
    def app(name):
        return create_app(Settings(data_dir=tmp_path / name, problems_dir=problems_root,
                                   secret_key=name * 8, worker_token=name))

    with TestClient(app("one")) as one, TestClient(app("two")) as two:
        assert one.post("/api/users", json={"username": "amy", "password": "password1"}
                        ).status_code == 201
        assert two.post("/api/users", json={"username": "amy", "password": "password1"}
                        ).status_code == 201
        assert one.app.state.engine is not two.app.state.engine


def test_the_data_folder_keeps_its_secrets_private(tmp_path, problems_root):
    settings = Settings(data_dir=tmp_path / "d", problems_dir=problems_root).prepare()
    for name in ("secret_key", "worker_token"):
        path = tmp_path / "d" / name
        assert path.stat().st_mode & 0o077 == 0
        assert path.read_text().strip() == getattr(settings, name)
    again = Settings(data_dir=tmp_path / "d", problems_dir=problems_root).prepare()
    assert again.worker_token == settings.worker_token  # kept across restarts


def test_worker_routes_are_documented_and_guarded(client):
    paths = client.get("/openapi.json").json()["paths"]
    worker_paths = [p for p in paths if p.startswith("/worker/")]
    # every route is in web/README.md's "Worker API" table, and nothing else is
    table = (WEB / "README.md").read_text().split("## Worker API", 1)[1].split("\n## ", 1)[0]
    documented = {m.replace("{id}", "{job_id}").replace("{hash}", "{content_hash}")
                  for m in re.findall(r"^\| `(?:GET|POST) (/worker/[^`]+)`", table, re.M)}
    assert set(worker_paths) == documented and len(worker_paths) == 8
    for path in worker_paths:
        for method, op in paths[path].items():
            assert op.get("description")
            url = path.replace("{job_id}", "1").replace("{content_hash}", "0" * 64)
            r = client.request(method.upper(), url, json={})
            assert r.status_code == 401, path


def test_pages_forbid_foreign_scripts(client):
    csp = client.get("/").headers["content-security-policy"]
    assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert client.get("/api/problems").headers["x-content-type-options"] == "nosniff"


def test_every_domain_error_has_an_http_status_and_services_know_no_http():
    """Services raise web.errors' domain errors; one handler maps each kind to a status."""
    from web import errors
    from web.error_handlers import STATUS, headers_of, status_of

    kinds = [k for k in vars(errors).values()
             if isinstance(k, type) and issubclass(k, errors.DomainError)
             and k is not errors.DomainError]
    assert kinds and all(k in STATUS for k in kinds)
    assert status_of(errors.NotFound(errors.T("无", "none"))) == 404
    assert headers_of(errors.Unauthorized(errors.T("", ""))) == {"WWW-Authenticate": "Bearer"}
    assert headers_of(errors.RateLimited(errors.T("", ""), retry_after=7)) == {"Retry-After": "7"}
    errors_source = (WEB / "errors.py").read_text()
    assert "fastapi" not in errors_source and "starlette" not in errors_source
