"""API: submit code, read a submission, follow its progress as server-sent events."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field
from sqlalchemy.orm import Session

from judge.i18n import T
from web import submitting
from web.data import queue, submissions
from web.deps import (
    ApiUser,
    CacheDep,
    CatalogDep,
    HubDep,
    Now,
    SessionDep,
    SettingsDep,
    TokenUser,
)
from web.errors import NotFound
from web.language import request_lang
from web.models import Submission, User
from web.page_cache import QUEUE
from web.response_cache import keep
from web.streams import event_response, follow_ranking, ranking_now, stream_factory
from web.submission_view import submission_view

router = APIRouter(prefix="/api/submissions", tags=["submissions"])

NOT_FOUND = T("没有这个提交（或者它不是你的）", "no such submission (or it is not yours)")


class NewSubmission(BaseModel):
    problem: str | int = Field(description="slug or number")
    code: str
    share: bool = Field(False, description="once accepted, show this code to others who "
                                           "solved the problem (off unless asked)")


class Accepted(BaseModel):
    id: int
    status: str
    url: str


def readable(db: Session, sid: int, user: User) -> Submission:
    """The submission if this user may read it: its owner or an admin."""
    sub = submissions.get_submission(db, sid)
    if sub is None or not (sub.user_id == user.id or user.is_admin):
        raise NotFound(NOT_FOUND)
    return sub


def view(db: Session, sub: Submission, user: User, lang: str,
         now: datetime) -> dict[str, Any]:
    position, events = None, None
    if sub.status != "done":
        job = queue.current_job(db, sub.id)
        if sub.status == "queued" and job is not None:
            position = queue.queue_position(db, job)
        events = submissions.events_after(db, sub.id, 0)
    return submission_view(sub, lang, full=user.is_admin, position=position, events=events,
                           ranking=ranking_now(db, sub, now))


@router.post("", status_code=202, response_model=Accepted)
def create(body: NewSubmission, user: TokenUser, db: SessionDep, settings: SettingsDep,
           catalog: CatalogDep, hub: HubDep, now: Now) -> Accepted:
    """Queue code for judging (bearer token; one in flight per user, a per-minute cap)."""
    sub = submitting.submit(db, settings, catalog, hub, user, str(body.problem), body.code, now,
                            share=body.share)
    return Accepted(id=sub.id, status=sub.status, url=f"/submissions/{sub.id}")


@router.get("/{sid}")
def read(sid: int, request: Request, user: ApiUser, db: SessionDep,
         cache: CacheDep, now: Now) -> dict[str, Any]:
    """A submission (owner or admin): status, verdict and tests; hidden tests redacted."""
    lang = request_lang(request)

    def build() -> tuple[int, dict[str, Any]]:
        sub = readable(db, sid, user)
        return sub.user_id, view(db, sub, user, lang, now)

    # A judged submission changes only when it is written again (a rejudge, its ranking).
    # One in progress also changes with its job's progress events (its own scope) and with
    # the queue (its position, its job's state): it is kept until the queue moves.
    # A ranking run waiting out its spacing becomes due with no write at all: not kept.
    owner, data = cache.get(("submission", sid, lang, user.is_admin), build,
                            keep=lambda built: not waiting(built[1]),
                            scopes=lambda built: [("submission", sid)] if settled(built)
                            else [("submission", sid), QUEUE])
    if owner != user.id and not user.is_admin:
        raise NotFound(NOT_FOUND)
    if not waiting(data):
        keep(request)
    return data


def waiting(data: dict[str, Any]) -> bool:
    """A view whose ranking's next run waits out its spacing (it changes with the clock)."""
    return bool((data["ranking_progress"] or {}).get("not_before"))


def settled(built: tuple[int, dict[str, Any]]) -> bool:
    """A view that changes only when its submission is written again."""
    return built[1]["status"] == "done" and built[1]["ranking"] != "pending"



@router.get("/{sid}/events", response_class=StreamingResponse,
            responses={200: {"content": {"text/event-stream": {}},
                             "description": "one JSON object per data: line"}})
def events(sid: int, request: Request, user: ApiUser, db: SessionDep) -> StreamingResponse:
    """Progress as server-sent events: queued, start, running, test, throughput, done."""
    readable(db, sid, user)
    stream = stream_factory(request)(sid, request_lang(request))
    return event_response(stream.run(request))


@router.get("/{sid}/ranking/events", response_class=StreamingResponse,
            responses={200: {"content": {"text/event-stream": {}},
                             "description": "one JSON object per data: line"}})
def ranking_events(sid: int, request: Request, user: ApiUser,
                   db: SessionDep) -> StreamingResponse:
    """The leaderboard timing's progress as server-sent events: ranking, then ranked."""
    readable(db, sid, user)
    state = request.app.state
    return event_response(follow_ranking(state.sessionmaker, state.hub, sid, request,
                                         state.clock))
