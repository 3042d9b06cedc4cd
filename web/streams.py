"""The server-sent event streams: one submission's progress for its reader (see web/README.md
for the events; it ends after ``done``), its ranking job's (``ranking`` snapshots until
``ranked``), and a version's validation for admins (snapshots, until it is valid or
invalid). Each waits on the :class:`web.hub.Hub` between looks at the database."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import StreamingResponse

from judge.events import (
    Done,
    EventKind,
    PlannedTest,
    Queued,
    Started,
    TestJudged,
    ThroughputMeasured,
    kind_of,
)
from judge.report import Report
from judge.verdict import Verdict
from web.data import queue, ranking, submissions
from web.hub import Hub
from web.models import Submission
from web.submission_view import event_view, ranking_progress

POLL_S = 1.0  # the longest a stream waits before looking at the database again
HEARTBEAT_S = 15.0
# While the database does not answer (it restarts), a stream keeps its reader and looks
# again every POLL_S; after this long it ends, and the reader's EventSource reconnects.
DB_DOWN_MAX_S = 60.0

log = logging.getLogger("web.streams")


def event_response(body: AsyncIterator[str]) -> StreamingResponse:
    """A server-sent event stream that proxies pass through unbuffered."""
    return StreamingResponse(body, media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


def sse(data: dict[str, Any], event_id: int | None = None) -> str:
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}data: {json.dumps(data, ensure_ascii=False)}\n\n"


async def looked_up(read: Callable[..., Any], *args: Any) -> Any:
    """``read(*args)`` in the thread pool, waiting out a database that does not answer
    (up to DB_DOWN_MAX_S, then the error propagates and the stream ends)."""
    since = time.monotonic()
    while True:
        try:
            return await run_in_threadpool(read, *args)
        except SQLAlchemyError as e:
            if time.monotonic() - since > DB_DOWN_MAX_S:
                raise
            log.warning("stream: the database does not answer (%s); trying again",
                        type(e).__name__)
            await asyncio.sleep(POLL_S)


@dataclass
class Snapshot:
    status: str
    position: int | None
    events: list[tuple[int, dict[str, Any]]]
    report: dict[str, Any] | None
    verdict: str | None
    ratio: float | None


def snapshot(maker: sessionmaker[Session], sid: int, after_id: int, *,
             get: Callable[[Session, int], Any] = submissions.get_submission,
             job_of: Callable[[Session, int], Any] = queue.current_job,
             events_of: Callable[[Session, int, int], list[Any]] = submissions.events_after,
             ) -> Snapshot | None:
    """A submission's state for its stream (or, with a run's ``get``, ``job_of`` and
    ``events_of`` from web.data.runs, a "Run examples" run's)."""
    with maker() as db:
        sub = get(db, sid)
        if sub is None:
            return None
        position = None
        if sub.status == "queued":
            job = job_of(db, sid)
            position = queue.queue_position(db, job) if job else None
        events = [(e.id, e.payload) for e in events_of(db, sid, after_id)]
        return Snapshot(sub.status, position, events, sub.report, sub.verdict,
                        getattr(sub, "ratio", None))


@dataclass
class Stream:
    """Follows one submission for one reader until its result is stored (or, with
    ``look=web.run_view.run_snapshot`` and ``topic="run"``, one "Run examples" run)."""

    maker: sessionmaker[Session]
    hub: Hub
    sid: int
    lang: str
    last_id: int = 0
    sent_tests: dict[int, tuple[Any, Any]] = field(default_factory=dict)  # index: shown
    sent_throughput: int = 0
    started: bool = False
    last_queued: tuple[str, int | None] | None = None
    # None: this module's snapshot, looked up when called (a test may replace it)
    look: Callable[[sessionmaker[Session], int, int], Snapshot | None] | None = None
    topic: str = "submission"  # what the hub is woken with: (topic, id)

    async def run(self, request: Request) -> AsyncIterator[str]:
        beat = time.monotonic()
        while True:
            snap = await looked_up(self.look or snapshot, self.maker, self.sid, self.last_id)
            if snap is None:
                return
            if snap.status == "queued" and self.last_queued != ("queued", snap.position):
                self.last_queued = ("queued", snap.position)
                yield sse(Queued(snap.position).to_json())
            elif snap.status != "queued":
                self.last_queued = None
            for event_id, payload in snap.events:
                self.last_id = event_id
                self._track(payload)
                yield sse(event_view(payload, self.lang), event_id)
            if snap.status == "done":
                for chunk in self._finish(snap):
                    yield chunk
                return
            if await request.is_disconnected():
                return
            if time.monotonic() - beat > HEARTBEAT_S:
                beat = time.monotonic()
                yield ": keep-alive\n\n"
            await self.hub.wait((self.topic, self.sid), POLL_S)

    def _track(self, payload: dict[str, Any]) -> None:
        kind = kind_of(payload)
        if kind is EventKind.START:
            self.started, self.sent_tests, self.sent_throughput = True, {}, 0
        elif kind is EventKind.TEST:
            self.sent_tests[payload["index"]] = _shown(payload.get("result"))
        elif kind is EventKind.THROUGHPUT:
            self.sent_throughput += 1

    def _finish(self, snap: Snapshot) -> list[str]:
        """Whatever the reader has not seen of the stored report, then ``done``: a reader
        who connects late, or whose last events were cleared with the result, gets the
        same sequence as one who watched it live."""
        report = Report.from_json(snap.report) if snap.report else None
        tests = report.tests if report else []
        events: list[Any] = []
        if not self.started:
            events.append(Started(len(tests), tuple(PlannedTest(t.name, t.visibility)
                                                    for t in tests)))
        # A test not shown yet, or shown with another outcome (an earlier attempt's, when
        # the job was handed out again and finished before this reader looked).
        events += [TestJudged(i, t) for i, t in enumerate(tests)
                   if self.sent_tests.get(i) != _shown(t.to_json("zh", learner=True))]
        if report:
            events += [ThroughputMeasured(tp) for tp in report.throughput[self.sent_throughput:]]
        events.append(Done.of(report) if report else
                      Done(Verdict(snap.verdict or Verdict.INTERNAL_ERROR), 0, 0, snap.ratio))
        return [sse(e.to_json(self.lang, learner=True)) for e in events]


def _shown(result: Any) -> tuple[Any, Any]:
    """What a reader saw of a test's result: its verdict and its messages."""
    return (result.get("verdict"), result.get("messages")) if isinstance(result, dict) \
        else (None, None)


def ranking_now(db: Session, sub: Submission, now: datetime) -> dict[str, Any] | None:
    """A pending ranking's progress (web.submission_view.ranking_progress); None when the
    submission's ranking is not pending. A queued run's ``not_before`` only while it is
    still ahead of ``now`` (then its queue position tells more)."""
    job = ranking.current_rank_job(db, sub.id) if sub.rank_status == "pending" else None
    if job is None:
        return None
    position = queue.queue_position(db, job) if job.status == "queued" else None
    done, wanted = ranking.runs_done(sub)
    later = job.not_before if job.status == "queued" and job.not_before and \
        job.not_before > now else None
    return ranking_progress(job.status, position, ranking.rank_events(db, job.id),
                            run=done + 1, runs=wanted,
                            not_before=later.isoformat() + "Z" if later else None)


def ranking_snapshot(maker: sessionmaker[Session], sid: int,
                     clock: Callable[[], datetime]) -> dict[str, Any] | None:
    with maker() as db:
        sub = submissions.get_submission(db, sid)
        if sub is None:
            return None
        progress = ranking_now(db, sub, clock())
        if progress is not None:
            return {"event": "ranking", **progress}
        return {"event": "ranked", "ranking": sub.rank_status, "rank_ratio": sub.rank_ratio}


async def snapshots(read: Callable[[], dict[str, Any] | None], hub: Hub, key: Any,
                    final: Callable[[dict[str, Any]], bool],
                    request: Request) -> AsyncIterator[str]:
    """Server-sent snapshots from ``read``, one per change, until one is ``final`` (or the
    thing is gone, or the reader left); waits on the hub's ``key`` between looks."""
    last: dict[str, Any] | None = None
    beat = time.monotonic()
    while True:
        snap = await looked_up(read)
        if snap is None:
            return
        if snap != last:
            last = snap
            yield sse(snap)
        if final(snap) or await request.is_disconnected():
            return
        if time.monotonic() - beat > HEARTBEAT_S:
            beat = time.monotonic()
            yield ": keep-alive\n\n"
        await hub.wait(key, POLL_S)


def follow_ranking(maker: sessionmaker[Session], hub: Hub, sid: int, request: Request,
                   clock: Callable[[], datetime]) -> AsyncIterator[str]:
    """Server-sent snapshots of a submission's ranking job, one per change, then
    ``ranked`` (at once when its ranking is not pending)."""
    return snapshots(lambda: ranking_snapshot(maker, sid, clock), hub, ("submission", sid),
                     lambda snap: snap["event"] == "ranked", request)


def stream_factory(request: Request) -> Callable[[int, str], Stream]:
    state = request.app.state
    return lambda sid, lang: Stream(state.sessionmaker, state.hub, sid, lang)


def version_snapshot(maker: sessionmaker[Session], vid: int) -> dict[str, Any] | None:
    """A version's validation as the admin pages show it."""
    from web.models import ProblemVersion

    with maker() as db:
        version = db.get(ProblemVersion, vid)
        if version is None:
            return None
        report = version.report or {}
        return {"id": version.id, "status": version.status, "ok": report.get("ok"),
                "errors": report.get("errors", []), "files": report.get("files", []),
                "skipped": report.get("skipped", [])}


def follow_version(maker: sessionmaker[Session], hub: Hub, vid: int,
                   request: Request) -> AsyncIterator[str]:
    """Server-sent snapshots of a version's validation, one per change, until it is
    ``valid`` or ``invalid``."""
    return snapshots(lambda: version_snapshot(maker, vid), hub, ("version", vid),
                     lambda snap: snap["status"] in ("valid", "invalid"), request)
