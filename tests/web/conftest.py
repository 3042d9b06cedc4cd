"""Fixtures for the web tests: an app on a temporary SQLite database with a clock the test
moves (see support.py for the problem bank and the helpers)."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from judge.worker import WorkerClient
from tests.web.support import Clock, make_user, write_bank
from web.main import create_app
from web.settings import Settings


@pytest.fixture
def problems_root(tmp_path) -> Path:
    return write_bank(tmp_path / "problems")


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def database_url():
    """None: SQLite in the data folder. With JUDGE_TEST_DATABASE_URL (a PostgreSQL URL) each
    test gets a schema of its own there, dropped afterwards."""
    base = os.environ.get("JUDGE_TEST_DATABASE_URL")
    if not base:
        yield None
        return
    from sqlalchemy import create_engine, text

    schema = f"test_{uuid.uuid4().hex[:12]}"
    engine = create_engine(base)
    with engine.begin() as conn:
        conn.execute(text(f"CREATE SCHEMA {schema}"))
    yield f"{base}{'&' if '?' in base else '?'}options=-csearch_path%3D{schema}"
    with engine.begin() as conn:
        conn.execute(text(f"DROP SCHEMA {schema} CASCADE"))
    engine.dispose()


@pytest.fixture
def settings(tmp_path, problems_root, database_url) -> Settings:
    return Settings(data_dir=tmp_path / "data", problems_dir=problems_root,
                    database_url=database_url,
                    worker_token="worker-secret", secret_key="test-secret",
                    submissions_per_minute=3, lease_seconds=30, claim_wait_seconds=0,
                    max_code_bytes=2000, no_sandbox=True)


@pytest.fixture
def app(settings, clock):
    app = create_app(settings, clock=clock)
    yield app
    app.state.engine.dispose()  # also when no client ran the app's lifespan


@pytest.fixture
def client(app):
    with TestClient(app) as c:
        yield c


@pytest.fixture
def alice(client) -> dict:
    return make_user(client, "alice")


@pytest.fixture
def worker(client) -> WorkerClient:
    return WorkerClient("", "worker-secret", http=client)
