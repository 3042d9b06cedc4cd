"""Pages: the leaderboard, and the practice pack download."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, Response
from markupsafe import Markup, escape
from starlette.concurrency import run_in_threadpool

from judge.i18n import T
from web.data import standings
from web.deps import CacheDep, CatalogDep, PageUser, SessionDep
from web.errors import Unavailable
from web.language import page_lang
from web.practice_pack import PackError
from web.response_cache import keep
from web.templating import render

router = APIRouter(tags=["pages"], include_in_schema=False)


@router.get("/leaderboard")
def leaderboard(request: Request, user: PageUser, db: SessionDep, catalog: CatalogDep,
                cache: CacheDep) -> Response:
    lang = page_lang(request, user)

    def tables() -> Markup:
        board = standings.leaderboard(db)
        speed = standings.speed_boards(db, [p.slug for p in catalog])
        fastest = [(p, *speed[p.slug]) for p in catalog]
        template = request.app.state.templates.get_template("_board.html")
        return Markup(template.render(t=lambda zh, en: en if lang == "en" else zh, lang=lang,
                                      board=board, fastest=fastest))

    html = cache.get(("board", lang, *(p.version for p in catalog)), tables,
                     scopes=["standings"])
    if user is not None:  # the reader's own rows
        mine = f' data-user="{escape(user.username)}"'
        # on the str: Markup.replace would escape both arguments (data-user=&#34;...)
        html = Markup(str(html).replace(mine, f"{mine} data-me"))
    keep(request)
    return render(request, "leaderboard.html", user, lang, board_html=html)


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
