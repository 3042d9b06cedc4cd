"""The worker API: how workers (embedded or on other machines) take jobs and return
results. Every call carries the worker token. A claimed job comes with a lease token;
renew, events, result and release must present it, and are refused (409) once the lease
is lost, so a worker that stalled can never overwrite the result of the one that took
the job over."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, Field
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from judge.i18n import T
from judge.report import Report
from web import timing
from web.data import queue, ranking, workers
from web.deps import HubDep, Now, SessionDep, SettingsDep, WorkerAuth
from web.errors import Conflict, Invalid, NotFound
from web.models import Job, Worker
from web.submission_view import ingest_event, summary
from web.validation import ingest_validation_event, validation_result

router = APIRouter(prefix="/worker", tags=["worker"], dependencies=[WorkerAuth])

UNKNOWN = object()  # a claim from a worker id this database does not know
LEASE_LOST = T("租约已失效：这个任务已交还队列或已有结果", "lease lost: the job went back to "
               "the queue or already has a result")


class Register(BaseModel):
    name: str = Field(max_length=128)
    gpu: bool = False
    capabilities: dict[str, Any] = {}


class ClaimRequest(BaseModel):
    worker_id: int
    gpu: bool = False
    wait_s: float = Field(0.0, ge=0, le=120)


class Lease(BaseModel):
    lease_token: str


class Events(Lease):
    events: list[dict[str, Any]] = Field(max_length=1000)


class Result(Lease):
    report: dict[str, Any]


class Take(Lease):
    label: str = Field(min_length=1, max_length=300)


@router.post("/register")
def register(body: Register, db: SessionDep, settings: SettingsDep, now: Now) -> dict[str, Any]:
    """Announce a worker and what it can judge; returns its id and the lease length."""
    worker = workers.register_worker(db, body.name, body.gpu, body.capabilities, now)
    return {"worker_id": worker.id, "lease_seconds": settings.lease_seconds}


@router.post("/claim", responses={204: {"description": "no job within wait_s"}})
async def claim(body: ClaimRequest, request: Request, hub: HubDep,
                settings: SettingsDep) -> Any:
    """Take the next job (waiting up to wait_s for one); 204 when there is none."""
    state = request.app.state
    deadline = time.monotonic() + min(body.wait_s, settings.claim_wait_seconds)

    def attempt():
        with state.sessionmaker() as db:
            now = state.clock()
            if db.get(Worker, body.worker_id) is None:
                return UNKNOWN
            workers.touch_worker(db, body.worker_id, now)
            for sid in queue.requeue_expired(db, now):
                hub.notify(("submission", sid))
            job = queue.claim(db, body.worker_id, body.gpu, now, settings.lease_seconds)
            if job is None:
                return None
            common = {"job_id": job.id, "kind": job.kind, "lease_token": job.lease_token,
                      "lease_seconds": settings.lease_seconds, "attempt": job.attempts}
            if job.kind == "validate":
                version = job.version
                assert version is not None
                return {**common, "version_id": version.id, "submission_id": None,
                        "problem": version.problem.slug,
                        "problem_version": version.content_hash, "code": "",
                        "shard": job.shard, "shards": job.shards}
            if job.kind == "run":
                return _run_claim(job, common)
            sub = job.submission
            assert sub is not None
            return {**common, "submission_id": sub.id, "problem": sub.problem,
                    "problem_version": job.problem_version or sub.problem_version,
                    "code": sub.code}

    while True:
        found = await run_in_threadpool(attempt)
        if found is UNKNOWN:
            raise NotFound(T("不认识这个评测机编号，请重新注册",
                                     "unknown worker id: register again"))
        if found is not None:
            hub.notify(_key(found["kind"], found["submission_id"], found.get("version_id"),
                            found.get("run_id")))
            return found
        remaining = deadline - time.monotonic()
        if remaining <= 0 or await request.is_disconnected():
            return Response(status_code=204)
        await hub.wait("queue", min(remaining, 1.0))


@router.post("/jobs/{job_id}/renew")
def renew(job_id: int, body: Lease, db: SessionDep, settings: SettingsDep,
          now: Now) -> dict[str, Any]:
    """Extend the lease on a job being judged; ``yield`` true: a rank job should be given
    back (release), another job is waiting."""
    if not queue.renew(db, job_id, body.lease_token, now, settings.lease_seconds):
        raise Conflict(LEASE_LOST)
    return {"lease_seconds": settings.lease_seconds, "yield": _yields(db, job_id, now)}


def _yields(db: Session, job_id: int, now: datetime) -> bool:
    job = db.get(Job, job_id)
    return job is not None and queue.should_yield(db, job, now)


def _key(kind: str, submission_id: int | None, version_id: int | None,
         run_id: int | None = None) -> tuple[str, int]:
    """What a job's readers wait on (web.hub.Hub)."""
    if kind == "validate":
        return ("version", version_id or 0)
    if kind == "run":
        return ("run", run_id or 0)
    return ("submission", submission_id or 0)


def _job_key(job: Job) -> tuple[str, int]:
    return _key(job.kind, job.submission_id, job.version_id, job.run_id)


def _run_claim(job: Job, common: dict[str, Any]) -> dict[str, Any]:
    """A "Run examples" job as a worker gets it: the worker grades the public cases only
    with no speed check (judge.worker), whatever ``kind`` it knows."""
    run = job.run
    assert run is not None
    return {**common, "submission_id": None, "run_id": run.id, "problem": run.problem,
            "problem_version": run.problem_version, "code": run.code}


@router.post("/jobs/{job_id}/events")
def post_events(job_id: int, body: Events, db: SessionDep, hub: HubDep,
                now: Now) -> dict[str, Any]:
    """Progress events from the grader (or the package check), in order."""
    job = db.get(Job, job_id)
    ingest = ingest_validation_event if job is not None and job.kind == "validate" \
        else ingest_event
    try:
        events = [e for e in (ingest(raw) for raw in body.events) if e is not None]
    except (KeyError, TypeError, ValueError) as e:
        raise Invalid(T(f"进度事件格式不对：{e}", f"malformed progress event: {e}")
                          ) from None
    held = queue.add_events(db, job_id, body.lease_token, now, events)
    if held is None:
        raise Conflict(LEASE_LOST)
    hub.notify(_job_key(held))
    return {"stored": len(events), "yield": queue.should_yield(db, held, now)}


@router.post("/jobs/{job_id}/take")
def take(job_id: int, body: Take, db: SessionDep, now: Now) -> dict[str, Any]:
    """May this validate job judge the file ``label``? ``take`` false: another shard of its
    validation took it first. The shards ask for each file just before judging it, the
    costliest first (judge/shards.py), so that they end together."""
    granted = queue.take_file(db, job_id, body.lease_token, now, body.label)
    if granted is None:
        raise Conflict(LEASE_LOST)
    return {"take": granted}


@router.post("/jobs/{job_id}/result")
def post_result(job_id: int, body: Result, db: SessionDep, hub: HubDep, request: Request,
                now: Now, settings: SettingsDep) -> dict[str, Any]:
    """The result, stored once per job and lease: a submission's full report
    (judge.report.Report.to_json; a rank job's fills in the ranking only), or a
    validation's ``{"ok", "errors", "files", ...}``."""
    job = db.get(Job, job_id)
    try:
        if job is not None and job.kind == "validate":
            result, columns = validation_result(body.report), {}
        else:
            report = Report.from_json(body.report)
            result = timing.with_extras(report.to_json("zh"), body.report)
            columns = {} if job is not None and job.kind == "rank" else summary(report)
    except (KeyError, TypeError, ValueError) as e:
        raise Invalid(T(f"评测报告格式不对：{e}", f"malformed report: {e}")) from None
    plan = ranking.RankPlan(settings.rank_runs, settings.rank_spacing_seconds)
    status, held = queue.finish(db, job_id, body.lease_token, now, result, columns, plan)
    if held is None:
        raise Conflict(LEASE_LOST)
    hub.notify(_job_key(held))
    hub.notify("queue")  # a follow-up (GPU judging, ranking) may have been queued
    return {"status": status}


@router.post("/jobs/{job_id}/release")
def release(job_id: int, body: Lease, db: SessionDep, hub: HubDep, now: Now) -> dict[str, Any]:
    """Give a job back unjudged (the worker is stopping); it is queued again at once."""
    held = queue.release(db, job_id, body.lease_token, now)
    if held is None:
        raise Conflict(LEASE_LOST)
    hub.notify("queue")
    hub.notify(_job_key(held))
    return {"status": "released"}


@router.get("/packages/{content_hash}.zip", response_class=Response,
            responses={200: {"content": {"application/zip": {}}}})
def package(content_hash: str, request: Request) -> Response:
    """A stored problem version as a zip, for a worker that lacks it (404 if unknown)."""
    store = request.app.state.store
    if not store.has(content_hash):
        raise NotFound(T("没有这个题目版本", "no such problem version"))
    return Response(store.zip_bytes(content_hash), media_type="application/zip")
