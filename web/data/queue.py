"""The job queue, for judging submissions and validating problem versions alike: queueing
(live submissions, validations, rejudges by priority, ranking follow-ups last), claiming,
the lease (renew, events, result, release) and putting back jobs whose lease expired.

Queue operations are single conditional UPDATEs (``... WHERE status = 'queued'``,
``... WHERE lease_token = :t AND lease_expires_at >= :now``) so two workers can never hold
the same job and a result is written once, on SQLite and PostgreSQL alike. A validate
job's progress and result are folded into its version (:mod:`web.data.bank`).
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, case, delete, func, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from judge.events import Event
from judge.package import Problem
from judge.shards import check_files
from web.data import bank, ranking, runs, submissions, workers
from web.db import rows_changed
from web.models import (
    Job,
    JobEvent,
    ProblemVersion,
    Submission,
    ValidationTake,
    Worker,
)
from web.phases import Phase

MAX_ATTEMPTS = 3  # a job whose lease expired this many times is ended as internal_error


# Queue priorities (higher first): live submissions 0; validations -5 (an admin is
# waiting, but learners come first); rejudges -10 (nobody is waiting); ranking follow-ups
# -20 (web.data.ranking: claimed after every other job). "Run examples" jobs
# (web.data.runs.RUN_PRIORITY, 5) come before live submissions.
VALIDATE_PRIORITY = -5


REJUDGE_PRIORITY = -10


def gpu_needs(problem: Problem) -> tuple[bool, bool]:
    """(needs_gpu, prefers_gpu) of a package, as the queue wants them."""
    return problem.meta.requires.cuda, problem.uses_cuda


def queue_validation(db: Session, version: ProblemVersion, problem: Problem,
                     now: datetime) -> Job:
    """Ask the workers to validate a version (``python -m judge check`` in the sandbox),
    as one job per worker idle now (at least one): each judges a shard of the files and
    the version's report merges them (web/data/bank.py). Returns the first job."""
    needs, prefers = gpu_needs(problem)
    version.status, version.report, version.validated_at = "uploaded", None, None
    # Split across the workers idle now, one file each at most: the shards take the files
    # one at a time (take_file).
    files = len(check_files(problem, cuda=True))
    shards = max(1, min(files, workers.idle_workers(db, now, gpu=needs)))
    jobs = [Job(kind="validate", version_id=version.id, status="queued",
                priority=VALIDATE_PRIORITY, needs_gpu=needs, prefers_gpu=prefers, attempts=0,
                created_at=now, shard=shard, shards=shards) for shard in range(shards)]
    db.add_all(jobs)
    db.flush()
    return jobs[0]


def close_queued_validations(db: Session, version_id: int, now: datetime) -> None:
    """Validations of a version still waiting for a worker are answered already (it was
    validated on the server machine)."""
    db.execute(update(Job).where(Job.kind == "validate", Job.version_id == version_id,
                                 Job.status == "queued").values(status="done", finished_at=now))


def rejudge(db: Session, slug: str, content_hash: str, now: datetime,
            ids: list[int] | None = None, needs_gpu: bool = False,
            prefers_gpu: bool = False) -> list[int]:
    """Queue judged submissions of a problem again, at the given version and below live
    submissions. Submissions already waiting for a job are skipped. The old result stays
    shown until the new one is stored; the report names the version that judged it."""
    q = select(Submission.id).where(Submission.problem == slug, Submission.status == "done")
    if ids is not None:
        q = q.where(Submission.id.in_(ids))
    busy = select(Job.submission_id).where(Job.status.in_(("queued", "running")),
                                           Job.submission_id.is_not(None), Job.kind != "rank")
    chosen = list(db.scalars(q.where(Submission.id.not_in(busy)).order_by(Submission.id)))
    db.add_all(Job(kind="judge", submission_id=sid, problem_version=content_hash,
                   status="queued", priority=REJUDGE_PRIORITY, needs_gpu=needs_gpu,
                   prefers_gpu=prefers_gpu, attempts=0, created_at=now) for sid in chosen)
    return chosen


def pending_rejudges(db: Session, slug: str) -> int:
    return db.scalar(select(func.count()).select_from(Job).join(
        Submission, Submission.id == Job.submission_id).where(
        Submission.problem == slug, Job.status.in_(("queued", "running")),
        Job.priority == REJUDGE_PRIORITY)) or 0


def current_job(db: Session, sid: int) -> Job | None:
    return db.scalar(select(Job).where(Job.submission_id == sid).order_by(Job.id.desc()).limit(1))


def queue_position(db: Session, job: Job) -> int:
    """How many queued jobs will be handed out before this one."""
    ahead = or_(Job.priority > job.priority, and_(Job.priority == job.priority, Job.id < job.id))
    return db.scalar(select(func.count()).select_from(Job)
                     .where(Job.status == "queued", ahead)) or 0


def requeue_expired(db: Session, now: datetime) -> list[int]:
    """Hand jobs whose lease ran out back to the queue (or end them after MAX_ATTEMPTS).
    Returns the submissions that changed (a validate job's version changes too)."""
    requeued: list[int] = []
    for job in db.scalars(select(Job).where(Job.status == "running",
                                            Job.lease_expires_at < now)).all():
        give_up = job.attempts >= MAX_ATTEMPTS
        n = rows_changed(db, update(Job).where(Job.id == job.id, Job.status == "running",
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
        if job.kind == "run":
            runs.back(db, job, now, give_up)
            continue
        if job.kind == "rank":  # the submission is done: only its ranking can change
            if give_up:
                ranking.given_up(db, job)
            requeued.append(job.submission_id or 0)
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
    if job.version_id is None:
        return
    if give_up:
        bank.shard_finished(db, job, {
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


def _claimable(db: Session, gpu: bool, now: datetime) -> list[Any]:
    """The queued jobs a worker with (or without) a GPU may take now."""
    conditions = [Job.status == "queued", or_(Job.not_before.is_(None), Job.not_before <= now)]
    if not gpu:
        conditions.append(Job.needs_gpu.is_(False))
        if workers.gpu_worker_alive(db, now):
            conditions.append(Job.prefers_gpu.is_(False))
    return conditions


def should_yield(db: Session, job: Job, now: datetime) -> bool:
    """A running rank job whose worker could take another job that is waiting: the
    worker should give it back (release) and take that one, so a ranking never holds up
    a live submission, a validation or a rejudge."""
    if job.kind != "rank" or job.worker_id is None:
        return False
    worker = db.get(Worker, job.worker_id)
    waiting = select(Job.id).where(*_claimable(db, bool(worker and worker.gpu), now),
                                   Job.kind != "rank").limit(1)
    return db.scalar(waiting) is not None


def claim(db: Session, worker_id: int, gpu: bool, now: datetime, lease_s: float) -> Job | None:
    """Atomically take the next queued job: ranking follow-ups after every other job;
    then jobs that want a GPU first for GPU workers, then by priority, then first come
    first served. A CPU worker never takes a job that needs a GPU, and takes one that
    prefers it only while no GPU worker is alive."""
    conditions = _claimable(db, gpu, now)
    wants_gpu = or_(Job.needs_gpu, Job.prefers_gpu)
    pick = (select(Job.id).where(*conditions)
            .order_by((Job.kind == "rank").asc(), wants_gpu.desc(), Job.priority.desc(),
                      Job.id).limit(1))
    if db.get_bind().dialect.name == "postgresql":
        pick = pick.with_for_update(skip_locked=True)
    token = secrets.token_hex(16)
    taken = update(Job).where(Job.id == pick.scalar_subquery(), Job.status == "queued").values(
        status="running", lease_token=token, worker_id=worker_id, claimed_at=now,
        lease_expires_at=now + timedelta(seconds=lease_s), attempts=Job.attempts + 1)
    changed = rows_changed(db, taken.execution_options(synchronize_session=False))
    if changed != 1:
        db.rollback()
        return None
    job = db.scalar(select(Job).where(Job.lease_token == token))
    assert job is not None
    db.execute(delete(JobEvent).where(JobEvent.job_id == job.id))  # a previous attempt's
    if job.kind == "validate":
        db.execute(update(ProblemVersion).where(ProblemVersion.id == job.version_id)
                   .values(status="validating"))
    elif job.kind == "run":
        runs.claimed(db, job)
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
    changed = rows_changed(db, update(Job).where(_holds_lease(job_id, token, now))
                       .values(lease_expires_at=now + timedelta(seconds=lease_s)))
    if changed == 1:
        db.execute(update(Worker).where(Worker.id == select(Job.worker_id).where(
            Job.id == job_id).scalar_subquery()).values(last_seen_at=now))
    db.commit()
    return changed == 1


def add_events(db: Session, job_id: int, token: str, now: datetime,
               events: Sequence[Event | Phase]) -> Job | None:
    """Store progress events if the lease is still held (a validate job's fold into its
    version's report); the job, else None."""
    # A no-op UPDATE under the lease condition: it checks the lease and locks the job in
    # one step, so a job requeued meanwhile never gets a stale attempt's events.
    if rows_changed(db, update(Job).where(_holds_lease(job_id, token, now))
                .values(lease_token=Job.lease_token)) != 1:
        db.rollback()
        return None
    job = db.get(Job, job_id)
    assert job is not None
    if job.kind == "validate":
        for event in events:
            if not isinstance(event, Phase):  # a check sends none
                bank.validation_progress(db, job.version_id or 0, event,
                                         merge=job.shards > 1)
    elif job.kind == "run":
        runs.add_events(db, job, events, now)
    else:
        # the learner's view: no seed, hidden tests without message or output
        db.add_all(JobEvent(job_id=job_id, submission_id=job.submission_id,
                            payload=e.to_json("zh", learner=True), created_at=now)
                   for e in events)
    db.commit()
    return job


def take_file(db: Session, job_id: int, token: str, now: datetime, label: str) -> bool | None:
    """May this shard of a validation judge the file ``label``? Yes when no other shard of
    its round took it first (a shard handed out again takes its own files again), and
    no when the reference was judged and failed (a single check would stop there). None
    when the lease was lost. A one-shard validation judges every file without asking."""
    if rows_changed(db, update(Job).where(_holds_lease(job_id, token, now))
                    .values(lease_token=Job.lease_token)) != 1:  # checks and locks, as above
        db.rollback()
        return None
    job = db.get(Job, job_id)
    assert job is not None
    if job.kind != "validate" or job.shards <= 1:
        db.rollback()
        return True
    version = db.get(ProblemVersion, job.version_id)
    judged = (version.report or {}).get("files", []) if version is not None else []
    if label != "reference" and any(f.get("label") == "reference" and f.get("ok") is False
                                    for f in judged):
        db.rollback()
        return False
    first = db.scalar(select(func.min(Job.id)).where(
        Job.kind == "validate", Job.version_id == job.version_id,
        Job.created_at == job.created_at))
    shard = job.shard
    taken = select(ValidationTake.shard).where(ValidationTake.round_job_id == first,
                                               ValidationTake.label == label)
    holder = db.scalar(taken)
    if holder is None:
        db.add(ValidationTake(round_job_id=first, label=label, shard=shard))
        try:
            db.commit()
            return True
        except IntegrityError:  # another shard took it meanwhile (PostgreSQL)
            db.rollback()
            holder = db.scalar(taken)
    db.rollback()
    return holder == shard


def finish(db: Session, job_id: int, token: str, now: datetime, result: dict[str, Any],
           summary: dict[str, Any], plan: ranking.RankPlan = ranking.DEFAULT_PLAN
           ) -> tuple[str, Job | None]:
    """Write a job's result once (a submission's report, or a validation's; a rank run's
    ranks by ``plan``). Returns ("stored", job), ("duplicate", job) when this lease
    already stored it, or ("rejected", None) when the lease was lost."""
    changed = rows_changed(db, update(Job).where(_holds_lease(job_id, token, now))
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
        bank.shard_finished(db, job, result, now)
    elif job.kind == "run":
        runs.finished(db, job, result, now)
    elif job.kind == "rank":
        ranking.ranked(db, job, result, now, plan)
    else:
        sub = db.get(Submission, job.submission_id)
        version = summary.get("problem_version") or job.problem_version or (
            sub.problem_version if sub else "")
        change = submissions.verdict_change(sub, summary.get("verdict"), version, now)
        db.execute(update(Submission).where(Submission.id == job.submission_id)
                   .values(status="done", report=result, judged_at=now, **summary, **change))
        _follow_up_on_gpu(db, job, result, now)
        ranking.after_judging(db, job, result, now, plan)
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
        Job.submission_id == job.submission_id, Job.kind == "judge", Job.status == "queued",
        Job.needs_gpu))
    if not waiting:
        db.add(Job(kind="judge", submission_id=job.submission_id,
                   problem_version=job.problem_version, status="queued",
                   priority=REJUDGE_PRIORITY, needs_gpu=True, prefers_gpu=True, attempts=0,
                   created_at=now))


def release(db: Session, job_id: int, token: str, now: datetime) -> Job | None:
    """A worker gives a job back unjudged (it is shutting down, or a rank job yields to
    a waiting one): queued again at once. A rank job's given-back attempt does not count
    towards MAX_ATTEMPTS (yielding is not failing)."""
    given_back = case((Job.kind == "rank", Job.attempts - 1), else_=Job.attempts)
    changed = rows_changed(db, update(Job).where(_holds_lease(job_id, token, now))
                       .values(status="queued", lease_token=None, lease_expires_at=None,
                               worker_id=None, attempts=given_back))
    if changed != 1:
        db.rollback()
        return None
    job = db.get(Job, job_id)
    assert job is not None
    db.execute(delete(JobEvent).where(JobEvent.job_id == job_id))
    if job.kind == "validate":
        _version_back(db, job, now, give_up=False)
    elif job.kind == "run":
        runs.back(db, job, now, give_up=False)
    else:
        db.execute(update(Submission).where(Submission.id == job.submission_id,
                                            Submission.status != "done")
                   .values(status="queued"))
    db.commit()
    return job
