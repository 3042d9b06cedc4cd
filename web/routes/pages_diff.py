"""Pages: the diff between two of one's own submissions, and the history's "compare"
form that leads there. Only their owner (or an admin) may diff them: anyone else gets the
404 a submission page gives them."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import RedirectResponse, Response

from judge.i18n import T
from web import code_diff
from web.deps import CatalogDep, LoggedIn, SessionDep
from web.errors import BadRequest
from web.language import page_lang
from web.routes.api_submissions import readable
from web.templating import render

router = APIRouter(tags=["pages"], include_in_schema=False)

PICK_TWO = T("请勾选正好两份提交来比较", "tick exactly two submissions to compare")


@router.get("/submissions/compare")
def compare(user: LoggedIn,
            ids: Annotated[list[int] | None, Query(alias="id")] = None) -> Response:
    picked = sorted(set(ids or []))
    if len(picked) != 2:
        raise BadRequest(PICK_TWO)
    return RedirectResponse(f"/submissions/{picked[0]}/diff/{picked[1]}", status_code=303)


@router.get("/submissions/{a}/diff/{b}")
def diff(a: int, b: int, request: Request, user: LoggedIn, db: SessionDep,
         catalog: CatalogDep, full: bool = False) -> Response:
    old, new = readable(db, a, user), readable(db, b, user)
    result = code_diff.diff(old, new, code_diff.WHOLE if full else code_diff.CONTEXT)
    return render(request, "diff.html", user, page_lang(request, user), d=result, full=full,
                  p_old=catalog.get(old.problem), p_new=catalog.get(new.problem))
