"""Every query the app runs: users and tokens, submissions, the job queue, statistics.

Queue operations are single conditional UPDATEs (``... WHERE status = 'queued'``,
``... WHERE lease_token = :t AND lease_expires_at >= :now``) so two workers can never hold
the same job and a result is written once, on SQLite and PostgreSQL alike.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import CursorResult, Executable, and_, case, delete, func, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from judge.events import Event
from web.models import ApiToken, Job, JobEvent, ProblemVersion, Submission, User, Worker

IN_FLIGHT = ("queued", "running")
GPU_WORKER_ALIVE_S = 120  # a GPU worker not heard from for this long is presumed gone
MAX_ATTEMPTS = 3  # a job whose lease expired this many times is ended as internal_error
# A submission accepted by a CPU worker without its CUDA cases is judged again on a GPU at
# a rejudge's priority (web.admin_queries.REJUDGE_PRIORITY): live submissions come first.
GPU_FOLLOW_UP_PRIORITY = -10

# ---------------------------------------------------------------- users and tokens


def _changed(db: Session, statement: Executable) -> int:
    """Rows an UPDATE changed."""
    return cast("CursorResult[Any]", db.execute(statement)).rowcount


def user_by_name(db: Session, username: str) -> User | None:
    return db.scalar(select(User).where(User.username_key == username.casefold()))


def create_user(db: Session, username: str, password_hash: str, now: datetime,
                lang: str = "zh", is_admin: bool = False) -> User | None:
    """The new user, or None when the name is taken."""
    user = User(username=username, username_key=username.casefold(),
                password_hash=password_hash, lang=lang, created_at=now, is_admin=is_admin,
                disabled=False)
    db.add(user)
    try:
        db.commit()
    except IntegrityError:
        db.rollback()
        return None
    return user


def end_sessions(db: Session, user_id: int) -> None:
    """Every session cookie of the user stops working (they carry the old generation)."""
    db.execute(update(User).where(User.id == user_id)
               .values(session_gen=User.session_gen + 1))
    db.commit()


def set_lang(db: Session, user: User, lang: str) -> None:
    user.lang = lang
    db.commit()


def create_token(db: Session, user: User, token_hash: str, now: datetime, days: int) -> None:
    db.add(ApiToken(user_id=user.id, token_hash=token_hash, created_at=now,
                    expires_at=now + timedelta(days=days)))
    db.commit()


def user_for_token(db: Session, token_hash: str, now: datetime) -> User | None:
    return db.scalar(select(User).join(ApiToken, ApiToken.user_id == User.id)
                     .where(ApiToken.token_hash == token_hash, ApiToken.expires_at > now,
                            User.disabled.is_(False)))


# ---------------------------------------------------------------- submissions


@dataclass
class Limited(Exception):
    """A submission refused by a rate limit; ``retry_after`` in seconds when it helps."""

    reason: str  # "in_flight" or "per_minute"
    retry_after: int = 0


def add_submission(db: Session, user: User, problem: str, version: str, code: str,
                   now: datetime, per_minute: int, *, needs_gpu: bool = False,
                   prefers_gpu: bool = False) -> Submission:
    """Store a submission and its job, or raise Limited with nothing stored.

    The rows are inserted first and the limits counted after, in the same transaction:
    the insert takes SQLite's write lock (and the user row is locked on PostgreSQL), so
    two requests of one user racing each other see each other's row and one rolls back.
    """
    db.execute(select(User.id).where(User.id == user.id).with_for_update())
    sub = Submission(user_id=user.id, problem=problem, problem_version=version, code=code,
                     status="queued", created_at=now)
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
    if (in_flight or 0) > 1:
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
                     limit: int = 50, offset: int = 0) -> list[Submission]:
    q = select(Submission).where(Submission.user_id == user_id)
    if problem:
        q = q.where(Submission.problem == problem)
    return list(db.scalars(q.order_by(Submission.id.desc()).limit(limit).offset(offset)))


def count_user_submissions(db: Session, user_id: int) -> int:
    return db.scalar(select(func.count()).select_from(Submission)
                     .where(Submission.user_id == user_id)) or 0


def current_job(db: Session, sid: int) -> Job | None:
    return db.scalar(select(Job).where(Job.submission_id == sid).order_by(Job.id.desc()).limit(1))


def queue_position(db: Session, job: Job) -> int:
    """How many queued jobs will be handed out before this one."""
    ahead = or_(Job.priority > job.priority, and_(Job.priority == job.priority, Job.id < job.id))
    return db.scalar(select(func.count()).select_from(Job)
                     .where(Job.status == "queued", ahead)) or 0


def events_after(db: Session, sid: int, after_id: int) -> list[JobEvent]:
    return list(db.scalars(select(JobEvent).where(JobEvent.submission_id == sid,
                                                  JobEvent.id > after_id)
                           .order_by(JobEvent.id)))


# ---------------------------------------------------------------- workers and the queue


def register_worker(db: Session, name: str, gpu: bool, capabilities: dict[str, Any],
                    now: datetime) -> Worker:
    worker = Worker(name=name, gpu=gpu, capabilities=capabilities, registered_at=now,
                    last_seen_at=now)
    db.add(worker)
    db.commit()
    return worker


def requeue_expired(db: Session, now: datetime) -> list[int]:
    """Hand jobs whose lease ran out back to the queue (or end them after MAX_ATTEMPTS).
    Returns the submissions that changed (a validate job's version changes too)."""
    requeued: list[int] = []
    for job in db.scalars(select(Job).where(Job.status == "running",
                                            Job.lease_expires_at < now)).all():
        give_up = job.attempts >= MAX_ATTEMPTS
        n = _changed(db, update(Job).where(Job.id == job.id, Job.status == "running",
                                           Job.lease_token == job.lease_token,
                                           Job.lease_expires_at < now)
                     .values(status="done" if give_up else "queued", lease_token=None,
                             lease_expires_at=None, worker_id=None,
                             finished_at=now if give_up else None))
        if n != 1:  # renewed or finished meanwhile
            continue
        db.execute(delete(JobEvent).where(JobEvent.job_id == job.id))
        if job.kind == "validate":
            _version_back(db, job, now, give_up)
            continue
        values: dict[str, Any] = {"status": "queued"}
        if give_up:
            values = {"status": "done", "verdict": "internal_error", "passed": 0, "total": 0,
                      "judged_at": now, "report": abandoned_report(job)}
        db.execute(update(Submission).where(Submission.id == job.submission_id,
                                            Submission.status != "done").values(**values))
        requeued.append(job.submission_id or 0)
    db.commit()
    return requeued


def _version_back(db: Session, job: Job, now: datetime, give_up: bool) -> None:
    """A validate job went back to the queue (or was given up on)."""
    from web.admin_queries import validation_finished

    if job.version_id is None:
        return
    if give_up:
        validation_finished(db, job.version_id, {
            "ok": False, "files": [],
            "errors": [f"validation did not finish in {job.attempts} attempts (the worker "
                       f"was lost); validate it again"]}, now)
    else:
        db.execute(update(ProblemVersion).where(ProblemVersion.id == job.version_id)
                   .values(status="uploaded"))


def abandoned_report(job: Job) -> dict[str, Any]:
    assert job.submission is not None
    zh = f"评测在 {job.attempts} 次尝试中都没有完成（评测机失联），请稍后重新提交"
    en = (f"judging did not finish in {job.attempts} attempts (the worker was lost); "
          f"please submit again later")
    return {"verdict": "internal_error", "problem": job.submission.problem,
            "problem_version": job.submission.problem_version, "seed": 0, "isolation": "",
            "message": zh, "messages": {"zh": zh, "en": en}, "tests": [], "passed": 0,
            "total": 0, "throughput": []}


def touch_worker(db: Session, worker_id: int, now: datetime) -> None:
    """The worker is alive (it asked for work or renewed a lease)."""
    db.execute(update(Worker).where(Worker.id == worker_id,
                                    Worker.last_seen_at < now - timedelta(seconds=5))
               .values(last_seen_at=now))
    db.commit()


def gpu_worker_alive(db: Session, now: datetime) -> bool:
    since = now - timedelta(seconds=GPU_WORKER_ALIVE_S)
    return bool(db.scalar(select(func.count()).select_from(Worker)
                          .where(Worker.gpu.is_(True), Worker.last_seen_at >= since)))


def claim(db: Session, worker_id: int, gpu: bool, now: datetime, lease_s: float) -> Job | None:
    """Atomically take the next queued job: jobs that want a GPU first for GPU workers,
    then by priority, then first come first served. A CPU worker never takes a job that
    needs a GPU, and takes one that prefers it only while no GPU worker is alive."""
    conditions = [Job.status == "queued"]
    if not gpu:
        conditions.append(Job.needs_gpu.is_(False))
        if gpu_worker_alive(db, now):
            conditions.append(Job.prefers_gpu.is_(False))
    wants_gpu = or_(Job.needs_gpu, Job.prefers_gpu)
    pick = (select(Job.id).where(*conditions)
            .order_by(wants_gpu.desc(), Job.priority.desc(), Job.id).limit(1))
    if db.get_bind().dialect.name == "postgresql":
        pick = pick.with_for_update(skip_locked=True)
    token = secrets.token_hex(16)
    taken = update(Job).where(Job.id == pick.scalar_subquery(), Job.status == "queued").values(
        status="running", lease_token=token, worker_id=worker_id, claimed_at=now,
        lease_expires_at=now + timedelta(seconds=lease_s), attempts=Job.attempts + 1)
    changed = _changed(db, taken.execution_options(synchronize_session=False))
    if changed != 1:
        db.rollback()
        return None
    job = db.scalar(select(Job).where(Job.lease_token == token))
    assert job is not None
    db.execute(delete(JobEvent).where(JobEvent.job_id == job.id))  # a previous attempt's
    if job.kind == "validate":
        db.execute(update(ProblemVersion).where(ProblemVersion.id == job.version_id)
                   .values(status="validating"))
    else:
        db.execute(update(Submission).where(Submission.id == job.submission_id,
                                            Submission.status != "done")
                   .values(status="running"))
    db.execute(update(Worker).where(Worker.id == worker_id).values(last_seen_at=now))
    db.commit()
    return job


def _holds_lease(job_id: int, token: str, now: datetime):
    return and_(Job.id == job_id, Job.lease_token == token, Job.status == "running",
                Job.lease_expires_at >= now)


def renew(db: Session, job_id: int, token: str, now: datetime, lease_s: float) -> bool:
    changed = _changed(db, update(Job).where(_holds_lease(job_id, token, now))
                       .values(lease_expires_at=now + timedelta(seconds=lease_s)))
    if changed == 1:
        db.execute(update(Worker).where(Worker.id == select(Job.worker_id).where(
            Job.id == job_id).scalar_subquery()).values(last_seen_at=now))
    db.commit()
    return changed == 1


def add_events(db: Session, job_id: int, token: str, now: datetime,
               events: list[Event]) -> Job | None:
    """Store progress events if the lease is still held (a validate job's fold into its
    version's report); the job, else None."""
    # A no-op UPDATE under the lease condition: it checks the lease and locks the job in
    # one step, so a job requeued meanwhile never gets a stale attempt's events.
    if _changed(db, update(Job).where(_holds_lease(job_id, token, now))
                .values(lease_token=Job.lease_token)) != 1:
        db.rollback()
        return None
    job = db.get(Job, job_id)
    assert job is not None
    if job.kind == "validate":
        from web.admin_queries import validation_progress

        for event in events:
            validation_progress(db, job.version_id or 0, event)
    else:
        # the learner's view: no seed, hidden tests without message or output
        db.add_all(JobEvent(job_id=job_id, submission_id=job.submission_id,
                            payload=e.to_json("zh", learner=True), created_at=now)
                   for e in events)
    db.commit()
    return job


def finish(db: Session, job_id: int, token: str, now: datetime,
           result: dict[str, Any], summary: dict[str, Any]) -> tuple[str, Job | None]:
    """Write a job's result once (a submission's report, or a validation's). Returns
    ("stored", job), ("duplicate", job) when this lease already stored it, or
    ("rejected", None) when the lease was lost."""
    changed = _changed(db, update(Job).where(_holds_lease(job_id, token, now))
                       .values(status="done", finished_at=now))
    if changed != 1:
        db.rollback()
        job = db.get(Job, job_id)
        if job is not None and job.status == "done" and job.lease_token == token:
            return "duplicate", job
        return "rejected", None
    job = db.get(Job, job_id)
    assert job is not None
    if job.kind == "validate":
        from web.admin_queries import validation_finished

        validation_finished(db, job.version_id or 0, result, now)
    else:
        db.execute(update(Submission).where(Submission.id == job.submission_id)
                   .values(status="done", report=result, judged_at=now, **summary))
        _follow_up_on_gpu(db, job, result, now)
    db.execute(delete(JobEvent).where(JobEvent.job_id == job_id))
    db.commit()
    return "stored", job


def _follow_up_on_gpu(db: Session, job: Job, result: dict[str, Any], now: datetime) -> None:
    """A CPU worker accepted a submission whose CUDA cases or checks it could not run (no
    GPU worker was alive): the verdict covers the CPU cases only. Queue it again for GPU
    workers alone (needs_gpu), at a rejudge's priority, unless such a job is queued
    already; the CPU report stands until the GPU's replaces it."""
    worker = db.get(Worker, job.worker_id) if job.worker_id is not None else None
    if (worker is None or worker.gpu or result.get("verdict") != "accepted"
            or not result.get("cuda_not_run") or result.get("device") == "cuda"):
        return
    waiting = db.scalar(select(func.count()).select_from(Job).where(
        Job.submission_id == job.submission_id, Job.status == "queued", Job.needs_gpu))
    if not waiting:
        db.add(Job(kind="judge", submission_id=job.submission_id,
                   problem_version=job.problem_version, status="queued",
                   priority=GPU_FOLLOW_UP_PRIORITY, needs_gpu=True, prefers_gpu=True,
                   attempts=0, created_at=now))


def release(db: Session, job_id: int, token: str, now: datetime) -> Job | None:
    """A worker gives a job back unjudged (it is shutting down): queued again at once."""
    changed = _changed(db, update(Job).where(_holds_lease(job_id, token, now))
                       .values(status="queued", lease_token=None, lease_expires_at=None,
                               worker_id=None))
    if changed != 1:
        db.rollback()
        return None
    job = db.get(Job, job_id)
    assert job is not None
    db.execute(delete(JobEvent).where(JobEvent.job_id == job_id))
    if job.kind == "validate":
        _version_back(db, job, now, give_up=False)
    else:
        db.execute(update(Submission).where(Submission.id == job.submission_id,
                                            Submission.status != "done")
                   .values(status="queued"))
    db.commit()
    return job


# ---------------------------------------------------------------- statistics


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


def fastest(db: Session, problem: str, limit: int = 10) -> list[tuple[str, float, int]]:
    """(username, best throughput ratio, that submission's id) of accepted submissions."""
    best = (select(Submission.user_id, func.max(Submission.ratio).label("ratio"))
            .where(Submission.problem == problem, Submission.verdict == "accepted",
                   Submission.ratio.is_not(None))
            .group_by(Submission.user_id).subquery())
    rows = db.execute(select(User.username, best.c.ratio, func.min(Submission.id))
                      .join(best, best.c.user_id == User.id)
                      .join(Submission, and_(Submission.user_id == User.id,
                                             Submission.problem == problem,
                                             Submission.verdict == "accepted",
                                             Submission.ratio == best.c.ratio))
                      .group_by(User.username, best.c.ratio)
                      .order_by(best.c.ratio.desc()).limit(limit))
    return [(name, float(r), int(sid)) for name, r, sid in rows]
