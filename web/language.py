"""Which language a request is answered in: one rule for pages, the API and error pages.

1. ``?lang=zh|en`` on the request (the submission page's event stream asks this way);
2. an explicit choice: the account's language when someone is logged in (set by the
   language link while logged in, or carried over from this browser's choice when they log
   in or register), else this browser's ``lang`` cookie (the language link);
3. the browser's ``Accept-Language`` (its most preferred of zh and en, by q-value);
4. Chinese.

The choice made before logging in or registering survives it: ``pages_auth`` saves the
cookie's language to the account then, and sets the cookie from the account otherwise,
so logging out keeps the language too.
"""

from __future__ import annotations

from fastapi import Request

LANGS = ("zh", "en")
DEFAULT = "zh"
COOKIE = "lang"


def accept_language(header: str) -> str | None:
    """The most preferred of our languages in an Accept-Language header (``en-GB,en;q=0.9,
    zh;q=0.8`` is en, ``fr, zh-CN;q=0.5`` zh), or None when it names neither."""
    best: tuple[float, int, str] | None = None
    for i, item in enumerate(header.split(",")):
        tag, _, params = item.strip().partition(";")
        primary = tag.strip().lower().split("-")[0]
        if primary not in LANGS:
            continue
        q = 1.0
        for param in params.split(";"):
            name, _, value = param.strip().partition("=")
            if name.strip() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        if q > 0 and (best is None or (q, -i) > (best[0], best[1])):
            best = (q, -i, primary)
    return best[2] if best else None


def chosen(request: Request, user=None) -> str | None:
    """The explicit choice (steps 1 and 2), if any."""
    q = request.query_params.get("lang")
    if q in LANGS:
        return q
    account = user.lang if user is not None else getattr(request.state, "lang", None)
    if account in LANGS:
        return account
    cookie = request.cookies.get(COOKIE)
    return cookie if cookie in LANGS else None


def resolve(request: Request, user=None) -> str:
    return (chosen(request, user)
            or accept_language(request.headers.get("accept-language", "")) or DEFAULT)


def request_lang(request: Request) -> str:
    """The API's and error pages' language: the account a dependency resolved for this
    request (``request.state.lang``), if any, else as for anyone."""
    return resolve(request)


def page_lang(request: Request, user) -> str:
    """A page's language for ``user`` (None: nobody is logged in)."""
    return resolve(request, user)


def browser_choice(request: Request) -> str | None:
    """This browser's own choice (the lang cookie), ignoring the account."""
    cookie = request.cookies.get(COOKIE)
    return cookie if cookie in LANGS else None
