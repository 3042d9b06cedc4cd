"""Pages: the problem list, a problem (statement, limits, examples, editor) and its submit
form, which queues the code and goes to the submission's live page."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import RedirectResponse, Response
from markupsafe import Markup

from judge.i18n import T
from web import solutions, submitting
from web.catalog import ProblemView
from web.data import standings, submissions
from web.deps import (
    CacheDep,
    CatalogDep,
    CsrfChecked,
    HubDep,
    LoggedIn,
    Now,
    PageUser,
    SessionDep,
    SettingsDep,
)
from web.error_handlers import headers_of, status_of
from web.errors import DomainError, NotFound
from web.forms import Utf8FormRoute
from web.language import page_lang
from web.response_cache import keep
from web.templating import render

router = APIRouter(tags=["pages"], include_in_schema=False, route_class=Utf8FormRoute)


def problem_or_404(catalog, slug: str) -> ProblemView:
    p = catalog.get(slug)
    if p is None:
        raise NotFound(T(f"没有这道题：{slug}", f"no such problem: {slug}"))
    return p


@router.get("/")
def problem_list(request: Request, user: PageUser, db: SessionDep, catalog: CatalogDep,
                 cache: CacheDep) -> Response:
    stats = cache.get("problem-stats", lambda: standings.problem_stats(db), scopes=["standings"])
    mine = cache.get(("user-status", user.id), lambda: standings.user_status(db, user.id),
                     scopes=[("user", user.id)]) if user else {}
    rows = [{"p": p, "status": mine.get(p.slug), "stats": stats.get(p.slug, (0, 0))}
            for p in catalog]
    keep(request)
    return render(request, "problems.html", user, page_lang(request, user), rows=rows)


def statement_part(templates, p: ProblemView, lang: str) -> Markup:
    """The statement, limits and public tests, rendered once per version and language."""
    def build() -> str:
        template = templates.get_template("_problem_article.html")
        return template.render(p=p, lang=lang, t=lambda zh, en: en if lang == "en" else zh)

    return Markup(p.rendered(f"_problem_article.html:{lang}", build))


def problem_page(request: Request, user, db, p: ProblemView, *, code: str | None = None,
                 error: str | None = None, status: int = 200,
                 headers: dict[str, str] | None = None, share: bool = False) -> Response:
    cache = request.app.state.page_cache
    recent = cache.get(("recent", user.id, p.slug), lambda: submissions.user_submissions(
        db, user.id, problem=p.slug, limit=5), scopes=[("user", user.id)]) if user else []
    # submissions whose verdict a rejudge changed, until their page is opened
    rejudged = cache.get(("rejudged", user.id, p.slug), lambda: submissions.unseen_changes(
        db, user.id, p.slug), scopes=[("user", user.id)]) if user else []
    lang = page_lang(request, user)
    return render(request, "problem.html", user, lang, status=status,
                  headers=headers, p=p, recent=recent, rejudged=rejudged, error=error,
                  statement_part=statement_part(request.app.state.templates, p, lang),
                  solution=solutions.offer(db, user, p, cache), share=share,
                  code=p.starter if code is None else code, code_from_server=code is not None)


@router.get("/problems/{slug}")
def problem(slug: str, request: Request, user: PageUser, db: SessionDep,
            catalog: CatalogDep) -> Response:
    page = problem_page(request, user, db, problem_or_404(catalog, slug))
    keep(request)
    return page


@router.post("/problems/{slug}/submit", dependencies=[CsrfChecked])
def submit(slug: str, request: Request, user: LoggedIn, db: SessionDep, catalog: CatalogDep,
           settings: SettingsDep, hub: HubDep, now: Now,
           code: Annotated[str, Form()], share: Annotated[bool, Form()] = False) -> Response:
    p = problem_or_404(catalog, slug)
    try:
        sub = submitting.submit(db, settings, catalog, hub, user, p.slug, code, now,
                                share=share)
    except DomainError as e:
        # Back to the problem with the message and the code as sent, nothing stored.
        return problem_page(request, user, db, p, code=code, status=status_of(e),
                            error=e.message(page_lang(request, user)), headers=headers_of(e),
                            share=share)
    return RedirectResponse(f"/submissions/{sub.id}", status_code=303)
