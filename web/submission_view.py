"""What a submission looks like from outside: one function builds it for the API, the pages
and the event stream, so they agree.

Learners see their public tests in full and hidden tests by name, category, verdict and
time only (``judge.report`` redacts). Admins (``full=True``) see the stored report as is.
While a job runs, the tests come from its progress events (``judge.events``), stored as
the learner's view when the worker posted them (``web.data.queue.add_events``), so they
hold nothing a learner may not see.
"""

from __future__ import annotations

from typing import Any

from judge.events import (
    GRADING,
    Event,
    EventKind,
    Running,
    Started,
    TestJudged,
    ThroughputMeasured,
    event_from_json,
    kind_of,
)
from judge.report import Report
from web import timing
from web.models import JobEvent, Submission
from web.phases import PHASES, Phase


def ingest_event(raw: Any) -> Event | Phase | None:
    """A worker's progress event of a judging, checked (ValueError when malformed). None
    for the grader's own ``done`` (the server sends ``done`` once the result is stored)
    and for kinds a judging does not send. Stored as its learner view."""
    if not isinstance(raw, dict):
        raise ValueError("an event must be an object")
    if raw.get("event") == "phase":
        return Phase.from_json(raw)
    kind = kind_of(raw)
    if kind not in GRADING or kind is EventKind.DONE:
        return None
    return event_from_json(raw)


def event_view(payload: dict[str, Any], lang: str) -> dict[str, Any]:
    """A stored event as sent on the stream, in the reader's language."""
    if payload.get("event") == "phase":
        return Phase.from_json(payload).to_json(lang)
    return event_from_json(payload).to_json(lang, learner=True)


def progress(events: list[JobEvent], lang: str) -> dict[str, Any]:
    """The state so far of a running job: its tests (verdict None until they land), the
    test running now, the speed check's phase, and throughput results."""
    tests: list[dict[str, Any]] = []
    running: int | str | None = None
    throughput: list[dict[str, Any]] = []
    phase: str | None = None
    for ev in events:
        if ev.payload.get("event") == "phase":
            phase = Phase.from_json(ev.payload).phase
            continue
        event = event_from_json(ev.payload)
        if isinstance(event, Started):
            tests = [{"name": t.name, "visibility": t.visibility, "verdict": None,
                      "message": "", "time_ms": None, "category": ""} for t in event.tests]
            running, throughput, phase = None, [], None
        elif isinstance(event, Running):
            running = event.index if event.index is not None else event.name
        elif isinstance(event, TestJudged) and 0 <= event.index < len(tests):
            tests[event.index] = event.result.to_json(lang, learner=True)
        elif isinstance(event, ThroughputMeasured):
            throughput.append(event.result.to_json())
    return {"tests": tests, "running": running, "throughput": throughput, "phase": phase}


def summary(report: Report) -> dict[str, Any]:
    """The submission columns a stored report fills in (the problem version too, when the
    worker judged another version than the one recorded at submission). ``total`` leaves
    out tests this machine could not run (a CUDA case on a worker without a GPU), so an
    accepted submission reads "23 / 23", not "23 / 24"."""
    columns: dict[str, Any] = {"verdict": str(report.verdict), "passed": report.passed,
                               "total": report.total, "ratio": report.ratio}
    if len(report.problem_version or "") == 64:
        columns["problem_version"] = report.problem_version
    return columns


def submission_view(sub: Submission, lang: str, *, full: bool = False,
                    position: int | None = None, events: list[JobEvent] | None = None,
                    ranking: dict[str, Any] | None = None) -> dict[str, Any]:
    """The API's ``GET /api/submissions/{id}`` object (and the submission page's data).
    ``timing`` is each measured speed check's numbers (web.timing), refined once the
    ranking is done; ``rejudged`` says how a later judging changed the verdict
    (:func:`rejudged`); ``ranking`` is pending|done|failed|None, and ``ranking_progress``
    (:func:`ranking_progress`) says what its job is doing while it is pending."""
    data: dict[str, Any] = {
        "id": sub.id, "problem": sub.problem, "problem_version": sub.problem_version,
        "user": sub.user.username, "status": sub.status, "verdict": None, "message": "",
        "tests": [], "passed": None, "total": None, "throughput": [], "ratio": sub.ratio,
        "created_at": sub.created_at.isoformat() + "Z",
        "judged_at": sub.judged_at.isoformat() + "Z" if sub.judged_at else None,
        "position": position, "running": None, "view": "full" if full else "learner",
        "ranking": sub.rank_status, "rank_ratio": sub.rank_ratio, "timing": [],
        "ranking_progress": ranking, "phase": None,
        "share": sub.share, "rejudged": rejudged(sub),
    }
    if sub.status == "done" and sub.report is not None:
        report = Report.from_json(sub.report)
        shown = report.to_json(lang, learner=not full)
        if not full:
            shown.pop("seed", None)  # hidden inputs are drawn from it
        data.update({k: v for k, v in shown.items() if k not in ("problem", "problem_version")})
        data["status"] = "done"
        data["timing"] = timing.shown_checks(
            sub.report, sub.ranking if sub.rank_status == "done" else None)
    elif events is not None:
        data.update(progress(events, lang))
    return data


def rejudged(sub: Submission) -> dict[str, Any] | None:
    """How a later judging changed the verdict (a rejudge, or the GPU's judging after a
    CPU one): ``previous_verdict`` (the one its owner saw before), ``verdict``, ``at``,
    the ``version`` that judged it, and whether its owner has ``seen`` it (opened the
    submission page since). None when the verdict never changed."""
    if sub.verdict_changed_at is None:
        return None
    return {"previous_verdict": sub.previous_verdict, "verdict": sub.verdict,
            "at": sub.verdict_changed_at.isoformat() + "Z",
            "version": sub.verdict_changed_version,
            "seen": sub.verdict_change_seen_at is not None}


def ranking_progress(state: str, position: int | None, events: list[JobEvent], *,
                     run: int = 1, runs: int = 1,
                     not_before: str | None = None) -> dict[str, Any]:
    """What a pending ranking's job is doing: ``state`` queued|running, the jobs ahead of
    it, the phase the worker last reported, the speed check it is on and how many it
    finished; which ``run`` of how many ``runs`` it is (web.data.ranking), and for a
    queued run spaced from the one before, when it may start (``not_before``, ISO UTC)."""
    phase: str | None = None
    check: str | None = None
    finished = 0
    for ev in events:
        payload = ev.payload
        if payload.get("event") == "phase" and payload.get("phase") in PHASES:
            phase = payload["phase"]
        elif kind_of(payload) is EventKind.RUNNING and str(payload.get("name", "")
                                                          ).startswith("throughput:"):
            check = str(payload["name"])
        elif kind_of(payload) is EventKind.THROUGHPUT:
            finished += 1
    return {"state": state, "position": position, "phase": phase, "check": check,
            "finished": finished, "run": run, "runs": runs, "not_before": not_before}
