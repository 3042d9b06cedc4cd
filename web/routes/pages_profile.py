"""Pages: a learner's profile, ``/users/NAME`` (public, like the leaderboard)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from web import profile_view
from web.deps import CatalogDep, Now, PageUser, SessionDep
from web.language import page_lang
from web.templating import render

router = APIRouter(tags=["pages"], include_in_schema=False)


@router.get("/users/{name}")
def profile(name: str, request: Request, user: PageUser, db: SessionDep, catalog: CatalogDep,
            now: Now) -> Response:
    shown = profile_view.visible_user(db, name, user)
    return render(request, "profile.html", user, page_lang(request, user),
                  profile=profile_view.build(db, shown, catalog, now),
                  problems_total=len(list(catalog)))
