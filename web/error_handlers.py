"""Errors as the client sees them: each domain error (:mod:`web.errors`) mapped to its HTTP
status, JSON ``{"detail": ...}`` under /api and /worker, an HTML page elsewhere; the
message in the request's language; never a stack trace."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse, Response
from sqlalchemy import exc as sa_exc
from starlette.exceptions import HTTPException as StarletteHTTPException

from judge.i18n import T
from web.errors import (
    BadRequest,
    Conflict,
    DomainError,
    Forbidden,
    Invalid,
    LoginRequired,
    NotFound,
    RateLimited,
    TooLarge,
    Unauthorized,
    Unavailable,
)
from web.language import request_lang
from web.templating import render_error

log = logging.getLogger("web")

STATUS: dict[type[DomainError], int] = {
    BadRequest: 400, Unauthorized: 401, Forbidden: 403, NotFound: 404, Conflict: 409,
    TooLarge: 413, Invalid: 422, RateLimited: 429, Unavailable: 503,
}


def status_of(error: DomainError) -> int:
    """The HTTP status of a domain error (a subclass maps like its nearest listed base)."""
    for kind in type(error).__mro__:
        if kind in STATUS:
            return STATUS[kind]
    return 400


def headers_of(error: DomainError) -> dict[str, str]:
    if isinstance(error, Unauthorized):
        return {"WWW-Authenticate": "Bearer"}
    if isinstance(error, RateLimited) and error.retry_after:
        return {"Retry-After": str(error.retry_after)}
    return {}


STATUS_TEXT = {
    400: T("请求无效", "Bad request"),
    401: T("需要登录", "Authentication required"),
    403: T("没有权限", "Forbidden"),
    404: T("找不到页面", "Not found"),
    405: T("不支持的请求方法", "Method not allowed"),
    409: T("冲突", "Conflict"),
    413: T("请求太大", "Request too large"),
    422: T("请求无效", "Invalid request"),
    429: T("请求太频繁", "Too many requests"),
    500: T("服务器内部错误", "Internal server error"),
}


NOT_JSON = T("请求体不是合法的 JSON（必须是 UTF-8 编码）",
             "the request body is not valid JSON (it must be UTF-8)")
UNPARSABLE = T("请求体无法解析（必须是 UTF-8 编码的 JSON 或表单）",
               "the request body cannot be parsed (it must be UTF-8 JSON or form data)")


DATABASE_DOWN = T("数据库暂时无法访问（可能正在重启），请稍后再试",
                  "the database is not answering right now (restarting?); please try again "
                  "in a moment")


def is_api(request: Request) -> bool:
    path = request.url.path
    return path.startswith("/api/") or path == "/api" or path.startswith("/worker/")


def respond(request: Request, status: int, message: T,
            headers: dict[str, str] | None = None, extra: dict | None = None) -> Response:
    lang = request_lang(request)
    if is_api(request):
        return JSONResponse({"detail": message(lang), **(extra or {})}, status_code=status,
                            headers=headers)
    return render_error(request, status, message, headers)


def _validation_message(errors: list[dict]) -> tuple[int, T]:
    if any(e.get("type") == "json_invalid" for e in errors):
        return 400, NOT_JSON
    parts = []
    for e in errors[:5]:
        where = ".".join(str(x) for x in e.get("loc", ()) if x != "body") or "body"
        parts.append(f"{where}: {e.get('msg', '')}")
    text = "; ".join(parts)
    return 422, T(f"请求无效：{text}", f"invalid request: {text}")


def install(app: FastAPI) -> None:
    @app.exception_handler(DomainError)
    async def refused(request: Request, exc: DomainError) -> Response:
        return respond(request, status_of(exc), exc.message, headers_of(exc))

    @app.exception_handler(LoginRequired)
    async def login_required(request: Request, exc: LoginRequired) -> Response:
        from urllib.parse import quote

        return RedirectResponse(f"/login?next={quote(exc.next_path)}", status_code=303)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> Response:
        errors = [{k: v for k, v in e.items() if k not in ("input", "ctx", "url")}
                  for e in exc.errors()]
        status, message = _validation_message(errors)
        return respond(request, status, message, extra={"errors": jsonable_encoder(errors)})

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        message = STATUS_TEXT.get(exc.status_code, T(str(exc.detail), str(exc.detail)))
        if exc.status_code == 400 and "parsing the body" in str(exc.detail):
            message = UNPARSABLE  # FastAPI could not decode the body (not UTF-8, say)
        return respond(request, exc.status_code, message, getattr(exc, "headers", None))

    @app.exception_handler(sa_exc.OperationalError)
    @app.exception_handler(sa_exc.InterfaceError)
    async def database_down(request: Request, exc: Exception) -> Response:
        # The database restarts or is unreachable: nothing is wrong with the request, and
        # it is worth repeating (workers and clients retry a 5xx). One line, no traceback.
        log.warning("database unavailable on %s %s: %s", request.method, request.url.path,
                    str(exc).splitlines()[0][:200])
        return respond(request, 503, DATABASE_DOWN, {"Retry-After": "1"})

    @app.exception_handler(Exception)
    async def crashed(request: Request, exc: Exception) -> Response:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return respond(request, 500, T("服务器内部错误，已记录；请稍后再试",
                                       "internal server error (logged); please try again"))
