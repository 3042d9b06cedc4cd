"""Submissions: storing one with its job (under the rate limits), reading them back, a
job's progress events."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from web.models import (
    Job,
    JobEvent,
    Submission,
    User,
)

IN_FLIGHT = ("queued", "running")


@dataclass
class Limited(Exception):
    """A submission refused by a rate limit; ``retry_after`` in seconds when it helps."""

    reason: str  # "in_flight" or "per_minute"
    retry_after: int = 0


def add_submission(db: Session, user: User, problem: str, version: str, code: str,
                   now: datetime, per_minute: int, *, in_flight_max: int = 1,
                   needs_gpu: bool = False, prefers_gpu: bool = False,
                   share: bool = False) -> Submission:
    """Store a submission and its job, or raise Limited with nothing stored.

    The rows are inserted first and the limits counted after, in the same transaction:
    the insert takes SQLite's write lock (and the user row is locked on PostgreSQL), so
    two requests of one user racing each other see each other's row and one rolls back.
    """
    db.execute(select(User.id).where(User.id == user.id).with_for_update())
    sub = Submission(user_id=user.id, problem=problem, problem_version=version, code=code,
                     status="queued", created_at=now, share=share)
    db.add(sub)
    db.flush()
    db.add(Job(submission_id=sub.id, status="queued", priority=0, needs_gpu=needs_gpu,
               prefers_gpu=prefers_gpu, attempts=0, created_at=now))
    db.flush()
    in_flight = db.scalar(select(func.count()).select_from(Submission).where(
        Submission.user_id == user.id, Submission.status.in_(IN_FLIGHT)))
    since = now - timedelta(minutes=1)
    recent = list(db.scalars(select(Submission.created_at).where(
        Submission.user_id == user.id, Submission.created_at > since)
        .order_by(Submission.created_at)))
    if (in_flight or 0) > in_flight_max:
        db.rollback()
        raise Limited("in_flight")
    if len(recent) > per_minute:
        db.rollback()
        wait = (recent[0] - since).total_seconds()
        raise Limited("per_minute", max(1, int(wait) + 1))
    db.commit()
    return sub


def get_submission(db: Session, sid: int) -> Submission | None:
    return db.get(Submission, sid)


def user_submissions(db: Session, user_id: int, *, problem: str | None = None,
                     verdict: str | None = None, limit: int = 50,
                     offset: int = 0) -> list[Submission]:
    """A user's submissions, newest first; ``problem`` (a slug) and ``verdict`` filter
    them (``verdict="pending"``: the ones not judged yet)."""
    q = _filtered(select(Submission), user_id, problem, verdict)
    return list(db.scalars(q.order_by(Submission.id.desc()).limit(limit).offset(offset)))


def count_user_submissions(db: Session, user_id: int, *, problem: str | None = None,
                           verdict: str | None = None) -> int:
    q = _filtered(select(func.count()).select_from(Submission), user_id, problem, verdict)
    return db.scalar(q) or 0


def _filtered(q, user_id: int, problem: str | None, verdict: str | None):
    q = q.where(Submission.user_id == user_id)
    if problem:
        q = q.where(Submission.problem == problem)
    if verdict == "pending":
        q = q.where(Submission.status.in_(IN_FLIGHT))
    elif verdict:
        q = q.where(Submission.status == "done", Submission.verdict == verdict)
    return q


def problem_submissions(db: Session, slug: str, limit: int = 200) -> list[Submission]:
    return list(db.scalars(select(Submission).where(Submission.problem == slug)
                           .order_by(Submission.id.desc()).limit(limit)))


def events_after(db: Session, sid: int, after_id: int) -> list[JobEvent]:
    """A submission's judging events after an id (a rank job's are not the judging's:
    ``web.data.ranking.rank_events``)."""
    return list(db.scalars(select(JobEvent).join(Job, Job.id == JobEvent.job_id)
                           .where(JobEvent.submission_id == sid, JobEvent.id > after_id,
                                  Job.kind != "rank")
                           .order_by(JobEvent.id)))


CHANGE_COLUMNS = ("previous_verdict", "verdict_changed_at", "verdict_changed_version",
                  "verdict_change_seen_at")


def verdict_change(sub: Submission | None, verdict: str | None, version: str,
                   now: datetime) -> dict[str, Any]:
    """The columns a judging writes besides its result when it replaces a verdict with
    another (a rejudge, or the GPU's judging after a CPU one): the verdict the learner
    last saw, when it changed, the version that judged it, and not seen yet. Nothing for
    a first verdict or the same one. A verdict changed back to the one the learner last
    saw, before they saw the change, leaves no change to tell."""
    if sub is None or sub.verdict is None or verdict is None or verdict == sub.verdict:
        return {}
    unseen = sub.verdict_changed_at is not None and sub.verdict_change_seen_at is None
    was = sub.previous_verdict if unseen else sub.verdict
    if verdict == was:
        return dict.fromkeys(CHANGE_COLUMNS)
    return {"previous_verdict": was, "verdict_changed_at": now,
            "verdict_changed_version": version, "verdict_change_seen_at": None}


def change_unseen(sub: Submission) -> bool:
    return sub.verdict_changed_at is not None and sub.verdict_change_seen_at is None


def mark_change_seen(db: Session, sub: Submission, now: datetime) -> None:
    """Its owner opened the submission: the problem page stops telling them of the change
    (the submission page keeps showing it)."""
    if change_unseen(sub):
        db.execute(update(Submission).where(Submission.id == sub.id,
                                            Submission.verdict_change_seen_at.is_(None))
                   .values(verdict_change_seen_at=now))
        db.commit()


def unseen_changes(db: Session, user_id: int, problem: str) -> list[Submission]:
    """A user's submissions of a problem whose verdict a judging changed since they last
    opened them, newest first."""
    return list(db.scalars(select(Submission).where(
        Submission.user_id == user_id, Submission.problem == problem,
        Submission.verdict_changed_at.is_not(None),
        Submission.verdict_change_seen_at.is_(None)).order_by(Submission.id.desc())))
