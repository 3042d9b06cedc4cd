"""The web's commands of ``python -m judge`` (found through an entry point) and the worker
command, run in-process where they do not serve."""

from __future__ import annotations

from importlib import metadata

from fastapi.testclient import TestClient

import judge.cli_base
from judge.cli import build_parser, main
from tests.web.support import make_user, rows
from web.cli import serve
from web.main import create_app
from web.settings import Settings


def test_make_admin_is_admin_promote_and_demote_audit_logged(tmp_path, problems_root, capsys):
    data = tmp_path / "data"
    app = create_app(Settings(data_dir=data, problems_dir=problems_root))
    with TestClient(app) as client:
        make_user(client, "Alice")
    assert main(["make-admin", "alice", "--data-dir", str(data)]) == 0
    assert rows(app, "select is_admin from users")[0][0] in (True, 1)
    assert main(["make-admin", "alice", "--revoke", "--data-dir", str(data)]) == 0
    assert rows(app, "select is_admin from users")[0][0] in (False, 0)
    assert main(["admin", "promote", "alice", "--data-dir", str(data)]) == 0
    assert rows(app, "select is_admin from users")[0][0] in (True, 1)
    assert main(["make-admin", "nobody", "--data-dir", str(data)]) == 2
    assert "no user 'nobody'" in capsys.readouterr().err
    assert rows(app, "select actor, action, target from audit_log order by id") == [
        ("cli", "promote", "Alice"), ("cli", "demote", "Alice"), ("cli", "promote", "Alice")]
    app.state.engine.dispose()


def test_the_web_commands_come_from_an_entry_point():
    names = {e.value for e in metadata.entry_points(group="torch_judge.commands")}
    assert names == {"web.cli:add_commands"}
    commands = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert {"serve", "admin", "problems", "preview", "make-admin", "worker",
            "pack"} <= set(commands)


def _without(monkeypatch, *gone: str) -> None:
    """Simulate an environment where these distributions are not installed."""
    real = metadata.version

    def version(name: str) -> str:
        if name.lower() in gone:
            raise metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(judge.cli_base.metadata, "version", version)


def test_serve_without_the_web_extra_says_which_extra_to_install(monkeypatch, capsys,
                                                                  tmp_path):
    _without(monkeypatch, "fastapi", "uvicorn")
    assert main(["serve", "--data-dir", str(tmp_path), "--no-sandbox"]) == 2
    err = capsys.readouterr().err
    assert "`serve` needs the web extra" in err and "torch-judge[web]" in err
    assert "fastapi" in err and "uvicorn" in err and "Traceback" not in err
    assert not (tmp_path / "judge.db").exists()
    assert main(["admin", "promote", "x", "--data-dir", str(tmp_path)]) == 2
    assert "needs the web extra" in capsys.readouterr().err


def test_worker_without_the_worker_extra_says_which_extra_to_install(monkeypatch, capsys):
    _without(monkeypatch, "httpx")
    monkeypatch.setenv("JUDGE_WORKER_TOKEN", "t")
    assert main(["worker", "--server", "http://127.0.0.1:9"]) == 2
    err = capsys.readouterr().err
    assert "`worker` needs the worker extra" in err and "torch-judge[worker]" in err


def test_the_worker_extra_holds_nothing_of_the_web():
    worker = set(judge.cli_base.extra_requirements("worker"))
    assert worker == {"httpx", "pyseccomp"}
    web_only = set(judge.cli_base.extra_requirements("web")) - worker
    assert {"fastapi", "sqlalchemy", "uvicorn", "jinja2"} <= web_only


def test_serve_refuses_to_run_unsandboxed_by_default(monkeypatch, capsys, tmp_path):
    monkeypatch.delenv("JUDGE_NO_SANDBOX", raising=False)
    monkeypatch.setattr(serve, "sandbox_unavailable", lambda: "the sandbox is missing")
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
    from judge.isolation import make_launcher

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
