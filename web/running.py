"""Starting a "Run examples" run (the API and the problem page's button share this): the
same checks as a submission (web.submitting.judgeable), then the run's own limits. Anything refused
raises a web.errors error with nothing stored."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.orm import Session

from judge.i18n import T
from web.catalog import Catalog
from web.data import runs
from web.errors import RateLimited
from web.hub import Hub
from web.models import Run, User
from web.settings import Settings
from web.submitting import judgeable


def start_run(db: Session, settings: Settings, catalog: Catalog, hub: Hub, user: User,
              problem_ident: str, code: str, now: datetime) -> Run:
    problem = judgeable(db, settings, catalog, problem_ident, code, now)
    try:
        run = runs.add_run(db, user, problem.slug, problem.version, code, now,
                           settings.runs_per_minute, settings.runs_in_flight,
                           needs_gpu=problem.needs_gpu, prefers_gpu=problem.prefers_gpu,
                           keep=settings.runs_kept)
    except runs.RunLimited as e:
        raise _limited(e, settings) from None
    hub.notify("queue")
    return run


def _limited(e: runs.RunLimited, settings: Settings) -> RateLimited:
    if e.reason == "in_flight":
        k = settings.runs_in_flight
        return RateLimited(T(f"你已有 {k} 次样例运行在排队或运行中，等它出结果再运行",
                             f"you already have {k} example run(s) queued or running; "
                             f"wait for the result before running again"))
    n = settings.runs_per_minute
    return RateLimited(T(f"运行样例太频繁：每分钟最多 {n} 次，请 {e.retry_after} 秒后再试",
                         f"too many example runs: at most {n} a minute; try again in "
                         f"{e.retry_after} s"), retry_after=e.retry_after)
