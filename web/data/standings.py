"""Statistics over judged submissions: acceptance per problem, a user's progress, the
leaderboard, the fastest accepted solutions."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import and_, case, func, select
from sqlalchemy.orm import Session

from web.models import (
    Submission,
    User,
)


def problem_stats(db: Session) -> dict[str, tuple[int, int]]:
    """slug -> (accepted submissions, judged submissions)."""
    rows = db.execute(select(Submission.problem,
                             func.sum(_accepted()),
                             func.count())
                      .where(Submission.status == "done").group_by(Submission.problem))
    return {slug: (int(ok or 0), int(n)) for slug, ok, n in rows}


def _accepted():
    return case((Submission.verdict == "accepted", 1), else_=0)


def user_status(db: Session, user_id: int) -> dict[str, str]:
    """slug -> "solved" or "tried" for one user."""
    rows = db.execute(select(Submission.problem,
                             func.max(_accepted()))
                      .where(Submission.user_id == user_id).group_by(Submission.problem))
    return {slug: "solved" if best else "tried" for slug, best in rows}


def leaderboard(db: Session, limit: int = 100) -> list[tuple[str, int, datetime]]:
    """(username, problems solved, when the last of them was first solved), best first."""
    first = (select(Submission.user_id, Submission.problem,
                    func.min(Submission.judged_at).label("at"))
             .where(Submission.verdict == "accepted")
             .group_by(Submission.user_id, Submission.problem).subquery())
    rows = db.execute(select(User.username, func.count(), func.max(first.c.at))
                      .join(first, first.c.user_id == User.id)
                      .group_by(User.id, User.username)
                      .order_by(func.count().desc(), func.max(first.c.at), User.id)
                      .limit(limit))
    return [(name, int(n), at) for name, n, at in rows]


def _ranked(problem: str):
    return and_(Submission.problem == problem, Submission.verdict == "accepted",
                Submission.rank_status == "done", Submission.rank_ratio.is_not(None))


def fastest(db: Session, problem: str, limit: int = 10) -> list[tuple[str, float, int]]:
    """(username, best refined ratio, that submission's id) of accepted submissions whose
    ranking job finished (web.data.ranking); the verdict run's rough ratio never ranks."""
    best = (select(Submission.user_id, func.max(Submission.rank_ratio).label("ratio"))
            .where(_ranked(problem)).group_by(Submission.user_id).subquery())
    rows = db.execute(select(User.username, best.c.ratio, func.min(Submission.id))
                      .join(best, best.c.user_id == User.id)
                      .join(Submission, and_(Submission.user_id == User.id, _ranked(problem),
                                             Submission.rank_ratio == best.c.ratio))
                      .group_by(User.username, best.c.ratio)
                      .order_by(best.c.ratio.desc()).limit(limit))
    return [(name, float(r), int(sid)) for name, r, sid in rows]


def unranked(db: Session, problem: str, limit: int = 20) -> list[tuple[str, str]]:
    """(username, "pending" or "failed") of users with an accepted submission of the
    problem still being timed for the leaderboard (or whose timing failed) and none
    ranked yet: shown without a number."""
    ranked = select(Submission.user_id).where(_ranked(problem))
    state = func.max(case((Submission.rank_status == "pending", 2), else_=1))
    rows = db.execute(select(User.username, state)
                      .join(Submission, Submission.user_id == User.id)
                      .where(Submission.problem == problem, Submission.verdict == "accepted",
                             Submission.rank_status.in_(("pending", "failed")),
                             Submission.user_id.not_in(ranked))
                      .group_by(User.id, User.username)
                      .order_by(state.desc(), func.min(Submission.id)).limit(limit))
    return [(name, "pending" if s == 2 else "failed") for name, s in rows]
