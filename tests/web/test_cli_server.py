"""The server commands of ``python -m judge``, run in-process where they do not serve."""

from __future__ import annotations

from fastapi.testclient import TestClient

from judge import cli_server
from judge.cli import main
from tests.web.support import make_user, rows
from web.main import create_app
from web.settings import Settings


def test_make_admin(tmp_path, problems_root, capsys):
    data = tmp_path / "data"
    app = create_app(Settings(data_dir=data, problems_dir=problems_root))
    with TestClient(app) as client:
        make_user(client, "Alice")
    assert main(["make-admin", "alice", "--data-dir", str(data)]) == 0
    assert rows(app, "select is_admin from users")[0][0] in (True, 1)
    assert main(["make-admin", "alice", "--revoke", "--data-dir", str(data)]) == 0
    assert rows(app, "select is_admin from users")[0][0] in (False, 0)
    assert main(["make-admin", "nobody", "--data-dir", str(data)]) == 2
    assert "no user 'nobody'" in capsys.readouterr().err
    app.state.engine.dispose()


def test_serve_refuses_to_run_unsandboxed_by_default(monkeypatch, capsys, tmp_path):
    monkeypatch.delenv("JUDGE_NO_SANDBOX", raising=False)
    monkeypatch.setattr(cli_server, "_sandbox_available", lambda: "the sandbox is missing")
    assert main(["serve", "--data-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "the sandbox is missing" in err and "--no-sandbox" in err
    assert not (tmp_path / "judge.db").exists()


def test_worker_needs_the_token(monkeypatch, capsys):
    monkeypatch.delenv("JUDGE_WORKER_TOKEN", raising=False)
    assert main(["worker", "--server", "http://127.0.0.1:9"]) == 2
    assert "JUDGE_WORKER_TOKEN" in capsys.readouterr().err


def test_each_worker_gets_its_own_sandbox_slot(monkeypatch):
    import judge.isolation
    from judge.worker import make_launcher

    made = []

    def factory(slot=None):
        made.append(slot)
        return f"sandbox-{slot}"

    monkeypatch.delenv("JUDGE_NO_SANDBOX", raising=False)
    monkeypatch.setattr(judge.isolation, "sandbox_launcher", factory)
    assert make_launcher(False, 3) == "sandbox-3" and made == [3]
    plain = make_launcher(True, 3)
    assert plain.isolation == "none"
    plain.close()
