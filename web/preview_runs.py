"""The preview's "Run examples" (web.preview): the editor's code judged on the package's
public cases only, with no speed check, by the launcher ``preview`` was started with (the
sandbox unless ``--no-sandbox``), one run at a time, in a thread of the server.

Its routes have the site's shape (``POST /api/runs`` with the page's ``X-CSRF-Token``,
``GET /api/runs/{id}``, ``GET /api/runs/{id}/events``: the grader's progress events as
server-sent events, learners' view), so the problem page's static/run.js and
static/submission.js show it unchanged. Runs live in memory; the last few are kept.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel

from judge.events import Done, Event, TestJudged
from judge.i18n import T
from judge.package import Problem
from judge.report import EMPTY, Report
from judge.verdict import Verdict
from web.errors import Conflict, Forbidden, NotFound, RateLimited
from web.language import request_lang
from web.security import csrf_ok
from web.streams import event_response, sse
from web.submitting import check_code

log = logging.getLogger("web.preview")

KEPT = 20
POLL_S = 0.1  # how often a stream looks for new events (one local reader)
MAX_CODE_BYTES = 64 * 1024  # the site's default JUDGE_MAX_CODE_BYTES


class RunBody(BaseModel):
    problem: str | int = ""  # what static/run.js sends; the preview has one package
    code: str


@dataclass
class PreviewRun:
    id: int
    slug: str
    events: list[Event] = field(default_factory=list)
    finished: threading.Event = field(default_factory=threading.Event)
    report: Report | None = None


class Runs:
    """The runs of one preview server, judged one at a time."""

    def __init__(self, launcher: Any, *, cuda: bool = False) -> None:
        self.launcher, self.cuda = launcher, cuda
        self._lock = threading.Lock()
        self._runs: dict[int, PreviewRun] = {}
        self._busy = False

    def start(self, problem: Problem, code: str) -> PreviewRun:
        with self._lock:
            if self._busy:
                raise RateLimited(T("上一次运行还没有结束，等它出结果再运行",
                                    "the last run has not finished; wait for its result"))
            self._busy = True
            run = PreviewRun(max(self._runs, default=0) + 1, problem.slug)
            self._runs[run.id] = run
            for old in sorted(self._runs)[:-KEPT]:
                del self._runs[old]
        threading.Thread(target=self._judge, args=(run, problem, code), daemon=True,
                         name=f"preview-run-{run.id}").start()
        return run

    def get(self, rid: int) -> PreviewRun | None:
        return self._runs.get(rid)

    def _judge(self, run: PreviewRun, problem: Problem, code: str) -> None:
        from judge.grader import Options, grade

        options = Options(public_only=True, throughput=False, cuda=self.cuda)
        try:
            report = grade(problem, code, self.launcher, options, on_progress=lambda ev: (
                None if isinstance(ev, Done) else run.events.append(ev)))
        except Exception as e:  # grade() does not raise for the code; if it does, say so
            log.exception("a preview run of %s failed", problem.slug)
            report = Report(Verdict.INTERNAL_ERROR, problem.slug, 0, self.launcher.isolation,
                            message=T(f"评测出错：{type(e).__name__}: {e}",
                                      f"the judging failed: {type(e).__name__}: {e}"))
        run.report = report
        with self._lock:
            self._busy = False
        run.events.append(author_done(report))
        run.finished.set()


def author_done(report: Report) -> Done:
    """The run's last event. The explanation a report keeps for admins (the reference
    failed, and why) is for this page's reader, the package's author: it follows the
    message."""
    done = Done.of(report)
    if report.detail == EMPTY:
        return done
    message = report.detail if done.message == EMPTY else done.message + "\n" + report.detail
    return Done(done.verdict, done.passed, done.total, done.ratio, message)


router = APIRouter(prefix="/api/runs", include_in_schema=False)

NO_SUCH_RUN = T("没有这次运行（预览重启后以前的运行就没有了）",
                "no such run (runs are forgotten when the preview restarts)")


def _run(request: Request, rid: int) -> PreviewRun:
    run = request.app.state.runs.get(rid)
    if run is None:
        raise NotFound(NO_SUCH_RUN)
    return run


@router.post("", status_code=202)
def create(body: RunBody, request: Request) -> dict[str, Any]:
    """Judge the code on the public cases of the package as it is on disk now."""
    if not csrf_ok(request.session, request.headers.get("x-csrf-token")):
        raise Forbidden(T("缺少 CSRF 令牌：请刷新页面再试", "missing or wrong CSRF token: "
                          "reload the page and try again"))
    check_code(body.code, MAX_CODE_BYTES)
    shown = request.app.state.package.current()
    if shown.view is None:
        raise Conflict(T(f"题目包无法加载：{shown.error}",
                         f"the package does not load: {shown.error}"))
    run = request.app.state.runs.start(shown.view.problem, body.code)
    return {"id": run.id, "status": "queued", "url": f"/api/runs/{run.id}"}


@router.get("/{rid}")
def read(rid: int, request: Request) -> dict[str, Any]:
    """The run: running, with the tests judged so far, or done, with its report."""
    run, lang = _run(request, rid), request_lang(request)
    data: dict[str, Any] = {"id": run.id, "kind": "run", "problem": run.slug,
                            "status": "running", "verdict": None}
    if run.finished.is_set() and run.report is not None:
        shown = run.report.to_json(lang, learner=True)
        message = author_done(run.report).message(lang)
        data.update({k: shown[k] for k in ("verdict", "tests", "passed", "total")},
                    status="done", message=message)
    else:
        data["tests"] = [ev.result.to_json(lang, learner=True) for ev in list(run.events)
                         if isinstance(ev, TestJudged)]
    return data


@router.get("/{rid}/events", response_class=StreamingResponse)
def events(rid: int, request: Request) -> StreamingResponse:
    """The run's progress as server-sent events, as the site streams a run's: start,
    running, test, done."""
    run, lang = _run(request, rid), request_lang(request)

    async def body() -> AsyncIterator[str]:
        sent = 0
        while True:
            finished = run.finished.is_set()  # before reading: no event is missed
            fresh = run.events[sent:]
            for ev in fresh:
                yield sse(ev.to_json(lang, learner=True))
            sent += len(fresh)
            if finished or await request.is_disconnected():
                return
            await asyncio.sleep(POLL_S)

    return event_response(body())
