"""Ranking: the precise timing of accepted submissions for the leaderboard.

A judging decides the verdict quickly (is the submission fast enough?); how fast it is,
to the precision a leaderboard needs, is measured afterwards by a follow-up job
(``kind="rank"``), queued when a judge job's accepted report has a measured speed check.
Rank jobs have the lowest priority and are claimed after every other job, whatever GPU
they want (:func:`web.data.queue.claim`): live submissions, validations and rejudges
always go first, so a busy queue delays rankings, never the reverse.

The leaderboard's ratio combines several rank runs (``RankPlan.runs``, three by default):
one run, however many pairs it times, measures the machine's state of that minute along
with the submission, and a ratio far from 1 moves with it. When a run ends and more are
wanted, the next rank job is queued at once with ``not_before`` set ``RankPlan.spacing_s``
later (web.data.queue.claim skips it until then). The submission stays ``pending`` until
the last run, with the runs so far in ``ranking["runs"]``; then each check's ratio is the
geometric mean of its runs' (web.timing.combine) and ``rank_status`` becomes ``done``.
The leaderboard shows ``done`` rankings only.

A rank job's result never changes the submission's verdict, report or status: it fills
``rank_status``, ``rank_ratio`` and ``ranking``. Every new judging of a submission (a
rejudge, the GPU follow-up) clears its ranking and replaces any queued rank job (a
submission never has two queued); a rank result that arrives after a newer job of its
submission was queued is dropped. A rank run that does not come back accepted with a
refined check (the machine was too noisy), or whose lease was lost too often, leaves
``rank_status = "failed"`` (its earlier runs too): the leaderboard never shows a number
for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from web import timing
from web.models import Job, JobEvent, Submission

RANK_PRIORITY = -20  # below rejudges (-10) and validations (-5); claimed last anyway
# The leaderboard's ratio combines this many rank runs of a submission (settings:
# rank_runs), each begun at least RANK_SPACING_S after the one before ended (settings:
# rank_spacing_seconds). One run's ratio follows the machine's state over minutes, which
# no number of pairs within the run averages out: padding-collate's numpy_full_from_numpy
# (1.6x the reference) spread over 1.092-1.119 (max/min) in 20 single runs; 20 judgings
# of three runs each, 240 s apart, over 1.046, where the same 60 runs read singly spread
# over 1.142 (bench/throughput_stability.py; the README, "Verdicts in two seconds").
RANK_RUNS = 3
RANK_SPACING_S = 240.0


@dataclass(frozen=True)
class RankPlan:
    """How a submission's leaderboard timing is measured (settings: rank_runs,
    rank_spacing_seconds)."""

    runs: int = RANK_RUNS
    spacing_s: float = RANK_SPACING_S


DEFAULT_PLAN = RankPlan()


def _measured(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in result.get("throughput") or []
            if isinstance(c, dict) and c.get("ratio") is not None]


def after_judging(db: Session, job: Job, result: dict[str, Any], now: datetime,
                  plan: RankPlan = DEFAULT_PLAN) -> None:
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
        _queue_run(db, job, judged if isinstance(judged, str) and len(judged) == 64
                   else job.problem_version, job.needs_gpu or cuda,
                   job.prefers_gpu or cuda, now, None)
    db.execute(update(Submission).where(Submission.id == job.submission_id).values(
        rank_status="pending" if wanted else None, rank_ratio=None,
        ranking={"runs": [], "wanted": plan.runs} if wanted else None))


def _queue_run(db: Session, job: Job, version: str | None, needs_gpu: bool,
               prefers_gpu: bool, now: datetime, not_before: datetime | None) -> None:
    db.add(Job(kind="rank", submission_id=job.submission_id, problem_version=version,
               status="queued", priority=RANK_PRIORITY, needs_gpu=needs_gpu,
               prefers_gpu=prefers_gpu, attempts=0, created_at=now, not_before=not_before))


def cancel_queued(db: Session, sid: int, now: datetime) -> None:
    """Queued rank jobs of a submission are answered already (a newer judging voids them)."""
    db.execute(update(Job).where(Job.submission_id == sid, Job.kind == "rank",
                                 Job.status == "queued").values(status="done",
                                                                finished_at=now))


def _is_newest(db: Session, job: Job) -> bool:
    newest = db.scalar(select(func.max(Job.id)).where(Job.submission_id == job.submission_id))
    return newest == job.id


def ranked(db: Session, job: Job, result: dict[str, Any], now: datetime,
           plan: RankPlan = DEFAULT_PLAN) -> None:
    """A rank run's result (the posted report): one more run of the submission's timing
    (the next is queued, spaced), the runs combined once there are ``plan.runs``, or
    "failed"."""
    sub = db.get(Submission, job.submission_id) if _is_newest(db, job) else None
    if sub is None or sub.status != "done" or sub.rank_status != "pending":
        return
    checks, _ = timing.ranking_of(result)
    if checks is None:
        _store(db, sub.id, {"rank_status": "failed", "rank_ratio": None, "ranking": None})
        return
    so_far = sub.ranking.get("runs") if isinstance(sub.ranking, dict) else None
    runs = [*(so_far if isinstance(so_far, list) else []),
            {**checks, "ranked_at": now.isoformat() + "Z"}]
    if len(runs) < plan.runs:
        _queue_run(db, job, job.problem_version, job.needs_gpu, job.prefers_gpu, now,
                   now + timedelta(seconds=plan.spacing_s))
        _store(db, sub.id, {"ranking": {"runs": runs, "wanted": plan.runs}})
        return
    combined = timing.combine([run["checks"] for run in runs])
    _store(db, sub.id, {
        "rank_status": "done", "rank_ratio": min(c["ratio"] for c in combined),
        "ranking": {"checks": combined, "device": runs[-1]["device"],
                    "ranked_at": now.isoformat() + "Z",
                    "runs": [{"ranked_at": run["ranked_at"],
                              "ratios": {c["name"]: c["ratio"] for c in run["checks"]}}
                             for run in runs]}})


def _store(db: Session, sid: int, values: dict[str, Any]) -> None:
    db.execute(update(Submission).where(Submission.id == sid, Submission.status == "done")
               .values(**values))


def given_up(db: Session, job: Job) -> None:
    """A rank job whose lease expired MAX_ATTEMPTS times: ranking failed."""
    if _is_newest(db, job):
        db.execute(update(Submission).where(Submission.id == job.submission_id,
                                            Submission.rank_status == "pending")
                   .values(rank_status="failed"))


def runs_done(sub: Submission) -> tuple[int, int]:
    """A pending ranking's runs: (done so far, wanted)."""
    so_far = sub.ranking if isinstance(sub.ranking, dict) else {}
    done = len(so_far.get("runs") or [])
    wanted = so_far.get("wanted")
    return done, max(done + 1, wanted if isinstance(wanted, int) else RANK_RUNS)


def current_rank_job(db: Session, sid: int) -> Job | None:
    """The submission's rank job while it is queued or running."""
    return db.scalar(select(Job).where(Job.submission_id == sid, Job.kind == "rank",
                                       Job.status.in_(("queued", "running")))
                     .order_by(Job.id.desc()).limit(1))


def rank_events(db: Session, job_id: int) -> list[JobEvent]:
    """The progress events of a rank job's current attempt."""
    return list(db.scalars(select(JobEvent).where(JobEvent.job_id == job_id)
                           .order_by(JobEvent.id)))
