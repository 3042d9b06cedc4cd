"""Accounts: the rules for a new one (the API, the pages and the CLI share them), and what
an admin may change (promote, demote, disable, enable; never themself)."""

from __future__ import annotations

import re
from datetime import datetime

from sqlalchemy.orm import Session

from judge.i18n import T
from web.data import accounts, audit_log
from web.errors import Conflict, Invalid
from web.models import User

USERNAME = re.compile(r"^[\w.-]{2,32}$")


def check_new_account(username: str, password: str) -> None:
    if not USERNAME.match(username):
        raise Invalid(T("用户名要 2 到 32 个字符，只能用字母、数字、汉字、_ . -",
                                 "a username has 2 to 32 characters: letters, digits, _ . -"))
    if not 8 <= len(password) <= 256:
        raise Invalid(T("密码要 8 到 256 个字符", "a password has 8 to 256 characters"))


TAKEN = T("这个用户名已经有人用了", "that username is taken")
CLOSED = T("本站暂不开放注册", "registration is closed on this site")
BAD_LOGIN = T("用户名或密码不对", "wrong username or password")
DISABLED = T("这个账号已被管理员停用", "this account has been disabled by an admin")


USER_ACTIONS = ("promote", "demote", "disable", "enable")


def change_user(db: Session, actor: User | None, target: User, action: str,
                now: datetime) -> None:
    """Promote, demote, disable or enable an account (``actor`` None: the CLI). An admin
    cannot demote or disable themself (409): the site would lose its last admin by a slip
    of the mouse."""
    if action not in USER_ACTIONS:
        raise ValueError(f"unknown action {action!r}")
    if actor is not None and target.id == actor.id and action in ("demote", "disable"):
        raise Conflict(T("不能降级或停用自己的账号", "you cannot demote or disable "
                                 "your own account"))
    if action in ("promote", "demote"):
        accounts.set_admin(db, target, action == "promote")
    else:
        accounts.set_disabled(db, target, action == "disable")
    audit_log.record(db, actor, action, target.username, now)
    db.commit()
