"""Fixtures for the web tests: an app on a temporary SQLite database with a clock the test
moves (see support.py for the problem bank and the helpers)."""

from __future__ import annotations

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
def settings(tmp_path, problems_root) -> Settings:
    return Settings(data_dir=tmp_path / "data", problems_dir=problems_root,
                    worker_token="worker-secret", secret_key="test-secret",
                    submissions_per_minute=3, lease_seconds=30, claim_wait_seconds=0,
                    max_code_bytes=2000, no_sandbox=True)


@pytest.fixture
def app(settings, clock):
    return create_app(settings, clock=clock)


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
