"""Statistics over judged submissions: acceptance per problem, a user's progress, the
leaderboard, the fastest accepted solutions."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import case, func, select
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


def speed_boards(db: Session, problems: list[str], fastest: int = 10,
                 waiting: int = 20) -> dict[str, tuple[list, list]]:
    """Per problem: the ``fastest`` (username, best refined ratio, the first submission with
    it) of accepted submissions whose ranking job finished (web.data.ranking; the verdict
    run's rough ratio never ranks), best first; and up to ``waiting`` (username, "pending"
    or "failed") of users with an accepted submission still being timed for the
    leaderboard (or whose timing failed) and none ranked: shown without a number, pending
    ones first. One query for every problem, not two per problem."""
    rows = db.execute(select(Submission.problem, Submission.user_id, User.username,
                             Submission.id, Submission.rank_status, Submission.rank_ratio)
                      .join(User, User.id == Submission.user_id)
                      .where(Submission.problem.in_(problems), Submission.verdict == "accepted",
                             Submission.rank_status.in_(("done", "pending", "failed")))
                      .order_by(Submission.id))
    best: dict[str, dict[int, tuple[float, int, str]]] = {p: {} for p in problems}
    other: dict[str, dict[int, tuple[int, int, str]]] = {p: {} for p in problems}
    for problem, uid, name, sid, status, ratio in rows:  # by id: the first one wins a tie
        if status == "done" and ratio is not None:
            if uid not in best[problem] or ratio > best[problem][uid][0]:
                best[problem][uid] = (ratio, sid, name)
        elif status in ("pending", "failed"):
            pending, first, _ = other[problem].get(uid, (0, sid, name))
            other[problem][uid] = (max(pending, status == "pending"), first, name)
    boards = {}
    for p in problems:
        ranked = sorted(best[p].values(), key=lambda r: (-r[0], r[1]))[:fastest]
        unranked = sorted((v for uid, v in other[p].items() if uid not in best[p]),
                          key=lambda v: (-v[0], v[1]))[:waiting]
        boards[p] = ([(name, float(r), sid) for r, sid, name in ranked],
                     [(name, "pending" if pending else "failed") for pending, _, name in unranked])
    return boards
