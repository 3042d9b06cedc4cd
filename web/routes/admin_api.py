"""Admin API (``/api/admin``, bearer token or session of an admin; 401 without, 403 for
others): upload a package, follow its validation, publish, unpublish, rejudge, read the
audit log. The admin pages use the version stream; scripts can use all of it."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, File, Form, Request, UploadFile
from fastapi.responses import StreamingResponse
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool

from judge.i18n import T
from judge.upload import LIMITS
from web import bank_admin
from web.data import audit_log, bank
from web.deps import CatalogDep, HubDep, Now, SessionDep, admin_api
from web.errors import NotFound, TooLarge
from web.models import ProblemRecord, ProblemVersion, User
from web.streams import event_response, follow_version

AdminUser = Annotated[User, Depends(admin_api)]
router = APIRouter(prefix="/api/admin", tags=["admin"], dependencies=[Depends(admin_api)])


def version_or_404(db, vid: int) -> ProblemVersion:
    version = bank.get_version(db, vid)
    if version is None:
        raise NotFound(T("没有这个题目版本", "no such problem version"))
    return version


def problem_or_404(db, slug: str) -> ProblemRecord:
    record = bank.problem_record(db, slug)
    if record is None:
        raise NotFound(T(f"题库里没有 {slug}", f"no problem {slug} in the bank"))
    return record


async def read_upload(file: UploadFile) -> bytes:
    data = await file.read(LIMITS.archive_bytes + 1)
    if len(data) > LIMITS.archive_bytes:
        raise TooLarge(T(f"压缩包太大：最多 {LIMITS.archive_bytes // 2**20} MiB",
                                 f"the archive is too large: at most "
                                 f"{LIMITS.archive_bytes // 2**20} MiB"))
    return data


def version_json(version: ProblemVersion) -> dict[str, Any]:
    return {"id": version.id, "problem": version.problem.slug,
            "version": version.content_hash, "status": version.status,
            "origin": version.origin, "note": version.note,
            "published": version.problem.published_version_id == version.id,
            "report": version.report,
            "created_at": version.created_at.isoformat() + "Z",
            "url": f"/admin/versions/{version.id}"}


@router.get("/problems")
def problems(db: SessionDep) -> list[dict[str, Any]]:
    """Every problem of the bank: its published and newest versions."""
    latest = bank.latest_versions(db)
    out = []
    for record in bank.all_problems(db):
        shown = bank.published_version(db, record)
        newest = latest.get(record.id)
        out.append({"slug": record.slug, "number": record.number,
                    "published": shown.content_hash if shown else None,
                    "newest": version_json(newest) if newest else None})
    return out


@router.post("/problems", status_code=201)
async def upload(user: AdminUser, request: Request, db: SessionDep, hub: HubDep, now: Now,
                 file: Annotated[UploadFile, File(description="the package as a zip")],
                 note: Annotated[str, Form(max_length=200, description="a change note")] = ""
                 ) -> dict[str, Any]:
    """Upload a package (zip): stored as a new version and queued for validation."""
    data = await read_upload(file)
    version, _ = await run_in_threadpool(  # unpacking and hashing: off the event loop
        bank_admin.add_version, db, request.app.state.store, hub, user, now, origin="upload",
        note=note.strip() or file.filename or "upload.zip", zip_data=data)
    return await run_in_threadpool(version_json, version)


@router.get("/versions/{vid}")
def read_version(vid: int, db: SessionDep) -> dict[str, Any]:
    """A version: status (uploaded, validating, valid, invalid) and validation report."""
    return version_json(version_or_404(db, vid))


@router.get("/versions/{vid}/events", response_class=StreamingResponse,
            responses={200: {"content": {"text/event-stream": {}}}})
def version_events(vid: int, request: Request, db: SessionDep) -> StreamingResponse:
    """A version's validation as server-sent snapshots ({status, files, errors}) until it
    is valid or invalid."""
    version_or_404(db, vid)
    state = request.app.state
    return event_response(follow_version(state.sessionmaker, state.hub, vid, request))


@router.delete("/versions/{vid}")
def delete_version(vid: int, user: AdminUser, request: Request, db: SessionDep,
                   now: Now) -> dict[str, Any]:
    """Delete a version never published nor judged at (409 saying why otherwise)."""
    version = version_or_404(db, vid)
    slug = bank_admin.delete_version(db, request.app.state.store, user, version, now)
    return {"deleted": vid, "problem": slug}


@router.post("/versions/{vid}/publish")
def publish(vid: int, user: AdminUser, db: SessionDep, catalog: CatalogDep,
            now: Now) -> dict[str, Any]:
    """Publish a valid version: learners see it from now on (409 if not valid)."""
    version = version_or_404(db, vid)
    bank_admin.publish(db, catalog, user, version, now)
    return version_json(version)


@router.post("/problems/{slug}/unpublish")
def unpublish(slug: str, user: AdminUser, db: SessionDep, catalog: CatalogDep,
              now: Now) -> dict[str, Any]:
    """Hide a problem from learners (its versions and submissions are kept)."""
    bank_admin.unpublish(db, catalog, user, problem_or_404(db, slug), now)
    return {"slug": slug, "published": None}


class Rejudge(BaseModel):
    submissions: list[int] | None = None  # None: every judged submission of the problem


@router.post("/problems/{slug}/rejudge")
def rejudge(slug: str, body: Rejudge, user: AdminUser, request: Request, db: SessionDep,
            hub: HubDep, now: Now) -> dict[str, Any]:
    """Judge submissions again at the published version, below live submissions."""
    chosen = bank_admin.rejudge(db, request.app.state.store, hub, user, problem_or_404(db, slug),
                           body.submissions, now)
    return {"queued": chosen}


@router.get("/audit")
def audit(db: SessionDep) -> list[dict[str, Any]]:
    """The newest admin actions first."""
    return [{"id": e.id, "actor": e.actor, "action": e.action, "target": e.target,
             "detail": e.detail, "at": e.created_at.isoformat() + "Z"}
            for e in audit_log.newest(db)]

