"""Pages: the leaderboard, and the practice pack download."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, Response
from starlette.concurrency import run_in_threadpool

from judge.i18n import T
from web.data import standings
from web.deps import CacheDep, CatalogDep, PageUser, SessionDep
from web.errors import Unavailable
from web.language import page_lang
from web.practice_pack import PackError
from web.templating import render

router = APIRouter(tags=["pages"], include_in_schema=False)


@router.get("/leaderboard")
def leaderboard(request: Request, user: PageUser, db: SessionDep, catalog: CatalogDep,
                cache: CacheDep) -> Response:
    board = cache.get("leaderboard", lambda: standings.leaderboard(db))
    fastest = cache.get(("fastest", *(p.version for p in catalog)),
                        lambda: [(p, standings.fastest(db, p.slug), standings.unranked(db, p.slug))
                                 for p in catalog])
    return render(request, "leaderboard.html", user, page_lang(request, user), board=board,
                  fastest=fastest)


@router.get("/practice-pack.zip")
async def practice_pack(request: Request) -> Response:
    try:
        path = await run_in_threadpool(request.app.state.pack.get)
    except PackError:
        raise Unavailable(T("练习包暂时无法生成，已记录错误；请稍后再试",
                                 "the practice pack cannot be built right now (logged); "
                                 "try again later")) from None
    return FileResponse(path, media_type="application/zip",
                        filename="torch-judge-practice.zip")
