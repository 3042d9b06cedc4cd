"""API: "Run examples": judge code on a problem's public cases only (no speed check, no
record: not a submission), read the run, follow its progress as server-sent events."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse
from sqlalchemy.orm import Session

from judge.i18n import T
from web.data import queue, runs
from web.deps import ApiUser, CatalogDep, HubDep, Now, SessionDep, SettingsDep
from web.errors import NotFound
from web.language import request_lang
from web.models import Run, User
from web.routes.api_submissions import Accepted, NewSubmission
from web.run_view import run_snapshot, run_view
from web.running import start_run
from web.streams import Stream

router = APIRouter(prefix="/api/runs", tags=["runs"])

NOT_FOUND = T("没有这次运行（或者它不是你的）", "no such run (or it is not yours)")


def readable(db: Session, rid: int, user: User) -> Run:
    """The run if this user may read it: its owner or an admin."""
    run = runs.get_run(db, rid)
    if run is None or not (run.user_id == user.id or user.is_admin):
        raise NotFound(NOT_FOUND)
    return run


@router.post("", status_code=202, response_model=Accepted)
def create(body: NewSubmission, user: ApiUser, db: SessionDep, settings: SettingsDep,
           catalog: CatalogDep, hub: HubDep, now: Now) -> Accepted:
    """Run code on the problem's public cases (bearer token, or the page's session cookie
    with the CSRF header); one in flight per user and a per-minute cap of its own."""
    run = start_run(db, settings, catalog, hub, user, str(body.problem), body.code, now)
    return Accepted(id=run.id, status=run.status, url=f"/api/runs/{run.id}")


@router.get("/{rid}")
def read(rid: int, request: Request, user: ApiUser, db: SessionDep) -> dict[str, Any]:
    """A run (owner or admin): status, verdict and its public tests."""
    run = readable(db, rid, user)
    position, events = None, None
    if run.status != "done":
        job = runs.run_job(db, rid)
        if run.status == "queued" and job is not None:
            position = queue.queue_position(db, job)
        events = runs.events_after(db, rid, 0)
    return run_view(run, request_lang(request), position=position, events=events)


@router.get("/{rid}/events", response_class=StreamingResponse,
            responses={200: {"content": {"text/event-stream": {}},
                             "description": "one JSON object per data: line"}})
def events(rid: int, request: Request, user: ApiUser, db: SessionDep) -> StreamingResponse:
    """Progress as server-sent events, as a submission's: queued, start, running, test,
    done (no throughput: a run has no speed check)."""
    readable(db, rid, user)
    state = request.app.state
    stream = Stream(state.sessionmaker, state.hub, rid, request_lang(request),
                    look=run_snapshot, topic="run")
    return StreamingResponse(stream.run(request), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
