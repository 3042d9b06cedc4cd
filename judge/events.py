"""Progress events: what the grader and the package check tell a worker while they run,
what a worker posts to the server, and what the server streams to a reader.

Each kind is a frozen dataclass with ``to_json``/``from_json``; :class:`EventKind` names
them, and the table in web/README.md ("Progress events") lists them (a test checks it).

    grader       Started -> (Running -> TestJudged)* -> [Phase(waiting) -> Phase(measuring|ranking)
                 -> (Running -> ThroughputMeasured)*] -> Done
    check        FilesPlanned -> FileChecked*
    server only  Queued (a reader's position in the queue)

``to_json(lang, learner=True)`` is the learner's view (no seed, hidden tests without
message or output): what the server stores and streams. ``from_json`` raises ValueError
(or KeyError, TypeError) on a malformed event: the server answers 422.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, ClassVar

from judge.i18n import T
from judge.report import EMPTY, Report, TestResult, ThroughputResult
from judge.verdict import Verdict

VISIBILITY = ("public", "hidden")
MAX_FILES = 1000


class EventKind(enum.StrEnum):
    QUEUED = "queued"
    START = "start"
    RUNNING = "running"
    PHASE = "phase"
    TEST = "test"
    THROUGHPUT = "throughput"
    DONE = "done"
    FILES = "files"
    FILE = "file"


def visibility(value: Any) -> str:
    if value not in VISIBILITY:
        raise ValueError(f"visibility must be public or hidden, not {value!r}")
    return str(value)


def _body(data: Any, kind: EventKind) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ValueError("an event must be an object")
    if data.get("event") != kind:
        raise ValueError(f"not a {kind} event")
    return data


@dataclass(frozen=True)
class Queued:
    kind: ClassVar = EventKind.QUEUED
    position: int | None

    def to_json(self, lang: str = "zh", *, learner: bool = False) -> dict[str, Any]:
        return {"event": str(self.kind), "position": self.position}

    @classmethod
    def from_json(cls, data: Any) -> Queued:
        position = _body(data, cls.kind).get("position")
        return cls(None if position is None else int(position))


@dataclass(frozen=True)
class PlannedTest:
    name: str
    visibility: str

    @classmethod
    def from_json(cls, data: Any) -> PlannedTest:
        return cls(str(data["name"]), visibility(data["visibility"]))


@dataclass(frozen=True)
class Started:
    """Judging began: the tests in order (a reader resets its table: a job handed to
    another worker starts again). ``seed`` is the grader's; learners never get it."""

    kind: ClassVar = EventKind.START
    total: int
    tests: tuple[PlannedTest, ...]
    seed: int | None = None

    def to_json(self, lang: str = "zh", *, learner: bool = False) -> dict[str, Any]:
        data: dict[str, Any] = {"event": str(self.kind), "total": self.total,
                                "tests": [{"name": t.name, "visibility": t.visibility}
                                          for t in self.tests]}
        if self.seed is not None and not learner:
            data["seed"] = self.seed
        return data

    @classmethod
    def from_json(cls, data: Any) -> Started:
        body = _body(data, cls.kind)
        tests = tuple(PlannedTest.from_json(t) for t in body.get("tests", []))
        seed = body.get("seed")
        return cls(int(body.get("total", len(tests))), tests,
                   None if seed is None else int(seed))


@dataclass(frozen=True)
class Running:
    """A test (``index``) or a speed check (only ``name``: ``throughput:<check>``) began."""

    kind: ClassVar = EventKind.RUNNING
    name: str
    index: int | None = None

    def to_json(self, lang: str = "zh", *, learner: bool = False) -> dict[str, Any]:
        data: dict[str, Any] = {"event": str(self.kind), "name": self.name}
        if self.index is not None:
            data["index"] = self.index
        return data

    @classmethod
    def from_json(cls, data: Any) -> Running:
        body = _body(data, cls.kind)
        index = body.get("index")
        return cls(str(body.get("name", "")), None if index is None else int(index))


PHASES = ("waiting_for_quiet_machine", "measuring", "ranking")


@dataclass(frozen=True)
class Phase:
    """Where the speed checks stand: waiting for the machine-wide measuring lock
    (``waiting_for_quiet_machine``: another judging on this machine is measuring), then
    measuring for the verdict (``measuring``) or precisely, for the leaderboard
    (``ranking``)."""

    kind: ClassVar = EventKind.PHASE
    phase: str

    def __post_init__(self) -> None:
        if self.phase not in PHASES:
            raise ValueError(f"phase must be one of {PHASES}, not {self.phase!r}")

    def to_json(self, lang: str = "zh", *, learner: bool = False) -> dict[str, Any]:
        return {"event": str(self.kind), "phase": self.phase}

    @classmethod
    def from_json(cls, data: Any) -> Phase:
        return cls(str(_body(data, cls.kind).get("phase")))


@dataclass(frozen=True)
class TestJudged:
    """A test's verdict landed."""

    __test__ = False  # not a pytest class
    kind: ClassVar = EventKind.TEST
    index: int
    result: TestResult

    def to_json(self, lang: str = "zh", *, learner: bool = False) -> dict[str, Any]:
        return {"event": str(self.kind), "index": self.index,
                "result": self.result.to_json(lang, learner=learner)}

    @classmethod
    def from_json(cls, data: Any) -> TestJudged:
        body = _body(data, cls.kind)
        if not isinstance(body.get("result"), dict):
            raise ValueError("a test event needs a result object")
        result = TestResult.from_json(body["result"])
        visibility(result.visibility)
        return cls(int(body["index"]), result)


@dataclass(frozen=True)
class ThroughputMeasured:
    """A speed check finished (or was skipped)."""

    kind: ClassVar = EventKind.THROUGHPUT
    result: ThroughputResult

    def to_json(self, lang: str = "zh", *, learner: bool = False) -> dict[str, Any]:
        return {"event": str(self.kind), "result": self.result.to_json()}

    @classmethod
    def from_json(cls, data: Any) -> ThroughputMeasured:
        body = _body(data, cls.kind)
        if not isinstance(body.get("result"), dict):
            raise ValueError("a throughput event needs a result object")
        return cls(ThroughputResult.from_json(body["result"]))


@dataclass(frozen=True)
class Done:
    """The judging ended (the grader's own), or the result is stored (the server's: a
    reader's last event)."""

    kind: ClassVar = EventKind.DONE
    verdict: Verdict
    passed: int
    total: int
    ratio: float | None = None
    message: T = EMPTY

    @classmethod
    def of(cls, report: Report) -> Done:
        return cls(report.verdict, report.passed, report.total, report.ratio, report.message)

    def to_json(self, lang: str = "zh", *, learner: bool = False) -> dict[str, Any]:
        return {"event": str(self.kind), "verdict": str(self.verdict), "passed": self.passed,
                "total": self.total, "ratio": self.ratio, "message": self.message(lang)}

    @classmethod
    def from_json(cls, data: Any) -> Done:
        body = _body(data, cls.kind)
        ratio = body.get("ratio")
        return cls(Verdict(body["verdict"]), int(body.get("passed") or 0),
                   int(body.get("total") or 0), None if ratio is None else float(ratio),
                   T.same(str(body.get("message", ""))))


@dataclass(frozen=True)
class CheckedFile:
    """One file of a package check (validation): its expected verdict and, once judged,
    its verdict, whether that is right, and the check's explanation (admins only); for
    the calibration report (judge/calibration.py), the case that caught it (``caught_by``,
    ``caught_public``) and its speed checks' ratios (``speed``)."""

    label: str
    expected: str
    verdict: Verdict | None = None
    ok: bool | None = None
    detail: str = ""
    caught_by: str | None = None
    caught_public: bool = False
    speed: tuple[dict[str, Any], ...] = ()
    time_ms: float = 0.0

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "label": self.label, "expected": self.expected,
            "verdict": None if self.verdict is None else str(self.verdict),
            "ok": self.ok, "detail": self.detail}
        if self.verdict is not None:
            data.update(caught_by=self.caught_by, caught_public=self.caught_public,
                        speed=list(self.speed), time_ms=round(self.time_ms, 1))
        return data

    @classmethod
    def from_json(cls, data: Any) -> CheckedFile:
        if not isinstance(data, dict) or not isinstance(data.get("label"), str):
            raise ValueError("a file entry needs a label")
        label, expected = data["label"][:200], str(data.get("expected", ""))[:40]
        if data.get("verdict") is None:
            return cls(label, expected)
        caught = data.get("caught_by")
        return cls(label, expected, Verdict(data["verdict"]), bool(data.get("ok")),
                   str(data.get("detail", ""))[:4000],
                   caught_by=str(caught)[:200] if caught is not None else None,
                   caught_public=bool(data.get("caught_public")),
                   speed=tuple(_speed_entry(s) for s in (data.get("speed") or [])[:20]),
                   time_ms=float(data.get("time_ms") or 0.0))


def _speed_entry(data: Any) -> dict[str, Any]:
    """One speed ratio of a checked file: name, verdict, ratio, its interval, min_ratio."""
    if not isinstance(data, dict):
        raise ValueError("a speed entry must be an object")
    ratio, interval = data.get("ratio"), data.get("interval")
    if interval is not None:
        lo, hi = (float(x) for x in interval)
        interval = [lo, hi]
    return {"name": str(data.get("name", ""))[:200], "verdict": str(data.get("verdict", ""))[:40],
            "ratio": None if ratio is None else float(ratio), "interval": interval,
            "min_ratio": float(data.get("min_ratio") or 0.0)}


@dataclass(frozen=True)
class FilesPlanned:
    """A package check began: the files it will judge."""

    kind: ClassVar = EventKind.FILES
    files: tuple[CheckedFile, ...]

    def to_json(self, lang: str = "zh", *, learner: bool = False) -> dict[str, Any]:
        return {"event": str(self.kind), "files": [f.to_json() for f in self.files]}

    @classmethod
    def from_json(cls, data: Any) -> FilesPlanned:
        files = _body(data, cls.kind).get("files")
        if not isinstance(files, list):
            raise ValueError("files needs a list of files")
        return cls(tuple(CheckedFile.from_json(f) for f in files[:MAX_FILES]))


@dataclass(frozen=True)
class FileChecked:
    """One file of a package check was judged."""

    kind: ClassVar = EventKind.FILE
    file: CheckedFile

    def to_json(self, lang: str = "zh", *, learner: bool = False) -> dict[str, Any]:
        return {"event": str(self.kind), "file": self.file.to_json()}

    @classmethod
    def from_json(cls, data: Any) -> FileChecked:
        return cls(CheckedFile.from_json(_body(data, cls.kind).get("file")))


Event = (Queued | Started | Running | Phase | TestJudged | ThroughputMeasured | Done
         | FilesPlanned | FileChecked)
CLASSES: dict[EventKind, Any] = {c.kind: c for c in (
    Queued, Started, Running, Phase, TestJudged, ThroughputMeasured, Done, FilesPlanned,
    FileChecked)}
GRADING = frozenset({EventKind.START, EventKind.RUNNING, EventKind.PHASE, EventKind.TEST,
                     EventKind.THROUGHPUT, EventKind.DONE})
CHECKING = frozenset({EventKind.FILES, EventKind.FILE})


def kind_of(data: Any) -> EventKind | None:
    """The kind a JSON event says it is, None when it names no known kind."""
    kind = data.get("event") if isinstance(data, dict) else None
    try:
        return EventKind(kind) if isinstance(kind, str) else None
    except ValueError:
        return None


def event_from_json(data: Any) -> Event:
    """Any event, by its ``event`` field (ValueError for an unknown kind)."""
    if not isinstance(data, dict):
        raise ValueError("an event must be an object")
    kind = kind_of(data)
    if kind is None:
        raise ValueError(f"unknown event {data.get('event')!r}")
    return CLASSES[kind].from_json(data)
