"""API: the problem list and one problem's public parts (never the reference or hidden
cases: the reference is not read and hidden cases are not in ``examples``). No login is
needed; a bearer token or session, when sent, chooses the answer's language."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from fastapi import APIRouter, Request

from judge.i18n import T
from web.catalog import ProblemView
from web.data import standings
from web.deps import CacheDep, CatalogDep, Reader, SessionDep
from web.errors import NotFound
from web.language import request_lang
from web.response_cache import keep

router = APIRouter(prefix="/api/problems", tags=["problems"])


def summary(p: ProblemView, lang: str, stats: tuple[int, int]) -> dict[str, Any]:
    accepted, judged = stats
    return {
        "slug": p.slug, "number": p.number, "title": p.title(lang),
        "titles": {"zh": p.meta.title.zh, "en": p.meta.title.en},
        "difficulty": p.meta.difficulty, "tags": list(p.meta.tags),
        "accepted": accepted, "judged": judged,
        "acceptance": round(accepted / judged, 4) if judged else None,
    }


@router.get("")
def list_problems(request: Request, catalog: CatalogDep, db: SessionDep, reader: Reader,
                  cache: CacheDep) -> list[dict[str, Any]]:
    """Every problem: number, title, difficulty, tags and acceptance rate."""
    lang = request_lang(request)
    stats = cache.get("problem-stats", lambda: standings.problem_stats(db), scopes=["standings"])
    keep(request)
    return [summary(p, lang, stats.get(p.slug, (0, 0))) for p in catalog]


@router.get("/{slug}")
def get_problem(slug: str, request: Request, catalog: CatalogDep, db: SessionDep,
                reader: Reader, cache: CacheDep) -> dict[str, Any]:
    """One problem: statements (zh and en, Markdown), starter, limits and public examples."""
    p = catalog.get(slug)
    if p is None:
        raise NotFound(T(f"没有这道题：{slug!r}", f"no such problem: {slug!r}"))
    lang = request_lang(request)
    stats = cache.get("problem-stats", lambda: standings.problem_stats(db), scopes=["standings"])
    data = summary(p, lang, stats.get(p.slug, (0, 0)))
    data.update({
        "version": p.version, "names": list(p.meta.names),
        "statement": {"zh": p.statement("zh"), "en": p.statement("en")},
        "starter": p.starter,
        "limits": asdict(p.meta.limits),
        "throughput": [{"name": t.name, "device": t.device, "min_ratio": t.min_ratio}
                       for t in p.meta.throughput],
        "examples": [{"name": e.name, "category": e.category.as_dict(), "code": e.code}
                     for e in p.examples],
    })
    keep(request)
    return data
