"""API: a learner's profile, the solutions of a problem one has solved, and the diff
between two of one's own submissions (the pages' data, as JSON)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from judge.i18n import T
from web import code_diff, profile_view, solutions
from web.deps import ApiUser, CatalogDep, Now, Reader, SessionDep
from web.errors import Forbidden, NotFound
from web.routes.api_submissions import readable

router = APIRouter(prefix="/api", tags=["learners"])

NOT_SOLVED = T("通过这道题之后才能看题解（参考解答和别人分享的解法）",
               "solve this problem first: its solutions (the reference and the code others "
               "shared) open once you have an accepted submission")


@router.get("/users/{name}")
def profile(name: str, db: SessionDep, catalog: CatalogDep, now: Now,
            reader: Reader) -> dict[str, Any]:
    """A learner's profile: problems solved (best speed ratio), tried, activity per day."""
    user = profile_view.visible_user(db, name, reader)
    return profile_view.build(db, user, catalog, now).to_json()


@router.get("/problems/{slug}/solution")
def solution(slug: str, user: ApiUser, db: SessionDep, catalog: CatalogDep) -> dict[str, Any]:
    """The reference, its explanation and others' shared code (after an accepted submission)."""
    p = catalog.get(slug)
    if p is None:
        raise NotFound(T(f"没有这道题：{slug!r}", f"no such problem: {slug!r}"))
    offer = solutions.offer(db, user, p)
    if offer is None:
        raise Forbidden(NOT_SOLVED)
    return offer.to_json()


@router.get("/submissions/{a}/diff/{b}")
def diff(a: int, b: int, user: ApiUser, db: SessionDep) -> dict[str, Any]:
    """A unified diff from submission a's code to b's (both yours, or you are an admin)."""
    return code_diff.diff(readable(db, a, user), readable(db, b, user)).to_json()
