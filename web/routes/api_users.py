"""API: create an account, and exchange a username and password for a bearer token."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.security import OAuth2PasswordRequestForm
from pydantic import BaseModel, Field

from web.account_rules import BAD_LOGIN, CLOSED, DISABLED, TAKEN, check_new_account
from web.data import accounts
from web.deps import Now, SessionDep, SettingsDep
from web.errors import Conflict, Forbidden, Unauthorized
from web.language import request_lang
from web.security import hash_password, new_token, token_hash, verify_password

router = APIRouter(prefix="/api", tags=["accounts"])


class NewUser(BaseModel):
    username: str = Field(max_length=64)
    password: str = Field(max_length=1024)


class UserOut(BaseModel):
    id: int
    username: str


class TokenOut(BaseModel):
    access_token: str
    token_type: str = "bearer"


@router.post("/users", status_code=201, response_model=UserOut)
def create_user(request: Request, body: NewUser, db: SessionDep, settings: SettingsDep,
                now: Now) -> UserOut:
    """Create an account (username 2-32 letters, digits, _ . -; password 8-256 characters).
    Its language (pages, messages) is the request's: ``?lang=``, else Accept-Language, else
    Chinese; the site's language link changes it."""
    if not settings.registration_open:
        raise Forbidden(CLOSED)
    username = body.username.strip()
    check_new_account(username, body.password)
    user = accounts.create_user(db, username, hash_password(body.password), now,
                                lang=request_lang(request))
    if user is None:
        raise Conflict(TAKEN)
    return UserOut(id=user.id, username=user.username)


@router.post("/token", response_model=TokenOut)
def login(form: Annotated[OAuth2PasswordRequestForm, Depends()], db: SessionDep,
          settings: SettingsDep, now: Now) -> TokenOut:
    """Exchange form fields username and password for a bearer token."""
    user = accounts.user_by_name(db, form.username.strip())
    if not verify_password(user.password_hash if user else None, form.password) or not user:
        raise Unauthorized(BAD_LOGIN)
    if user.disabled:
        raise Forbidden(DISABLED)
    token = new_token()
    accounts.create_token(db, user, token_hash(token), now, settings.token_days)
    return TokenOut(access_token=token)
