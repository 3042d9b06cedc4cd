"""The app factory: ``create_app(settings)`` builds everything one app needs (engine,
migrations, the problem bank and the catalog, templates) and includes the routers; nothing
is module-global."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
from collections.abc import AsyncIterator, Callable
from datetime import datetime

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles
from starlette.concurrency import run_in_threadpool
from starlette.middleware.sessions import SessionMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from judge.i18n import T
from judge.package import problems_dir
from judge.problem_store import Store
from judge.upload import LIMITS
from web import bundled, db, error_handlers
from web.cache_scopes import watch
from web.catalog import Catalog
from web.data import bank, queue
from web.deps import session_user
from web.hub import Hub
from web.language import LANGS
from web.local_relay import LocalRelay, relay_folder
from web.page_cache import CHANGED, PageCache, encode
from web.pg_relay import PgRelay
from web.practice_pack import PackBuilder
from web.response_cache import KeptResponses, ResponseCache
from web.routes import (
    admin_api,
    admin_pages,
    admin_users,
    api_docs,
    api_learner,
    api_problems,
    api_runs,
    api_submissions,
    api_users,
    health,
    pages_auth,
    pages_board,
    pages_diff,
    pages_problems,
    pages_profile,
    pages_submissions,
    worker_api,
)
from web.settings import Settings
from web.templating import HERE, make_templates

log = logging.getLogger("web")

BANK_REFRESH_S = 10.0
PAGE_BODY_LIMIT = 1024 * 1024  # forms and API requests (code is capped far lower)
WORKER_BODY_LIMIT = 16 * 1024 * 1024  # a report with every test's output
UPLOAD_BODY_LIMIT = 21 * 1024 * 1024  # an admin's package upload (judge.upload caps the zip)


def create_app(settings: Settings | None = None, *, catalog: Catalog | None = None,
               clock: Callable[[], datetime] = db.utcnow) -> FastAPI:
    settings = (settings or Settings()).prepare()
    engine = db.make_engine(settings.db_url)
    sessions = db.make_sessionmaker(engine)
    store = Store(settings.bank_dir)

    def published() -> list:
        """Seed the bundled problems (new content only), then the published versions."""
        with sessions() as session:
            bundled.seed(session, store, settings.problems_dir or problems_dir(),
                               clock())
            return bank.published(session, store)

    def start() -> Catalog:
        db.migrate(engine)
        return catalog or Catalog(settings.problems_dir, source=published)

    # the database may go away between the migrations and the bank's first load, too
    catalog = db.when_ready(start)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        hub = app.state.hub
        hub.bind(asyncio.get_running_loop())
        relay = _relay(engine, settings, hub)
        relay.start()
        hub.relay = relay
        app.state.relay = relay
        stopping = asyncio.Event()
        tasks = [asyncio.create_task(_requeue_expired_until(stopping, app)),
                 asyncio.create_task(_refresh_bank_until(stopping, app))]
        try:
            yield
        finally:
            stopping.set()
            await asyncio.gather(*tasks)  # lets work in progress finish with its connection
            hub.relay = None
            await run_in_threadpool(relay.stop)
            app.state.pack.close()
            engine.dispose()

    app = FastAPI(title="torch-judge", version="0.1.0", lifespan=lifespan,
                  docs_url=None, redoc_url=None,  # web/routes/api_docs.py serves them locally
                  description="PyTorch training-loop exercises: problems, submissions, "
                              "live judging. Learners' API under /api; workers' under /worker.")
    app.state.settings = settings
    app.state.engine = engine
    app.state.sessionmaker = sessions
    app.state.catalog = catalog
    app.state.store = store
    app.state.hub = Hub()
    _caches(app, settings)
    app.state.clock = clock
    app.state.templates = make_templates()
    app.state.pack = PackBuilder(settings, catalog)

    _assemble(app, settings)
    return app


def _caches(app: FastAPI, settings: Settings) -> None:
    """The page cache, told of every change by this process's commits, the relay and the
    catalog; the kept answers (web/response_cache.py) follow it."""
    state, hub = app.state, app.state.hub
    state.page_cache = cache = PageCache(settings.page_cache_seconds)
    hub.on(CHANGED, cache.changed)  # another process wrote (the relay): anything
    hub.on_any(cache.heard)  # or some scopes
    state.catalog.on_change = cache.changed  # pages show the catalog too
    state.responses = KeptResponses(cache, enabled=lambda: settings.response_cache)
    watch(state.sessionmaker, cache,
          publish=lambda scopes: hub.relay and hub.relay.publish(encode(scopes)))


def _relay(engine, settings: Settings, hub: Hub) -> PgRelay | LocalRelay:
    """Other web processes may share the queue: on PostgreSQL anywhere, on SQLite on this
    machine (serve --web-processes)."""
    if engine.dialect.name == "postgresql":
        return PgRelay(engine, hub.wake_local, hub.wake_all)
    return LocalRelay(relay_folder(settings.data_dir), hub.wake_local, hub.wake_all)


def app_from_env() -> FastAPI:
    """The app as ``serve --web-processes N`` starts it in each of its processes: settings
    from the environment (``JUDGE_*``, which ``serve`` sets from its arguments)."""
    return ready_to_serve(create_app(Settings()))


def ready_to_serve(app: FastAPI) -> FastAPI:
    """Render what every problem page shows of each version (in each language), so that no
    learner's first view in this process waits for it (the first statement also imports
    Markdown and Pygments: 200 ms); then put what the process holds (the imports, torch's
    among them through the sandbox protocol; the catalog; the templates: some 270,000
    objects) out of the cyclic garbage collector's reach. A full collection walked all of
    it and stalled every request of the process for 100-500 ms, a few times a minute
    under load; now it walks what requests made since."""
    for problem in app.state.catalog:
        for lang in LANGS:
            pages_problems.statement_part(app.state.templates, problem, lang)
    gc.collect()
    gc.freeze()
    return app


def _assemble(app: FastAPI, settings: Settings) -> None:
    """The middleware, the error handlers, the static files and every router."""
    app.add_middleware(SecurityHeaders)
    app.add_middleware(BodyLimit)  # inside the session middleware: its 413 page needs one
    app.add_middleware(SessionMiddleware, secret_key=settings.secret_key or "",
                       session_cookie="judge_session", max_age=settings.session_days * 86400,
                       same_site="lax", https_only=settings.cookie_secure)
    # outermost: a kept answer goes out before any other middleware runs
    app.add_middleware(ResponseCache, kept=app.state.responses)
    error_handlers.install(app)
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    # pages_diff before pages_submissions: /submissions/compare is not a submission id
    for module in (api_users, api_problems, api_submissions, api_learner, api_runs,
                   admin_api, worker_api, pages_auth, pages_problems, pages_diff,
                   pages_submissions, pages_profile, pages_board, admin_pages, admin_users,
                   health, api_docs):
        app.include_router(module.router)


async def _refresh_bank_until(stopping: asyncio.Event, app: FastAPI) -> None:
    """Follow the bank: new bundled packages on disk, versions published elsewhere (the
    CLI, another process). Admin pages refresh it at once after their own changes."""
    while not stopping.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stopping.wait(), BANK_REFRESH_S)
            return
        try:
            await run_in_threadpool(app.state.catalog.refresh)
        except Exception:
            log.exception("refreshing the problem bank failed")


async def _requeue_expired_until(stopping: asyncio.Event, app: FastAPI) -> None:
    """Return jobs whose lease ran out to the queue (claims do it too; this keeps the
    submission pages honest when no worker is asking)."""
    state = app.state
    interval = max(0.5, min(5.0, state.settings.lease_seconds / 4))

    def sweep() -> list[int]:
        with state.sessionmaker() as session:
            return queue.requeue_expired(session, state.clock())

    while not stopping.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stopping.wait(), interval)
            return
        try:
            changed = await run_in_threadpool(sweep)
        except Exception:
            log.exception("requeueing expired jobs failed")
            continue
        for sid in changed:
            state.hub.notify(("submission", sid))
        if changed:
            state.hub.notify("queue")


class SecurityHeaders:
    """Defence in depth behind the escaping: pages may run only this site's scripts (the
    JSON blocks in templates are data, not scripts), and are never framed."""

    CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
           "img-src 'self' data: https:; connect-src 'self'; frame-ancestors 'none'; "
           "base-uri 'none'; form-action 'self'")
    # /docs and /redoc (web/routes/api_docs.py): FastAPI's pages start Swagger UI / ReDoc
    # with an inline script (no user content on them); everything else from this site only
    DOCS_CSP = ("default-src 'self'; script-src 'self' 'unsafe-inline'; "
                "style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; "
                "worker-src 'self' blob:; connect-src 'self'; frame-ancestors 'none'; "
                "base-uri 'none'; form-action 'self'")
    OPENAPI_PAGES = ("/docs", "/redoc")

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        csp = self.DOCS_CSP if scope["path"] in self.OPENAPI_PAGES else self.CSP

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers += [(b"x-content-type-options", b"nosniff"),
                            (b"referrer-policy", b"same-origin")]
                headers.append((b"content-security-policy", csp.encode()))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_headers)


class BodyLimit:
    """Refuse request bodies over a size (413) before anything reads them into memory."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path = scope["path"]
        limit = (WORKER_BODY_LIMIT if path.startswith("/worker/")
                 else UPLOAD_BODY_LIMIT if path.startswith(("/admin/", "/api/admin/"))
                 else PAGE_BODY_LIMIT)
        headers = dict(scope.get("headers") or [])
        length = headers.get(b"content-length")
        if length is not None and length.isdigit() and int(length) > limit:
            return await self._too_large(scope, receive, send, limit)
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise _TooLarge
            return message

        try:
            await self.app(scope, counted, send)
        except _TooLarge:
            await self._too_large(scope, receive, send, limit)

    async def _too_large(self, scope: Scope, receive: Receive, send: Send, limit: int) -> None:
        from starlette.requests import Request

        request = Request(scope, receive)
        if scope["path"].startswith(("/admin/", "/api/admin/")):
            message = T(f"文件太大：题目包的 zip 最多 {LIMITS.archive_bytes // 2**20} MiB",
                        f"the file is too large: a package's zip may be at most "
                        f"{LIMITS.archive_bytes // 2**20} MiB")
        else:
            message = T(f"请求太大：最多 {limit // 1024} KiB", f"request too large: at most "
                        f"{limit // 1024} KiB")
        if error_handlers.is_api(request):
            response = error_handlers.respond(request, 413, message)
        else:  # a page like any other: the visitor's language, logged in as they are
            response = await run_in_threadpool(_page_with_user, request, message)
        await response(scope, receive, send)


def _page_with_user(request, message: T):
    with request.app.state.sessionmaker() as session:
        session_user(request, session)
        return error_handlers.respond(request, 413, message)


class _TooLarge(Exception):
    pass
