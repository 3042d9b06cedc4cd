"""Secrets from files (compose secrets): the secret key, the worker token and the database
password, each from a ``JUDGE_*_FILE``; a value given directly wins; an unreadable or empty
file stops the start with a message naming the variable."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from web.settings import Settings


def secret(tmp_path, name: str, value: str):
    path = tmp_path / name
    path.write_text(value + "\n")
    return path


def test_secrets_come_from_files(tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGE_SECRET_KEY_FILE", str(secret(tmp_path, "key", "k3y")))
    monkeypatch.setenv("JUDGE_WORKER_TOKEN_FILE", str(secret(tmp_path, "token", "t0ken")))
    monkeypatch.setenv("JUDGE_DATABASE_URL", "postgresql+psycopg://judge@db:5432/judge")
    monkeypatch.setenv("JUDGE_DATABASE_PASSWORD_FILE", str(secret(tmp_path, "pw", "p@ss:w/rd")))
    settings = Settings(data_dir=tmp_path / "data").prepare()
    assert settings.secret_key == "k3y" and settings.worker_token == "t0ken"
    assert settings.db_url == "postgresql+psycopg://judge:p%40ss%3Aw%2Frd@db:5432/judge"
    assert not (tmp_path / "data" / "worker_token").exists()  # nothing made up


def test_a_value_given_directly_wins_over_its_file(tmp_path):
    settings = Settings(worker_token="direct", worker_token_file=secret(tmp_path, "t", "file"),
                        database_url="postgresql+psycopg://judge:given@db/judge",
                        database_password_file=secret(tmp_path, "pw", "file"))
    assert settings.worker_token == "direct"
    assert settings.db_url == "postgresql+psycopg://judge:given@db/judge"


@pytest.mark.parametrize("content", [None, ""])
def test_a_missing_or_empty_secret_file_is_refused(tmp_path, content):
    path = tmp_path / "token"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ValidationError, match="JUDGE_WORKER_TOKEN_FILE"):
        Settings(worker_token_file=path)
