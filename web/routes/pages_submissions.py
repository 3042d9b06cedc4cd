"""Pages: one submission (live while it is judged) and the user's history, filtered by
problem and verdict (query parameters the pager keeps)."""

from __future__ import annotations

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from judge.i18n import T
from judge.verdict import Verdict
from web.data import profiles, submissions
from web.deps import CatalogDep, LoggedIn, Now, SessionDep
from web.errors import BadRequest
from web.language import page_lang
from web.phases import PHASES
from web.routes.api_submissions import readable, view
from web.templating import render

router = APIRouter(tags=["pages"], include_in_schema=False)
PAGE = 50
# what the history's verdict filter offers: every verdict a submission can get, and
# "pending" (queued or being judged)
VERDICT_FILTERS = (*(str(v) for v in Verdict if v is not Verdict.SKIPPED), "pending")


@router.get("/submissions/{sid}")
def submission(sid: int, request: Request, user: LoggedIn, db: SessionDep,
               catalog: CatalogDep, now: Now) -> Response:
    """A submission; its owner opening it has seen how a rejudge changed its verdict."""
    sub = readable(db, sid, user)
    lang = page_lang(request, user)
    data = view(db, sub, user, lang, now)
    if sub.user_id == user.id:
        submissions.mark_change_seen(db, sub, now)
    return render(request, "submission.html", user, lang, sub=sub, p=catalog.get(sub.problem),
                  data=data,
                  phases={name: label(lang) for name, label in PHASES.items()})


@router.get("/submissions")
def history(request: Request, user: LoggedIn, db: SessionDep, catalog: CatalogDep,
            page: int = Query(1, ge=1, le=10_000), problem: str = Query("", max_length=64),
            verdict: str = Query("", max_length=32)) -> Response:
    if verdict and verdict not in VERDICT_FILTERS:
        raise BadRequest(T(f"没有这种结果：{verdict!r}（可选：{'、'.join(VERDICT_FILTERS)}）",
                           f"no such verdict: {verdict!r} (one of: "
                           f"{', '.join(VERDICT_FILTERS)})"))
    # a number or slug of a published problem, or the slug of one no longer published
    found = catalog.get(problem) if problem else None
    slug = found.slug if found else problem.strip()
    filters = {k: v for k, v in (("problem", slug), ("verdict", verdict)) if v}
    subs = submissions.user_submissions(db, user.id, problem=slug or None,
                                        verdict=verdict or None, limit=PAGE,
                                        offset=(page - 1) * PAGE)
    total = submissions.count_user_submissions(db, user.id, problem=slug or None,
                                               verdict=verdict or None)
    tried = sorted(profiles.attempts(db, user.id))
    return render(request, "history.html", user, page_lang(request, user), subs=subs,
                  catalog=catalog, page=page, pages=max(1, -(-total // PAGE)), total=total,
                  filters=filters, verdicts=VERDICT_FILTERS, tried=tried)
