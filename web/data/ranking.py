"""Ranking: the precise timing of accepted submissions for the leaderboard.

A judging decides the verdict quickly (is the submission fast enough?); how fast it is,
to the precision a leaderboard needs, is measured afterwards by a follow-up job
(``kind="rank"``), queued when a judge job's accepted report has a measured speed check.
Rank jobs have the lowest priority and are claimed after every other job, whatever GPU
they want (:func:`web.data.queue.claim`): live submissions, validations and rejudges
always go first, so a busy queue delays rankings, never the reverse.

A rank job's result never changes the submission's verdict, report or status: it fills
``rank_status``, ``rank_ratio`` and ``ranking``. Every new judging of a submission (a
rejudge, the GPU follow-up) clears its ranking and replaces any queued rank job (a
submission never has two queued); a rank result that arrives after a newer job of its
submission was queued is dropped. A rank run that does not come back accepted with a
refined check (the machine was too noisy), or whose lease was lost too often, leaves
``rank_status = "failed"``: the leaderboard never shows a number for it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from web import timing
from web.models import Job, JobEvent, Submission

RANK_PRIORITY = -20  # below rejudges (-10) and validations (-5); claimed last anyway


def _measured(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in result.get("throughput") or []
            if isinstance(c, dict) and c.get("ratio") is not None]


def after_judging(db: Session, job: Job, result: dict[str, Any], now: datetime) -> None:
    """A judge job's report was just stored: the old ranking is void. Queue a rank job
    when the verdict is accepted with a measured speed check (on a GPU when a check ran
    on CUDA). A GPU follow-up queued just before it is judged first (a higher priority);
    its result voids this rank job in turn."""
    cancel_queued(db, job.submission_id or 0, now)
    measured = _measured(result)
    wanted = result.get("verdict") == "accepted" and bool(measured)
    if wanted:
        cuda = any(c.get("device") == "cuda" for c in measured)
        judged = result.get("problem_version")
        db.add(Job(kind="rank", submission_id=job.submission_id,
                   problem_version=judged if isinstance(judged, str) and len(judged) == 64
                   else job.problem_version,
                   status="queued", priority=RANK_PRIORITY, needs_gpu=job.needs_gpu or cuda,
                   prefers_gpu=job.prefers_gpu or cuda, attempts=0, created_at=now))
    db.execute(update(Submission).where(Submission.id == job.submission_id).values(
        rank_status="pending" if wanted else None, rank_ratio=None, ranking=None))


def cancel_queued(db: Session, sid: int, now: datetime) -> None:
    """Queued rank jobs of a submission are answered already (a newer judging voids them)."""
    db.execute(update(Job).where(Job.submission_id == sid, Job.kind == "rank",
                                 Job.status == "queued").values(status="done",
                                                                finished_at=now))


def _is_newest(db: Session, job: Job) -> bool:
    newest = db.scalar(select(func.max(Job.id)).where(Job.submission_id == job.submission_id))
    return newest == job.id


def ranked(db: Session, job: Job, result: dict[str, Any], now: datetime) -> None:
    """A rank job's result (the posted report): the refined ratios, or "failed"."""
    if not _is_newest(db, job):
        return
    ranking, ratio = timing.ranking_of(result)
    values: dict[str, Any] = {"rank_status": "failed", "rank_ratio": None, "ranking": None}
    if ranking is not None:
        values = {"rank_status": "done", "rank_ratio": ratio,
                  "ranking": {**ranking, "ranked_at": now.isoformat() + "Z"}}
    db.execute(update(Submission).where(Submission.id == job.submission_id,
                                        Submission.status == "done").values(**values))


def given_up(db: Session, job: Job) -> None:
    """A rank job whose lease expired MAX_ATTEMPTS times: ranking failed."""
    if _is_newest(db, job):
        db.execute(update(Submission).where(Submission.id == job.submission_id,
                                            Submission.rank_status == "pending")
                   .values(rank_status="failed"))


def current_rank_job(db: Session, sid: int) -> Job | None:
    """The submission's rank job while it is queued or running."""
    return db.scalar(select(Job).where(Job.submission_id == sid, Job.kind == "rank",
                                       Job.status.in_(("queued", "running")))
                     .order_by(Job.id.desc()).limit(1))


def rank_events(db: Session, job_id: int) -> list[JobEvent]:
    """The progress events of a rank job's current attempt."""
    return list(db.scalars(select(JobEvent).where(JobEvent.job_id == job_id)
                           .order_by(JobEvent.id)))
