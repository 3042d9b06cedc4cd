"""Account rules shared by the API and the pages."""

from __future__ import annotations

import re

from judge.i18n import T
from web.errors import Invalid

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
