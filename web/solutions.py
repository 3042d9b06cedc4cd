"""Solutions after solving: once a learner has an accepted submission for a problem, the
site offers its reference solution (``reference.py``), the package's explanation of it
(``solution.zh.md`` / ``solution.en.md``, optional) and the fastest accepted submissions of
others who ticked "share" when they submitted them.

Never before: the problem page, the API and the practice pack all go through
:func:`offer` or leave the files out (judge/pack.py copies only public files). Admins follow
the same rule here; they read packages in the admin pages.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from web.catalog import ProblemView
from web.data import profiles
from web.models import Submission, User
from web.page_cache import PageCache

SHARED_SHOWN = 5  # the fastest few; more would make a long page of near-copies


@dataclass(frozen=True)
class Offer:
    """What a learner who solved ``problem`` may read."""

    problem: ProblemView
    reference: str | None
    shared: list[Submission]

    def explanation_html(self, lang: str) -> str | None:
        return self.problem.solution_html(lang)

    def to_json(self) -> dict[str, Any]:
        p = self.problem
        explanation = ({"zh": p.problem.solution("zh"), "en": p.problem.solution("en")}
                       if p.has_solution else None)
        return {"problem": p.slug, "reference": self.reference, "explanation": explanation,
                "shared": [{"id": s.id, "user": s.user.username, "ratio": s.ratio,
                            "judged_at": s.judged_at.isoformat() + "Z" if s.judged_at else None,
                            "code": s.code} for s in self.shared]}


def offer(db: Session, user: User | None, problem: ProblemView,
          cache: PageCache | None = None) -> Offer | None:
    """The solutions ``user`` may read for ``problem``: None until they have an accepted
    submission for it (looked up once per page-cache generation when given a cache)."""
    if user is None:
        return None
    uid = user.id

    def solved() -> bool:
        return profiles.has_accepted(db, uid, problem.slug)

    def shared() -> list[Submission]:
        # everyone's fastest, one more than shown: the same for every reader of the problem
        # (kept once per generation), the reader's own left out below
        return profiles.shared(db, problem.slug, limit=SHARED_SHOWN + 1)

    if not (cache.get(("solved", uid, problem.slug), solved, scopes=[("user", uid)])
            if cache else solved()):
        return None
    fastest = cache.get(("shared", problem.slug), shared, scopes=["shared"]) if cache else (
        shared())
    return Offer(problem, problem.reference,
                 [s for s in fastest if s.user_id != uid][:SHARED_SHOWN])
