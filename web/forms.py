"""Page forms must be UTF-8 text, as the API's JSON bodies must be.

Starlette decodes a form's fields forgivingly: a urlencoded ``%FF`` becomes U+FFFD and a
multipart field that is not UTF-8 is read as Latin-1, so ``code=%FF%FEabc`` would be
stored and judged as something the learner never wrote. The page routers use
:class:`Utf8FormRoute`, which reads the body first (Starlette keeps it for the form
parser) and refuses a form whose text fields are not UTF-8 with 400 before anything runs.
Uploaded files (multipart parts with a filename) are bytes and are not checked.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any
from urllib.parse import unquote_to_bytes

from fastapi import Request, Response
from fastapi.routing import APIRoute
from python_multipart.exceptions import MultipartParseError
from python_multipart.multipart import MultipartParser, parse_options_header

from judge.i18n import T
from web.errors import BadRequest

NOT_UTF8 = T("表单里的文字不是合法的 UTF-8 编码，什么都没有保存；请在浏览器里重新提交",
             "the form's text is not valid UTF-8; nothing was stored. Submit it again from "
             "the browser")
URLENCODED = "application/x-www-form-urlencoded"
MULTIPART = "multipart/form-data"


def urlencoded_is_utf8(body: bytes) -> bool:
    """Every name and value of a urlencoded body, percent-decoded, is UTF-8."""
    for pair in body.split(b"&"):
        for part in pair.split(b"=", 1):
            try:
                unquote_to_bytes(part.replace(b"+", b" ")).decode("utf-8")
            except UnicodeDecodeError:
                return False
    return True


def multipart_is_utf8(content_type: str, body: bytes) -> bool:
    """Every text field (a part without a filename) of a multipart body is UTF-8. A body
    that does not parse is left to the form parser, which refuses it."""
    _, params = parse_options_header(content_type)
    boundary = params.get(b"boundary")
    if not boundary:
        return True
    state: dict[str, Any] = {"ok": True, "header": b"", "value": b""}

    def begin() -> None:
        state.update(disposition=b"", data=bytearray())

    def header_end() -> None:
        if state["header"].lower() == b"content-disposition":
            state["disposition"] = state["value"]
        state["header"] = state["value"] = b""

    def data(chunk: bytes, start: int, end: int) -> None:
        state["data"] += chunk[start:end]

    def end() -> None:
        _, options = parse_options_header(state["disposition"])
        if b"filename" in options:
            return
        try:
            bytes(state["data"]).decode("utf-8")
        except UnicodeDecodeError:
            state["ok"] = False

    parser = MultipartParser(boundary, {
        "on_part_begin": begin, "on_part_data": data, "on_part_end": end,
        "on_header_field": lambda c, s, e: state.update(header=state["header"] + c[s:e]),
        "on_header_value": lambda c, s, e: state.update(value=state["value"] + c[s:e]),
        "on_header_end": header_end,
    })
    try:
        parser.write(body)
        parser.finalize()
    except MultipartParseError:
        return True
    return state["ok"]


class Utf8FormRoute(APIRoute):
    """A page route whose form bodies must be UTF-8 text (400 otherwise)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def checked(request: Request) -> Response:
            kind = request.headers.get("content-type", "")
            if kind.startswith(URLENCODED):
                ok = urlencoded_is_utf8(await request.body())
            elif kind.startswith(MULTIPART):
                ok = multipart_is_utf8(kind, await request.body())
            else:
                ok = True
            if not ok:
                raise BadRequest(NOT_UTF8)
            return await handler(request)

        return checked
