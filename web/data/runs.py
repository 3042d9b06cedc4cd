""""Run examples": a learner's code judged on a problem's public cases only, with no speed
check, above live submissions in the queue. A run is a :class:`web.models.Run`, never a
submission: nothing that counts submissions (standings, the leaderboard, history,
acceptance rates, a user's solved status) reads its table.

Its one job is ``kind="run"`` (``run_id`` set); the queue (:mod:`web.data.queue`) calls
the functions here where a judge job would update its submission. Its progress events are
stored like a submission's (``job_events``, learner view) with ``submission_id`` 0 and
found through the job. Whatever report a worker posts, only its public tests are kept
(:func:`public_only`), so a run never shows a hidden case.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from judge.events import Event
from judge.i18n import T
from judge.report import Report
from judge.verdict import Verdict
from web.models import Job, JobEvent, Run, User
from web.phases import Phase

# Above live submissions (0): a run is short (public cases, no speed check) and its
# learner is watching it.
RUN_PRIORITY = 5
IN_FLIGHT = ("queued", "running")


@dataclass
class RunLimited(Exception):
    """A run refused by its rate limits; ``retry_after`` in seconds when it helps."""

    reason: str  # "in_flight" or "per_minute"
    retry_after: int = 0


def add_run(db: Session, user: User, problem: str, version: str, code: str, now: datetime,
            per_minute: int, in_flight_max: int, *, needs_gpu: bool = False,
            prefers_gpu: bool = False, keep: int = 20) -> Run:
    """Store a run and its job, or raise RunLimited with nothing stored (the rows go in
    first and the limits are counted after, in one transaction, as for submissions).
    Runs are throw-away: only the user's ``keep`` newest finished ones are kept."""
    db.execute(select(User.id).where(User.id == user.id).with_for_update())
    run = Run(user_id=user.id, problem=problem, problem_version=version, code=code,
              status="queued", created_at=now)
    db.add(run)
    db.flush()
    db.add(Job(kind="run", run_id=run.id, status="queued", priority=RUN_PRIORITY,
               needs_gpu=needs_gpu, prefers_gpu=prefers_gpu, attempts=0, created_at=now))
    db.flush()
    mine = (Run.user_id == user.id)
    busy = db.scalar(select(func.count()).select_from(Run).where(
        mine, Run.status.in_(IN_FLIGHT))) or 0
    since = now - timedelta(minutes=1)
    recent = list(db.scalars(select(Run.created_at).where(mine, Run.created_at > since)
                             .order_by(Run.created_at)))
    if busy > in_flight_max:
        db.rollback()
        raise RunLimited("in_flight")
    if len(recent) > per_minute:
        db.rollback()
        raise RunLimited("per_minute", max(1, int((recent[0] - since).total_seconds()) + 1))
    _prune(db, user.id, keep)
    db.commit()
    return run


def _prune(db: Session, user_id: int, keep: int) -> None:
    """Delete the user's finished runs (and their jobs) but the ``keep`` newest."""
    newest = select(Run.id).where(Run.user_id == user_id).order_by(Run.id.desc()).limit(keep)
    old = list(db.scalars(select(Run.id).where(Run.user_id == user_id, Run.status == "done",
                                               Run.id.not_in(newest.scalar_subquery()))))
    if old:
        db.execute(delete(Job).where(Job.run_id.in_(old)))
        db.execute(delete(Run).where(Run.id.in_(old)))


def get_run(db: Session, rid: int) -> Run | None:
    return db.get(Run, rid)


def run_job(db: Session, rid: int) -> Job | None:
    return db.scalar(select(Job).where(Job.run_id == rid).order_by(Job.id.desc()).limit(1))


def events_after(db: Session, rid: int, after_id: int) -> list[JobEvent]:
    return list(db.scalars(select(JobEvent).join(Job, Job.id == JobEvent.job_id)
                           .where(Job.run_id == rid, JobEvent.id > after_id)
                           .order_by(JobEvent.id)))


def public_only(result: dict[str, Any]) -> Report:
    """A run's report: the public tests of what the worker posted, no speed checks. When
    hidden tests had to be left out, the verdict is the public tests' own (the first
    failure's, else accepted) and the whole-report message, which may speak of a hidden
    case, goes with them."""
    report = Report.from_json(result)
    public = [t for t in report.tests if t.visibility == "public"]
    dropped = len(public) != len(report.tests)
    report.tests, report.throughput = public, []
    if dropped or report.verdict is Verdict.TOO_SLOW:
        failed = [t.verdict for t in public
                  if t.verdict not in (Verdict.ACCEPTED, Verdict.SKIPPED)]
        report.verdict = failed[0] if failed else Verdict.ACCEPTED
        report.message = T("", "")
    return report


def claimed(db: Session, job: Job) -> None:
    db.execute(update(Run).where(Run.id == job.run_id, Run.status != "done")
               .values(status="running"))


def add_events(db: Session, job: Job, events: Sequence[Event | Phase], now: datetime) -> None:
    db.add_all(JobEvent(job_id=job.id, submission_id=0,
                        payload=e.to_json("zh", learner=True), created_at=now)
               for e in events)


def finished(db: Session, job: Job, result: dict[str, Any], now: datetime) -> None:
    report = public_only(result)
    db.execute(update(Run).where(Run.id == job.run_id).values(
        status="done", report=report.to_json("zh"), judged_at=now,
        verdict=str(report.verdict), passed=report.passed, total=report.total))


def back(db: Session, job: Job, now: datetime, give_up: bool) -> None:
    """A run job went back to the queue (its worker was lost or stopped), or was given up
    on after too many attempts."""
    values: dict[str, Any] = {"status": "queued"}
    if give_up:
        zh = f"运行在 {job.attempts} 次尝试中都没有完成（评测机失联），请稍后再试"
        en = (f"the run did not finish in {job.attempts} attempts (the worker was lost); "
              f"please try again later")
        values = {"status": "done", "verdict": "internal_error", "passed": 0, "total": 0,
                  "judged_at": now, "report": Report(
                      Verdict.INTERNAL_ERROR, job.run.problem if job.run else "", 0, "",
                      message=T(zh, en)).to_json("zh")}
    db.execute(update(Run).where(Run.id == job.run_id, Run.status != "done").values(**values))
