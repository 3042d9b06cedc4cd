"""Pages: register, log in, log out, and the language switch (remembered per user, and in a
cookie; web/language.py has the rule). A language chosen before logging in or registering
is kept: it becomes the account's. Every POST carries the session's CSRF token."""

from __future__ import annotations

import secrets
from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import RedirectResponse, Response
from sqlalchemy.orm import Session

from judge.i18n import T
from web.account_rules import BAD_LOGIN, CLOSED, DISABLED, TAKEN, check_new_account
from web.data import accounts
from web.deps import CsrfChecked, Now, PageUser, SessionDep, SettingsDep
from web.errors import DomainError
from web.forms import Utf8FormRoute
from web.language import COOKIE, browser_choice, page_lang
from web.models import User
from web.security import hash_password, verify_password
from web.templating import render

router = APIRouter(tags=["pages"], include_in_schema=False, route_class=Utf8FormRoute)

Text = Annotated[str, Form(max_length=1024)]


def safe_next(target: str | None) -> str:
    """Only paths on this site (never //host or a scheme): no open redirect."""
    if target and target.startswith("/") and not target.startswith(("//", "/\\")):
        return target
    return "/"


def log_in(request: Request, user: User) -> None:
    request.session.clear()  # a fresh session (and CSRF token) after logging in
    request.session["uid"] = user.id
    request.session["gen"] = user.session_gen  # logging out makes it stale
    request.session["csrf"] = secrets.token_urlsafe(24)


def remember_lang(request: Request, response: Response, lang: str) -> Response:
    response.set_cookie(COOKIE, lang, max_age=365 * 24 * 3600, samesite="lax",
                        secure=request.app.state.settings.cookie_secure)
    return response


def logged_in_to(request: Request, db: Session, user: User, next: str) -> Response:
    """Log in and go on, in the language this browser chose (it becomes the account's),
    else the account's (which this browser remembers from now on)."""
    choice = browser_choice(request)
    if choice is not None and choice != user.lang:
        accounts.set_lang(db, user, choice)
    log_in(request, user)
    return remember_lang(request, RedirectResponse(safe_next(next), status_code=303),
                         user.lang)


@router.get("/login")
def login_page(request: Request, user: PageUser, next: str = "/") -> Response:
    return render(request, "login.html", user, page_lang(request, user), next=safe_next(next))


@router.post("/login", dependencies=[CsrfChecked])
def login(request: Request, db: SessionDep, username: Text, password: Text,
          next: Text = "/") -> Response:
    lang = page_lang(request, None)
    user = accounts.user_by_name(db, username.strip())
    if not verify_password(user.password_hash if user else None, password) or user is None:
        return render(request, "login.html", None, lang, status=401, next=safe_next(next),
                      error=BAD_LOGIN(lang), username=username)
    if user.disabled:
        return render(request, "login.html", None, lang, status=403, next=safe_next(next),
                      error=DISABLED(lang), username=username)
    return logged_in_to(request, db, user, next)


@router.get("/register")
def register_page(request: Request, user: PageUser, next: str = "/") -> Response:
    return render(request, "register.html", user, page_lang(request, user),
                  next=safe_next(next))


@router.post("/register", dependencies=[CsrfChecked])
def register(request: Request, db: SessionDep, settings: SettingsDep, now: Now,
             username: Text, password: Text, password2: Text, next: Text = "/") -> Response:
    lang = page_lang(request, None)
    username = username.strip()

    def again(message: T, status: int) -> Response:
        return render(request, "register.html", None, lang, status=status,
                      next=safe_next(next), error=message(lang), username=username)

    if not settings.registration_open:
        return again(CLOSED, 403)
    try:
        check_new_account(username, password)
    except DomainError as e:
        return again(e.message, 422)
    if password != password2:
        return again(T("两次输入的密码不一样", "the two passwords differ"), 422)
    user = accounts.create_user(db, username, hash_password(password), now, lang=lang)
    if user is None:
        return again(TAKEN, 409)
    return logged_in_to(request, db, user, next)


@router.post("/logout", dependencies=[CsrfChecked])
def logout(request: Request, user: PageUser, db: SessionDep) -> Response:
    """Ends the session on the server too: the cookie is stateless, so a copy of it
    would otherwise keep working (every session of the account ends)."""
    if user is not None:
        accounts.end_sessions(db, user.id)
    request.session.clear()
    return RedirectResponse("/", status_code=303)


@router.post("/lang", dependencies=[CsrfChecked])
def switch_lang(request: Request, user: PageUser, db: SessionDep,
                lang: Annotated[str, Form(pattern="^(zh|en)$")],
                next: Text = "/") -> Response:
    if user is not None:
        accounts.set_lang(db, user, lang)
    return remember_lang(request, RedirectResponse(safe_next(next), status_code=303), lang)
