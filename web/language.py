"""Which language a request is answered in (Chinese unless asked otherwise)."""

from __future__ import annotations

from fastapi import Request

LANGS = ("zh", "en")


def request_lang(request: Request) -> str:
    """?lang=, then the language a dependency resolved for this request (a user's saved
    choice), then Accept-Language when it starts with en, then Chinese."""
    q = request.query_params.get("lang")
    if q in LANGS:
        return q
    resolved = getattr(request.state, "lang", None)
    if resolved in LANGS:
        return resolved
    accept = request.headers.get("accept-language", "").lower()
    return "en" if accept.startswith("en") else "zh"


def page_lang(request: Request, user) -> str:
    """A page's language: a logged-in user's saved choice, else the lang cookie, else
    Chinese."""
    if user is not None and user.lang in LANGS:
        return user.lang
    cookie = request.cookies.get("lang")
    return cookie if cookie in LANGS else "zh"
