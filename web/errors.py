"""Errors as the client sees them: JSON ``{"detail": ...}`` under /api and /worker, an HTML
page elsewhere; the message in the request's language; never a stack trace."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from judge.i18n import T

log = logging.getLogger("web")


class ClientError(Exception):
    """A request the app refuses, with a message for the person who sent it."""

    def __init__(self, status: int, message: T, headers: dict[str, str] | None = None) -> None:
        super().__init__(message.en)
        self.status, self.message, self.headers = status, message, headers or {}


class LoginRequired(Exception):
    """A page that needs a logged-in user: redirect to the login page."""

    def __init__(self, next_path: str) -> None:
        self.next_path = next_path


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


def request_lang(request: Request) -> str:
    """?lang=, then the language a dependency resolved for this request, then
    Accept-Language when it starts with en or zh, then Chinese."""
    q = request.query_params.get("lang")
    if q in ("zh", "en"):
        return q
    resolved = getattr(request.state, "lang", None)
    if resolved in ("zh", "en"):
        return resolved
    accept = request.headers.get("accept-language", "").lower()
    return "en" if accept.startswith("en") else "zh"


def is_api(request: Request) -> bool:
    path = request.url.path
    return path.startswith("/api/") or path == "/api" or path.startswith("/worker/")


def respond(request: Request, status: int, message: T,
            headers: dict[str, str] | None = None, extra: dict | None = None) -> Response:
    lang = request_lang(request)
    if is_api(request):
        return JSONResponse({"detail": message(lang), **(extra or {})}, status_code=status,
                            headers=headers)
    from web.pages import render_error

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
    @app.exception_handler(ClientError)
    async def client_error(request: Request, exc: ClientError) -> Response:
        return respond(request, exc.status, exc.message, exc.headers)

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

    @app.exception_handler(Exception)
    async def crashed(request: Request, exc: Exception) -> Response:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return respond(request, 500, T("服务器内部错误，已记录；请稍后再试",
                                       "internal server error (logged); please try again"))
