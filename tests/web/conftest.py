"""Fixtures for the web tests: an app on a temporary SQLite database with a clock the test
moves (see support.py for the problem bank and the helpers)."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from judge.worker_client import WorkerClient
from tests.web import postgres
from tests.web.support import CHROMIUM, Clock, make_admin, make_user, shot, write_bank
from web.main import create_app
from web.settings import Settings


@pytest.fixture(autouse=True)
def _no_settings_from_the_environment(monkeypatch):
    """Web tests see only the settings they pass. The attack suite's session fixture puts a
    canary JUDGE_WORKER_TOKEN in this process's environment, and pydantic-settings would
    read it into every Settings() built later on the same xdist worker."""
    for name in Settings.model_fields:
        monkeypatch.delenv(f"JUDGE_{name.upper()}", raising=False)


@pytest.fixture
def problems_root(tmp_path) -> Path:
    return write_bank(tmp_path / "problems")


@pytest.fixture
def clock() -> Clock:
    return Clock()


BOTH = ("sqlite", "postgresql")


def pytest_generate_tests(metafunc):
    """Tests marked ``both_databases`` run twice: on SQLite and on PostgreSQL."""
    if ("database_url" in metafunc.fixturenames
            and metafunc.definition.get_closest_marker("both_databases")):
        metafunc.parametrize("database_url", BOTH, indirect=True)


@pytest.fixture(scope="session")
def postgres_url():
    """A PostgreSQL server for this test process: JUDGE_TEST_DATABASE_URL if set, else a
    throwaway cluster (tests/web/postgres.py). Without PostgreSQL installed the tests that
    need it are skipped, except in CI (CI=true), where they fail: CI must test both."""
    given = os.environ.get("JUDGE_TEST_DATABASE_URL")
    if given:
        yield given
        return
    bin_dir = postgres.binaries()
    if bin_dir is None:
        why = ("PostgreSQL is not installed (no initdb on PATH or under "
               "/usr/lib/postgresql/*/bin; scripts/setup.sh --test installs it as root)")
        if os.environ.get("CI") == "true":
            pytest.fail(f"{why}: CI runs the PostgreSQL variants, they must not be skipped")
        pytest.skip(why)
    with postgres.cluster(bin_dir) as running:
        yield running.url()


@pytest.fixture
def database_url(request):
    """None: SQLite in the data folder. A PostgreSQL URL (the ``postgresql`` variant of a
    ``both_databases`` test, or every test with JUDGE_TEST_DATABASE_URL set): a schema of
    this test's own there, dropped afterwards."""
    kind = getattr(request, "param", None)
    if kind is None:
        kind = "postgresql" if os.environ.get("JUDGE_TEST_DATABASE_URL") else "sqlite"
    if kind == "sqlite":
        yield None
        return
    from sqlalchemy import create_engine, text

    base = request.getfixturevalue("postgres_url")
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
    """One rank run per ranking here, so that a test about a ranking posts one result;
    tests/web/test_rank_runs.py times rankings by the default plan (several runs, spaced)."""
    return Settings(data_dir=tmp_path / "data", problems_dir=problems_root,
                    database_url=database_url,
                    worker_token="worker-secret", secret_key="test-secret",
                    submissions_per_minute=3, lease_seconds=30, claim_wait_seconds=0,
                    max_code_bytes=2000, no_sandbox=True, rank_runs=1)


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
def admin(client) -> dict:
    return make_admin(client)


@pytest.fixture
def plain(launcher):
    """The plain launcher of tests/conftest.py, closed after the test."""
    yield launcher
    launcher.close()


@pytest.fixture
def worker(client) -> WorkerClient:
    return WorkerClient("", "worker-secret", http=client)


# ---------------------------------------------------------------- browser tests
# (each browser test module defines its own module-scoped ``server``)

@pytest.fixture(scope="module")
def browser(server):
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        chromium = pw.chromium.launch(
            executable_path=CHROMIUM, headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run",
                  "--disable-dev-shm-usage"])
        yield chromium
        chromium.close()


class PageErrors:
    """JavaScript errors and console errors (CSP violations, failed loads) of a page;
    a test that provokes one on purpose allows it."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.allowed: list[str] = []

    def allow(self, fragment: str) -> None:
        self.allowed.append(fragment)

    def unexpected(self) -> list[str]:
        return [e for e in self.seen if not any(a in e for a in self.allowed)]


@pytest.fixture
def page_errors() -> PageErrors:
    return PageErrors()


@pytest.fixture
def page(browser, server, request, page_errors):
    context = browser.new_context(viewport={"width": 1360, "height": 900}, locale="zh-CN",
                                  base_url=server.url)
    context.set_default_timeout(20_000)
    page = context.new_page()
    page.on("pageerror", lambda e: page_errors.seen.append(str(e)))
    page.on("console", lambda m: page_errors.seen.append(m.text) if m.type == "error" else None)
    yield page
    shot(page, f"{request.node.name}-last")
    context.close()
    assert page_errors.unexpected() == [], "errors in the page"


