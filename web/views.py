"""What a submission looks like from outside: one function builds it for the API, the pages
and the event stream, so they agree.

Learners see their public tests in full and hidden tests by name, category, verdict and
time only (``judge.report`` redacts). Admins (``full=True``) see the stored report as is.
While a job runs, the tests come from its progress events, which were redacted when the
worker posted them (``ingest_event``), so they hold nothing a learner may not see.
"""

from __future__ import annotations

from typing import Any

from judge.report import Report, TestResult
from judge.verdict import Verdict
from web.models import JobEvent, Submission

VISIBILITY = ("public", "hidden")


def ingest_event(raw: Any) -> dict[str, Any] | None:
    """A worker's progress event as stored: only known kinds and fields, test results
    reduced to the learner's view (both languages). None for events the server makes
    itself (``done``) or does not know. Raises ValueError on a malformed one."""
    if not isinstance(raw, dict):
        raise ValueError("an event must be an object")
    kind = raw.get("event")
    if kind == "start":
        tests = [{"name": str(t["name"]), "visibility": _visibility(t["visibility"])}
                 for t in raw.get("tests", [])]
        return {"event": "start", "total": int(raw.get("total", len(tests))), "tests": tests}
    if kind == "running":
        event: dict[str, Any] = {"event": "running", "name": str(raw.get("name", ""))}
        if raw.get("index") is not None:
            event["index"] = int(raw["index"])
        return event
    if kind == "test":
        result = TestResult.from_json(raw["result"])
        result.visibility = _visibility(result.visibility)
        return {"event": "test", "index": int(raw["index"]), "result": learner_test(result)}
    if kind == "throughput":
        entry = raw.get("result")
        if not isinstance(entry, dict):
            raise ValueError("a throughput event needs a result object")
        return {"event": "throughput", "result": entry}
    return None


def _visibility(value: Any) -> str:
    if value not in VISIBILITY:
        raise ValueError(f"visibility must be public or hidden, not {value!r}")
    return str(value)


def learner_test(result: TestResult) -> dict[str, Any]:
    """Both languages of a test's learner view (rendered per request by ``test_view``)."""
    data = result.to_json("zh", learner=True)
    data.pop("category", None)
    data.pop("message", None)
    return data


def test_view(stored: dict[str, Any], lang: str, *, full: bool = False) -> dict[str, Any]:
    return TestResult.from_json(stored).to_json(lang, learner=not full)


def event_view(payload: dict[str, Any], lang: str) -> dict[str, Any]:
    """A stored event as sent on the stream, in the reader's language."""
    if payload.get("event") == "test":
        return {**payload, "result": test_view(payload["result"], lang)}
    return payload


def progress(events: list[JobEvent], lang: str) -> dict[str, Any]:
    """The state so far of a running job: its tests (verdict None until they land), the
    test running now, and throughput results."""
    tests: list[dict[str, Any]] = []
    running = None
    throughput: list[dict[str, Any]] = []
    for ev in events:
        p = ev.payload
        kind = p.get("event")
        if kind == "start":
            tests = [{**t, "verdict": None, "message": "", "time_ms": None, "category": ""}
                     for t in p["tests"]]
            running, throughput = None, []
        elif kind == "running":
            running = p.get("index", p.get("name"))
        elif kind == "test" and 0 <= p["index"] < len(tests):
            tests[p["index"]] = test_view(p["result"], lang)
        elif kind == "throughput":
            throughput.append(p["result"])
    return {"tests": tests, "running": running, "throughput": throughput}


def slowest_ratio(report: dict[str, Any]) -> float | None:
    ratios = [t["ratio"] for t in report.get("throughput", []) if t.get("ratio") is not None]
    return min(ratios) if ratios else None


def judged(tests: list[dict[str, Any]]) -> int:
    """How many tests were run: a CUDA case on a worker without a GPU is shown as skipped
    and not counted, so an accepted submission reads "23 / 23", not "23 / 24"."""
    return sum(not TestResult.from_json(t).unavailable for t in tests)


def summary(report: dict[str, Any]) -> dict[str, Any]:
    """The submission columns a stored report fills in (the problem version too, when the
    worker judged another version than the one recorded at submission)."""
    columns = {"verdict": str(Verdict(report["verdict"])),
               "passed": sum(t["verdict"] == "accepted" for t in report.get("tests", [])),
               "total": judged(report.get("tests", [])), "ratio": slowest_ratio(report)}
    if len(report.get("problem_version") or "") == 64:
        columns["problem_version"] = report["problem_version"]
    return columns


def submission_view(sub: Submission, lang: str, *, full: bool = False,
                    position: int | None = None,
                    events: list[JobEvent] | None = None) -> dict[str, Any]:
    """The API's ``GET /api/submissions/{id}`` object (and the submission page's data)."""
    data: dict[str, Any] = {
        "id": sub.id, "problem": sub.problem, "problem_version": sub.problem_version,
        "user": sub.user.username, "status": sub.status, "verdict": None, "message": "",
        "tests": [], "passed": None, "total": None, "throughput": [], "ratio": sub.ratio,
        "created_at": sub.created_at.isoformat() + "Z",
        "judged_at": sub.judged_at.isoformat() + "Z" if sub.judged_at else None,
        "position": position, "running": None, "view": "full" if full else "learner",
    }
    if sub.status == "done" and sub.report is not None:
        report = Report.from_json(sub.report)
        shown = report.to_json(lang, learner=not full)
        if not full:
            shown.pop("seed", None)  # hidden inputs are drawn from it
        data.update({k: v for k, v in shown.items() if k not in ("problem", "problem_version")})
        data["status"] = "done"
    elif events is not None:
        data.update(progress(events, lang))
    return data


# ---------------------------------------------------------------- validation (admins)

FILE_FIELDS = {"label": str, "expected": str, "verdict": str, "ok": bool, "detail": str}


def _file_entry(raw: Any) -> dict[str, Any]:
    """One judged file of a validation: label, expected verdict, verdict (None while
    pending), ok, detail (the check's explanation, for admins)."""
    if not isinstance(raw, dict) or not isinstance(raw.get("label"), str):
        raise ValueError("a file entry needs a label")
    entry: dict[str, Any] = {"label": raw["label"][:200],
                             "expected": str(raw.get("expected", ""))[:40],
                             "verdict": None, "ok": None, "detail": ""}
    if raw.get("verdict") is not None:
        entry["verdict"] = str(Verdict(raw["verdict"]))
        entry["ok"] = bool(raw.get("ok"))
        entry["detail"] = str(raw.get("detail", ""))[:4000]
    return entry


def ingest_validation_event(raw: Any) -> dict[str, Any] | None:
    """A validate job's progress event: ``start`` (the files to judge) or ``file`` (one
    judged). Raises ValueError on a malformed one; None for others."""
    if not isinstance(raw, dict):
        raise ValueError("an event must be an object")
    kind = raw.get("event")
    if kind == "start":
        files = raw.get("files")
        if not isinstance(files, list):
            raise ValueError("start needs a list of files")
        return {"event": "start", "files": [_file_entry(f) for f in files[:1000]]}
    if kind == "file":
        return {"event": "file", "file": _file_entry(raw.get("file"))}
    return None


def validation_result(raw: dict[str, Any]) -> dict[str, Any]:
    """A validate job's result as stored: ok, errors, files, skipped, seed."""
    if not isinstance(raw.get("ok"), bool):
        raise ValueError("a validation result needs ok: true or false")
    files = raw.get("files", [])
    errors = raw.get("errors", [])
    skipped = raw.get("skipped", [])
    if not all(isinstance(x, list) for x in (files, errors, skipped)):
        raise ValueError("files, errors and skipped must be lists")
    return {"ok": raw["ok"], "errors": [str(e)[:4000] for e in errors[:100]],
            "files": [_file_entry(f) for f in files[:1000]],
            "skipped": [str(s)[:200] for s in skipped[:1000]],
            "seed": int(raw.get("seed") or 0)}
