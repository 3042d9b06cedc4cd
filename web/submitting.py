"""Accepting a submission (the API and the problem page share this): check the code, the
problem and the user's limits, then store it with its job and wake the workers. Anything
refused raises a web.errors error with nothing stored."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.orm import Session

from judge.i18n import T
from web.catalog import Catalog, ProblemView
from web.data import submissions, workers
from web.errors import BadRequest, NotFound, RateLimited, TooLarge, Unavailable
from web.hub import Hub
from web.models import Submission, User
from web.settings import Settings


def check_code(code: str, max_bytes: int) -> None:
    try:
        size = len(code.encode("utf-8"))
    except UnicodeEncodeError:
        raise BadRequest(T("代码不是合法的 UTF-8 文本", "the code is not valid UTF-8 text")
                          ) from None
    if size > max_bytes:
        raise TooLarge(T(f"代码太长：{size} 字节，最多 {max_bytes} 字节",
                                 f"the code is too long: {size} bytes, at most {max_bytes}"))
    if "\x00" in code:
        raise BadRequest(T("代码里有 NUL 字符（\\x00），Python 源文件不能包含它",
                                 "the code contains a NUL character (\\x00), which Python "
                                 "source cannot hold"))
    if not code.strip():
        raise BadRequest(T("代码是空的", "the code is empty"))


def judgeable(db: Session, settings: Settings, catalog: Catalog, problem_ident: str,
              code: str, now: datetime) -> ProblemView:
    """The problem to judge this code on (a submission, or a "Run examples" run), once the
    code and the problem are checked and a worker that can judge it is there."""
    problem = catalog.get(problem_ident)
    if problem is None:
        raise NotFound(T(f"没有这道题：{problem_ident!r}",
                                 f"no such problem: {problem_ident!r}"))
    check_code(code, settings.max_code_bytes)
    if problem.needs_gpu and not workers.gpu_worker_alive(db, now):
        raise Unavailable(T("这道题要在 GPU 上评测，现在没有可用的 GPU 评测机，请稍后再试",
                                 "this problem is judged on a GPU and no GPU worker is "
                                 "available now; please try again later"))
    return problem


def submit(db: Session, settings: Settings, catalog: Catalog, hub: Hub, user: User,
           problem_ident: str, code: str, now: datetime, *, share: bool = False) -> Submission:
    """Queue ``code``; ``share``: its author lets others who solved the problem read it
    once it is accepted (web.solutions)."""
    problem = judgeable(db, settings, catalog, problem_ident, code, now)
    try:
        sub = submissions.add_submission(db, user, problem.slug, problem.version, code, now,
                                     settings.submissions_per_minute,
                                     in_flight_max=settings.submissions_in_flight,
                                     needs_gpu=problem.needs_gpu,
                                     prefers_gpu=problem.prefers_gpu, share=share)
    except submissions.Limited as e:
        if e.reason == "in_flight" and settings.submissions_in_flight == 1:
            raise RateLimited(T("你还有一个提交在排队或评测中，等它出结果再提交",
                                     "you already have a submission queued or being judged; "
                                     "wait for its result before submitting again")) from None
        if e.reason == "in_flight":
            k = settings.submissions_in_flight
            raise RateLimited(T(f"你已有 {k} 个提交在排队或评测中，等它们出结果再提交",
                                f"you already have {k} submissions queued or being judged; "
                                f"wait for their results before submitting again")) from None
        n = settings.submissions_per_minute
        raise RateLimited(T(f"提交太频繁：每分钟最多 {n} 次，请 {e.retry_after} 秒后再试",
                                 f"too many submissions: at most {n} a minute; try again "
                                 f"in {e.retry_after} s"), retry_after=e.retry_after) from None
    hub.notify("queue")
    return sub
