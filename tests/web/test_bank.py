"""The problem bank in the data folder: bundled problems seeded as published versions,
versions stored once by content hash, and the CLI (``admin``, ``problems``)."""

from __future__ import annotations

import io
import zipfile

import pytest
from fastapi.testclient import TestClient

from judge.cli import main
from tests.conftest import write_problem
from tests.web.support import make_user, rows
from web.main import create_app
from web.settings import Settings


def test_bundled_problems_are_seeded_as_published_versions(app, client):
    (row,) = rows(app, "select p.slug, v.status, v.origin, v.content_hash from problems p "
                       "join problem_versions v on v.id = p.published_version_id")
    assert row[:3] == ("add-one", "valid", "bundled")
    assert row[3] == client.get("/api/problems/add-one").json()["version"]
    assert (app.state.settings.bank_dir / row[3] / "problem.toml").is_file()


def test_a_changed_bundled_problem_is_published_unless_an_admin_took_it_over(
        app, client, problems_root):
    toml = problems_root / "add-one" / "problem.toml"
    toml.write_text(toml.read_text().replace('zh = "加一"', 'zh = "加一（新）"'))
    assert app.state.catalog.refresh()
    assert client.get("/api/problems/add-one").json()["titles"]["zh"] == "加一（新）"
    assert len(rows(app, "select id from problem_versions")) == 2
    with app.state.engine.begin() as conn:  # an admin unpublished it
        from sqlalchemy import text

        conn.execute(text("update problems set published_version_id = null"))
    toml.write_text(toml.read_text().replace("加一（新）", "加一（再新）"))
    app.state.catalog.refresh()
    assert client.get("/api/problems/add-one").status_code == 404
    assert len(rows(app, "select id from problem_versions")) == 3  # stored, not shown


def test_identical_content_is_stored_once(tmp_path, app):
    store = app.state.store
    a = store.put(folder=write_problem(tmp_path / "a")).problem
    b = store.put(folder=write_problem(tmp_path / "b")).problem
    assert a.content_hash == b.content_hash and a.dir == b.dir
    assert [p.name for p in store.root.iterdir() if p.name.startswith(".")] == []


@pytest.fixture
def data(tmp_path, problems_root, monkeypatch):
    """A data folder the CLI and an app share."""
    monkeypatch.setenv("JUDGE_PROBLEMS_DIR", str(problems_root))
    return tmp_path / "data"


def cli(*argv: str, stdin: str | None = None, monkeypatch=None) -> int:
    if stdin is not None:
        assert monkeypatch is not None
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    return main(list(argv))


def test_admin_create_user_from_stdin(data, monkeypatch, capsys):
    assert cli("admin", "create-user", "Root", "--admin", "--data-dir", str(data),
               stdin="password1\n", monkeypatch=monkeypatch) == 0
    assert cli("admin", "create-user", "root", "--data-dir", str(data), stdin="password1\n",
               monkeypatch=monkeypatch) == 2
    assert "taken" in capsys.readouterr().err
    assert cli("admin", "create-user", "shorty", "--data-dir", str(data), stdin="short\n",
               monkeypatch=monkeypatch) == 2
    app = create_app(Settings(data_dir=data))
    with TestClient(app) as client:
        r = client.post("/api/token", data={"username": "root", "password": "password1"})
        assert r.status_code == 200
    assert rows(app, "select username, is_admin from users") == [("Root", 1)]
    assert [r[0] for r in rows(app, "select action from audit_log")] == ["create-user"]
    app.state.engine.dispose()


def test_a_disabled_user_cannot_log_in_or_use_tokens(data, monkeypatch, capsys):
    app = create_app(Settings(data_dir=data))
    with TestClient(app) as client:
        headers = make_user(client, "bob")
        assert client.get("/api/submissions/1", headers=headers).status_code == 404
        assert cli("admin", "disable", "bob", "--data-dir", str(data)) == 0
        assert client.get("/api/submissions/1", headers=headers).status_code == 401
        r = client.post("/api/token?lang=en", data={"username": "bob", "password": "password1"})
        assert r.status_code == 403 and "disabled" in r.json()["detail"]
        assert cli("admin", "enable", "bob", "--data-dir", str(data)) == 0
        r = client.post("/api/token", data={"username": "bob", "password": "password1"})
        assert r.status_code == 200
    app.state.engine.dispose()


def test_problems_add_list_check_publish(data, tmp_path, monkeypatch, capsys):
    package = write_problem(tmp_path / "incoming")
    assert cli("problems", "add", str(package), "--data-dir", str(data)) == 0
    out = capsys.readouterr().out
    assert "double-it: version" in out and "queued for validation" in out
    assert cli("problems", "publish", "double-it", "--data-dir", str(data)) == 2
    assert "only a valid version can be published" in capsys.readouterr().err
    assert cli("problems", "check", "double-it", "--no-sandbox", "--data-dir", str(data)) == 0
    out = capsys.readouterr().out
    assert "✓ reference: accepted" in out and "is valid" in out
    assert cli("problems", "publish", "double-it", "--data-dir", str(data)) == 0
    assert cli("problems", "list", "--data-dir", str(data)) == 0
    listing = capsys.readouterr().out
    assert "double-it" in listing and "add-one" in listing and "valid (cli" in listing
    app = create_app(Settings(data_dir=data))
    with TestClient(app) as client:
        assert client.get("/api/problems/double-it").status_code == 200
        assert cli("problems", "unpublish", "double-it", "--data-dir", str(data)) == 0
        app.state.catalog.refresh()
        assert client.get("/api/problems/double-it").status_code == 404
    actions = [r[0] for r in rows(app, "select action from audit_log order by id")]
    assert actions == ["add-version", "validate", "publish", "unpublish"]
    # the validation queued for the workers was answered by the check
    assert rows(app, "select status from jobs where kind = 'validate'") == [("done",)]
    app.state.engine.dispose()


def test_problems_add_refuses_a_zip_with_parent_paths(data, tmp_path, capsys):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("../evil.py", "x = 1")
    path = tmp_path / "evil.zip"
    path.write_bytes(buffer.getvalue())
    assert cli("problems", "add", str(path), "--data-dir", str(data)) == 2
    assert "'..' and '.' are not allowed" in capsys.readouterr().err
    assert not (tmp_path / "evil.py").exists()
