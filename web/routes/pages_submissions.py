"""Pages: one submission (live while it is judged) and the user's history."""

from __future__ import annotations

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from web.data import submissions
from web.deps import CatalogDep, LoggedIn, SessionDep
from web.language import page_lang
from web.phases import PHASES
from web.routes.api_submissions import readable, view
from web.templating import render

router = APIRouter(tags=["pages"], include_in_schema=False)
PAGE = 50


@router.get("/submissions/{sid}")
def submission(sid: int, request: Request, user: LoggedIn, db: SessionDep,
               catalog: CatalogDep) -> Response:
    sub = readable(db, sid, user)
    lang = page_lang(request, user)
    return render(request, "submission.html", user, lang, sub=sub, p=catalog.get(sub.problem),
                  data=view(db, sub, user, lang),
                  phases={name: label(lang) for name, label in PHASES.items()})


@router.get("/submissions")
def history(request: Request, user: LoggedIn, db: SessionDep, catalog: CatalogDep,
            page: int = Query(1, ge=1, le=10_000)) -> Response:
    subs = submissions.user_submissions(db, user.id, limit=PAGE, offset=(page - 1) * PAGE)
    total = submissions.count_user_submissions(db, user.id)
    return render(request, "history.html", user, page_lang(request, user), subs=subs,
                  catalog=catalog, page=page, pages=max(1, -(-total // PAGE)), total=total)
