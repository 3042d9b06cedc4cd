"""Admin pages for people: the users (promote to admin or back, disable or enable) and
the audit log. An admin cannot demote or disable themself (the site would lose its last
admin by a slip of the mouse)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import RedirectResponse, Response

from judge.i18n import T
from web import account_rules
from web.data import accounts, audit_log
from web.deps import AdminPageUser, CsrfChecked, Now, SessionDep
from web.errors import NotFound
from web.forms import Utf8FormRoute
from web.language import page_lang
from web.models import User
from web.templating import render

router = APIRouter(prefix="/admin", tags=["admin pages"], include_in_schema=False,
                   route_class=Utf8FormRoute)


@router.get("/users")
def users(request: Request, user: AdminPageUser, db: SessionDep) -> Response:
    return render(request, "admin_users.html", user, page_lang(request, user),
                  users=accounts.all_users(db))


@router.post("/users/{uid}", dependencies=[CsrfChecked])
def change(uid: int, user: AdminPageUser, db: SessionDep, now: Now,
           action: Annotated[str, Form(pattern="^(promote|demote|disable|enable)$")]
           ) -> Response:
    target = db.get(User, uid)
    if target is None:
        raise NotFound(T("没有这个用户", "no such user"))
    account_rules.change_user(db, user, target, action, now)
    return RedirectResponse("/admin/users", status_code=303)


@router.get("/audit")
def audit(request: Request, user: AdminPageUser, db: SessionDep) -> Response:
    return render(request, "admin_audit.html", user, page_lang(request, user),
                  entries=audit_log.newest(db))
