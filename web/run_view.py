"""What a "Run examples" run looks like from outside (``GET /api/runs/{id}``, its event
stream): the submission's shape (web.submission_view) without user, speed checks or
ratio, and with ``"kind": "run"``. Its report holds public tests only
(web.data.runs.public_only), shown in full."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from judge.report import Report
from web.data import runs
from web.models import JobEvent, Run
from web.streams import Snapshot, snapshot
from web.submission_view import progress


def run_snapshot(maker: sessionmaker[Session], rid: int, after_id: int) -> Snapshot | None:
    """A run's state for its event stream (web.streams.Stream with ``look=`` this)."""
    return snapshot(maker, rid, after_id, get=runs.get_run, job_of=runs.run_job,
                    events_of=runs.events_after)


def run_view(run: Run, lang: str, *, position: int | None = None,
             events: list[JobEvent] | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": run.id, "kind": "run", "problem": run.problem,
        "problem_version": run.problem_version, "status": run.status, "verdict": None,
        "message": "", "tests": [], "passed": None, "total": None,
        "created_at": run.created_at.isoformat() + "Z",
        "judged_at": run.judged_at.isoformat() + "Z" if run.judged_at else None,
        "position": position, "running": None,
    }
    if run.status == "done" and run.report is not None:
        shown = Report.from_json(run.report).to_json(lang, learner=True)
        data.update({k: shown[k] for k in ("verdict", "message", "tests", "passed", "total")})
    elif events is not None:
        data.update({k: v for k, v in progress(events, lang).items() if k != "throughput"})
    return data
