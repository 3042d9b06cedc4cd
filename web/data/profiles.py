"""A learner's record as others may see it (the profile page) and the accepted code they
agreed to share (the solutions shown to those who solved a problem). No code is read here
except shared code."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import date, datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session, joinedload

from web.models import Submission, User

ACCEPTED = "accepted"


@dataclass(frozen=True)
class Solved:
    """One problem a user solved: when first, their best speed ratio (None: no speed
    check, or none measured), and how many of their submissions were accepted."""

    problem: str
    first_at: datetime | None  # judged_at, nullable in the table
    best_ratio: float | None
    accepted: int


def solved(db: Session, user_id: int) -> list[Solved]:
    """The problems this user solved, the first solved first."""
    rows = db.execute(select(Submission.problem, func.min(Submission.judged_at),
                             func.max(Submission.ratio), func.count())
                      .where(Submission.user_id == user_id, Submission.verdict == ACCEPTED)
                      .group_by(Submission.problem))
    found = [Solved(slug, at, None if r is None else float(r), int(n))
             for slug, at, r, n in rows]
    return sorted(found, key=lambda s: (s.first_at or datetime.min, s.problem))


def attempts(db: Session, user_id: int) -> dict[str, int]:
    """slug -> how many submissions this user made for it."""
    rows = db.execute(select(Submission.problem, func.count())
                      .where(Submission.user_id == user_id).group_by(Submission.problem))
    return {slug: int(n) for slug, n in rows}


def activity(db: Session, user_id: int, since: datetime) -> Counter[date]:
    """Submissions per day (UTC) from ``since`` on. Counted here rather than with SQL date
    functions, which SQLite and PostgreSQL spell differently; a user sends at most a few
    hundred a week (the per-minute limit)."""
    times = db.scalars(select(Submission.created_at).where(Submission.user_id == user_id,
                                                           Submission.created_at >= since))
    return Counter(t.date() for t in times)


def has_accepted(db: Session, user_id: int, problem: str) -> bool:
    return db.scalar(select(Submission.id).where(Submission.user_id == user_id,
                                                 Submission.problem == problem,
                                                 Submission.verdict == ACCEPTED).limit(1)
                     ) is not None


def shared(db: Session, problem: str, *, besides: int | None = None,
           limit: int = 5) -> list[Submission]:
    """The fastest shared accepted submission of each user (but ``besides``, and not a
    disabled account), fastest first; without a measured ratio, the earliest first."""
    order = (Submission.ratio.desc().nulls_last(), Submission.id)
    ranked = (select(Submission.id, func.row_number()
                     .over(partition_by=Submission.user_id, order_by=order).label("rank"))
              .join(User, User.id == Submission.user_id)
              .where(Submission.problem == problem, Submission.verdict == ACCEPTED,
                     Submission.share.is_(True), User.disabled.is_(False),
                     *([] if besides is None else [Submission.user_id != besides]))
              .subquery())
    # with each one's user: the page shows the name (and may show it from the page cache,
    # after this session has ended)
    return list(db.scalars(select(Submission).join(ranked, ranked.c.id == Submission.id)
                           .options(joinedload(Submission.user))
                           .where(ranked.c.rank == 1).order_by(*order).limit(limit)))
