"""Dependencies shared by the routes, as ``Annotated`` aliases that keep signatures short.

Who is asking: ``TokenUser`` (a bearer token; the API's writes), ``ApiUser`` (a bearer
token or the page's session cookie; the API's reads, so the submission page's
EventSource works, and the admin API, whose writes by cookie must carry the CSRF token),
``PageUser``/``LoggedIn`` (the session cookie) and ``WorkerAuth`` (the worker token).

The dependencies are ``async``: FastAPI runs a plain ``def`` dependency in a thread of its
pool, and a request that hopped threads five times spent more on the hops than on its
page. Only what may wait on the database goes to a thread: closing a session that used a
connection, and looking up a user the page cache does not hold.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Callable
from datetime import datetime
from typing import Annotated

from fastapi import Depends, Form, Request
from fastapi.security import OAuth2PasswordBearer
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from judge.i18n import T
from web.catalog import Catalog
from web.data import accounts
from web.db import CONNECTED
from web.errors import Forbidden, LoginRequired, Unauthorized
from web.hub import Hub
from web.models import User
from web.page_cache import MISSING, PageCache
from web.security import csrf_ok, token_hash
from web.settings import Settings


async def get_db(request: Request) -> AsyncIterator[Session]:
    """A session; it takes a connection only when first used (a page served from the page
    cache never does), and only then is closing it (a rollback) done in a thread."""
    session = request.app.state.sessionmaker()
    try:
        yield session
    finally:
        if session.info.pop(CONNECTED, False):
            await run_in_threadpool(session.close)
        else:
            session.close()


async def get_settings(request: Request) -> Settings:
    return request.app.state.settings


async def get_catalog(request: Request) -> Catalog:
    return request.app.state.catalog


async def get_hub(request: Request) -> Hub:
    return request.app.state.hub


async def get_page_cache(request: Request) -> PageCache:
    return request.app.state.page_cache


async def get_now(request: Request) -> datetime:
    clock: Callable[[], datetime] = request.app.state.clock
    return clock()


# Closed when the route function returns, before the response goes out: an event stream
# does not hold a pooled connection for its whole life.
SessionDep = Annotated[Session, Depends(get_db, scope="function")]
SettingsDep = Annotated[Settings, Depends(get_settings)]
CatalogDep = Annotated[Catalog, Depends(get_catalog)]
HubDep = Annotated[Hub, Depends(get_hub)]
CacheDep = Annotated[PageCache, Depends(get_page_cache)]
Now = Annotated[datetime, Depends(get_now)]

oauth2 = OAuth2PasswordBearer(tokenUrl="/api/token", auto_error=False)
MISSING_TOKEN = T("缺少登录令牌：先 POST /api/token 取得 access_token，再以 "
                  "Authorization: Bearer <token> 发送",
                  "missing token: POST /api/token for an access_token and send it as "
                  "Authorization: Bearer <token>")


def cached_user(request: Request, db: Session, key: tuple,
                load: Callable[[], User | None]) -> User | None:
    """Who a token or a session names, looked up once per page-cache generation (a write
    to ``users`` or ``api_tokens`` starts one, web/page_cache.py) and attached to this
    request's session without a query (``merge(load=False)``). A token that expires is
    refused at most the cache's TTL (2 s) late."""
    def build() -> User | None:
        user = load()
        if user is not None:
            db.expunge(user)
        return user

    # a user's or token's row changes with "everything" (web/page_cache.py): no scope
    return _attach(db, request.app.state.page_cache.get(key, build, scopes=()))


def _attach(db: Session, cached: User | None) -> User | None:
    return None if cached is None else db.merge(cached, load=False)


async def cached_user_async(request: Request, db: Session, key: tuple,
                            load: Callable[[], User | None]) -> User | None:
    """:func:`cached_user`, on the event loop when the page cache holds the user (no
    query), else in a thread."""
    cached = request.app.state.page_cache.peek(key)
    if cached is MISSING:
        return await run_in_threadpool(cached_user, request, db, key, load)
    return _attach(db, cached)


def _token_lookup(request: Request, db: Session, now: datetime,
                  token: str) -> tuple[tuple, Callable[[], User | None]]:
    digest = token_hash(token)
    return ("token", digest), lambda: accounts.user_for_token(db, digest, now)


async def user_for_token(request: Request, db: Session, now: datetime,
                         token: str) -> User | None:
    return await cached_user_async(request, db, *_token_lookup(request, db, now, token))


async def _from_token(request: Request, db: Session, now: datetime, token: str) -> User:
    user = await user_for_token(request, db, now, token)
    if user is None:
        raise Unauthorized(T("登录令牌无效或已过期，请重新获取",
                                 "invalid or expired token; get a new one"))
    request.state.lang = user.lang
    return user


def _session_lookup(request: Request, db: Session
                    ) -> tuple[tuple, Callable[[], User | None]] | None:
    uid = request.session.get("uid")
    return (("user", uid), lambda: db.get(User, uid)) if isinstance(uid, int) else None


def _session_holder(request: Request, user: User | None) -> User | None:
    """The session's user, unless disabled since logging in or logged out since (a copy
    of the cookie): then logged out."""
    if user is not None and (user.disabled
                             or request.session.get("gen", 0) != user.session_gen):
        request.session.clear()
        user = None
    if user is not None:
        request.state.lang = user.lang
        request.state.user = user
    return user


async def _from_session(request: Request, db: Session) -> User | None:
    lookup = _session_lookup(request, db)
    user = await cached_user_async(request, db, *lookup) if lookup else None
    return _session_holder(request, user)


def session_user(request: Request, db: Session) -> User | None:
    """The logged-in user of a request that no route answers (a page the middleware
    refuses, such as a 413), with its language set as a page would."""
    lookup = _session_lookup(request, db)
    return _session_holder(request, cached_user(request, db, *lookup) if lookup else None)


async def token_user(request: Request, db: SessionDep, now: Now,
                     token: Annotated[str | None, Depends(oauth2)]) -> User:
    if not token:
        raise Unauthorized(MISSING_TOKEN)
    return await _from_token(request, db, now, token)


SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
CSRF_HEADER = "X-CSRF-Token"
API_CSRF = T(f"用登录会话（cookie）调用会修改数据的 API 时，要在 {CSRF_HEADER} 头里带上页面的 "
             f"CSRF 令牌（CSRF 校验失败）；脚本请用 Authorization: Bearer <token>",
             f"a request that changes data and is authenticated by the session cookie must "
             f"send the page's CSRF token in the {CSRF_HEADER} header (CSRF check failed); "
             f"scripts should use Authorization: Bearer <token>")


async def api_user(request: Request, db: SessionDep, now: Now,
                   token: Annotated[str | None, Depends(oauth2)]) -> User:
    """A bearer token, else the session cookie. A cookie is sent by the browser whoever
    made the request, so a request that changes data must prove it came from one of our
    pages: the session's CSRF token in a header (another site cannot read it, nor send a
    custom header without a CORS preflight)."""
    if token:
        return await _from_token(request, db, now, token)
    user = await _from_session(request, db)
    if user is None:
        raise Unauthorized(MISSING_TOKEN)
    if (request.method not in SAFE_METHODS
            and not csrf_ok(request.session, request.headers.get(CSRF_HEADER))):
        raise Forbidden(API_CSRF)
    return user


async def reader(request: Request, db: SessionDep, now: Now,
                 token: Annotated[str | None, Depends(oauth2)]) -> User | None:
    """Who reads a public route, if anyone says: their saved language answers it. A token
    that is not valid (any more) is ignored here: the data is public."""
    if token:
        user = await user_for_token(request, db, now, token)
        if user is not None:
            request.state.lang = user.lang
        return user
    return await _from_session(request, db)


async def page_user(request: Request, db: SessionDep) -> User | None:
    return await _from_session(request, db)


async def logged_in(request: Request, user: Annotated[User | None, Depends(page_user)]) -> User:
    if user is None:
        path = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        raise LoginRequired(path)
    return user


NOT_ADMIN = T("这里只对管理员开放", "this is for admins only")


async def admin_page(request: Request, user: Annotated[User, Depends(logged_in)]) -> User:
    """An admin's page: anonymous visitors go to the login page, other users get 403."""
    if not user.is_admin:
        raise Forbidden(NOT_ADMIN)
    return user


async def admin_api(user: Annotated[User, Depends(api_user)]) -> User:
    """The admin API (bearer token or session): 401 without one, 403 for non-admins."""
    if not user.is_admin:
        raise Forbidden(NOT_ADMIN)
    return user


async def worker_auth(settings: SettingsDep,
                token: Annotated[str | None, Depends(oauth2)]) -> None:
    expected = settings.worker_token or ""
    if not (token and expected and secrets.compare_digest(token, expected)):
        raise Unauthorized(T("缺少或错误的评测机令牌", "missing or wrong worker token"))


async def check_csrf(request: Request, csrf_token: Annotated[str, Form()] = "") -> None:
    if not csrf_ok(request.session, csrf_token):
        raise Forbidden(T("表单已过期或来源不明（CSRF 校验失败），请刷新页面后重试",
                                 "the form expired or came from elsewhere (CSRF check "
                                 "failed); reload the page and try again"))


TokenUser = Annotated[User, Depends(token_user)]
ApiUser = Annotated[User, Depends(api_user)]
Reader = Annotated[User | None, Depends(reader)]
PageUser = Annotated[User | None, Depends(page_user)]
LoggedIn = Annotated[User, Depends(logged_in)]
AdminPageUser = Annotated[User, Depends(admin_page)]
AdminApiUser = Annotated[User, Depends(admin_api)]
WorkerAuth = Depends(worker_auth)
CsrfChecked = Depends(check_csrf)
