"""The result of judging one submission, and the views of it that leave the grader.

``Report.to_json(lang)`` is the full record (the CLI's ``--json``, the worker's upload,
what admins see). ``Report.for_learner(lang)`` is what a learner may see: hidden tests keep
their name, category, verdict and time, never their message or output.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from judge.i18n import T
from judge.verdict import Verdict

EMPTY = T("", "")
# The message of a CUDA case skipped on a machine without a GPU.
NEEDS_CUDA = T("需要 CUDA，本机没有", "needs CUDA, none here")


def cpu_only_message(not_run: int) -> T:
    """The report's message when everything that ran passed but CUDA parts could not run."""
    return T(f"CPU 用例全部通过；{not_run} 项 CUDA 用例或速度检查没有运行（这里没有 GPU），"
             f"不算通过：这个结果只代表 CPU 用例。",
             f"every CPU case passed; {not_run} CUDA cases or speed checks were not run (no "
             f"GPU here) and do not count as passed: this verdict covers the CPU cases only.")


class SkipReason(enum.StrEnum):
    """Why a test was not run. A CUDA case on a machine without a GPU is not a failure
    and is not counted in a report's total; tests not run after a compile error, a limit
    or repeated crashes are (they were not passed)."""

    NEEDS_CUDA = "needs_cuda"
    # The case called ``t.skip``: this machine cannot run it (its torch lacks a feature the
    # case needs); like a CUDA case without a GPU, not a failure and not counted.
    UNAVAILABLE = "unavailable"
    NOT_RUN = "not_run"  # an earlier failure ended the judging
    OFFLINE = "offline"  # the practice CLI cannot replay this case's recorded answers


@dataclass
class TestResult:
    __test__ = False  # not a pytest class
    name: str
    visibility: str  # "public" or "hidden"
    category: T
    verdict: Verdict
    message: T = EMPTY
    time_ms: float = 0.0
    output: str = ""  # what the submission printed during the case (public cases only)
    # For admins only, never in a learner's view: what could leak hidden inputs or the
    # reference (a reference's traceback, a failure's values on hidden inputs).
    detail: T = EMPTY
    skip: SkipReason | None = None  # set when verdict is SKIPPED

    @property
    def needs_cuda(self) -> bool:
        return self.skip is SkipReason.NEEDS_CUDA

    @property
    def unavailable(self) -> bool:
        """Skipped because this machine cannot run it: a CUDA case without a GPU, or a
        case that needs what this machine's torch lacks (``t.skip``)."""
        return self.skip in (SkipReason.NEEDS_CUDA, SkipReason.UNAVAILABLE)

    def to_json(self, lang: str, *, learner: bool = False) -> dict[str, Any]:
        hidden = self.visibility == "hidden"
        data: dict[str, Any] = {
            "name": self.name,
            "visibility": self.visibility,
            "category": self.category(lang),
            "verdict": str(self.verdict),
            "message": "" if hidden and learner else self.message(lang),
            "time_ms": round(self.time_ms, 1),
        }
        if not (hidden and learner):
            data["messages"] = self.message.as_dict()
            data["output"] = self.output
        if not learner and self.detail != EMPTY:
            data["details"] = self.detail.as_dict()
        data["categories"] = self.category.as_dict()
        if self.skip is not None:
            data["skip"] = str(self.skip)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TestResult:
        msgs = data.get("messages") or {"zh": data.get("message", ""),
                                        "en": data.get("message", "")}
        cats = data.get("categories") or {"zh": data.get("category", ""),
                                          "en": data.get("category", "")}
        verdict = Verdict(data["verdict"])
        message = T(msgs["zh"], msgs["en"])
        skip = SkipReason(data["skip"]) if data.get("skip") else None
        if skip is None and verdict is Verdict.SKIPPED:
            # a report stored before tests said why they were skipped
            skip = SkipReason.NEEDS_CUDA if message.en == NEEDS_CUDA.en else SkipReason.NOT_RUN
        return cls(data["name"], data["visibility"], T(cats["zh"], cats["en"]), verdict,
                   message, float(data.get("time_ms", 0.0)), data.get("output", ""),
                   T.from_dict(data.get("details")), skip)


@dataclass(frozen=True)
class KindTime:
    """One kind of input of a speed check (``kind`` None for a workload without kinds):
    the submission's and the reference's median timed call."""

    kind: str | None
    sub_ms: float
    ref_ms: float

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "sub_ms": self.sub_ms, "ref_ms": self.ref_ms}

    @classmethod
    def from_json(cls, data: Any) -> KindTime:
        if not isinstance(data, dict):
            raise ValueError("a kind's timing must be an object")
        kind = data.get("kind")
        return cls(None if kind is None else str(kind)[:40], float(data["sub_ms"]),
                   float(data["ref_ms"]))


MAX_PAIR_RATIOS = 200  # judge.measurement keeps at most this many in a result
MAX_KINDS = 20


@dataclass(frozen=True)
class ThroughputResult:
    """One speed check: the submission's speed as a ratio of the reference's (medians
    of interleaved timed calls), or ``ratio`` None when it was not measured (a CUDA
    check on a machine without a GPU: verdict ``skipped``)."""

    name: str
    device: str
    verdict: Verdict
    min_ratio: float
    ratio: float | None = None
    torch: str = ""
    spread: float = 0.0  # interquartile range of the pair ratios, relative
    pairs: int = 0
    rounds: int = 0  # 2 when a borderline ratio was measured again
    sub_ms: float = 0.0  # median timed call
    ref_ms: float = 0.0
    title: T | None = None
    # Timed calls thrown away because the side that was not being timed ran meanwhile
    # (judge/throughput.py: the idle side is frozen, kept off the timing core and its
    # CPU time counted); a submission that keeps causing it is too slow.
    disturbed: int = 0
    # The ratio's 95 % confidence interval (judge.measurement.Measurement.interval), the
    # pair ratios in order (at most MAX_PAIR_RATIOS), each kind's median calls, and whether
    # it was measured in ranking mode (precise: the leaderboard's ratio). A report stored
    # before these were recorded reads None, () and False.
    interval: tuple[float, float] | None = None
    pair_ratios: tuple[float, ...] = ()
    kinds: tuple[KindTime, ...] = ()
    refined: bool = False

    @property
    def measured(self) -> bool:
        return self.ratio is not None

    def to_json(self) -> dict[str, Any]:
        if self.ratio is None:
            return {"name": self.name, "device": self.device, "verdict": str(self.verdict),
                    "min_ratio": self.min_ratio, "ratio": None}
        data: dict[str, Any] = {
            "name": self.name, "device": self.device, "torch": self.torch,
            "ratio": self.ratio, "spread": self.spread, "min_ratio": self.min_ratio,
            "pairs": self.pairs, "rounds": self.rounds, "sub_ms": self.sub_ms,
            "ref_ms": self.ref_ms, "verdict": str(self.verdict),
            "interval": None if self.interval is None else list(self.interval),
            "pair_ratios": list(self.pair_ratios), "kinds": [k.to_json() for k in self.kinds],
            "refined": self.refined}
        if self.disturbed:
            data["disturbed"] = self.disturbed
        if self.title is not None:
            data["title"] = self.title.as_dict()
        return data

    @classmethod
    def from_json(cls, data: Any) -> ThroughputResult:
        """Raises ValueError (KeyError, TypeError) on a malformed entry."""
        if not isinstance(data, dict) or not isinstance(data.get("name"), str):
            raise ValueError("a throughput result needs a name")
        ratio = data.get("ratio")
        interval = data.get("interval")
        if interval is not None and (not isinstance(interval, list) or len(interval) != 2):
            raise ValueError("a throughput interval is [lo, hi]")
        pair_ratios, kinds = data.get("pair_ratios") or [], data.get("kinds") or []
        if not isinstance(pair_ratios, list) or not isinstance(kinds, list):
            raise ValueError("pair_ratios and kinds are lists")
        return cls(
            name=data["name"][:200], device=str(data.get("device", "cpu"))[:20],
            verdict=Verdict(data["verdict"]), min_ratio=float(data["min_ratio"]),
            ratio=None if ratio is None else float(ratio), torch=str(data.get("torch", ""))[:40],
            spread=float(data.get("spread") or 0.0), pairs=int(data.get("pairs") or 0),
            rounds=int(data.get("rounds") or 0), sub_ms=float(data.get("sub_ms") or 0.0),
            ref_ms=float(data.get("ref_ms") or 0.0),
            disturbed=int(data.get("disturbed") or 0),
            title=T.from_dict(data["title"]) if isinstance(data.get("title"), dict) else None,
            interval=None if interval is None else (float(interval[0]), float(interval[1])),
            pair_ratios=tuple(float(r) for r in pair_ratios[:MAX_PAIR_RATIOS]),
            kinds=tuple(KindTime.from_json(k) for k in kinds[:MAX_KINDS]),
            refined=bool(data.get("refined")))


@dataclass
class Report:
    verdict: Verdict
    problem: str
    seed: int
    isolation: str
    problem_version: str = ""
    tests: list[TestResult] = field(default_factory=list)
    message: T = EMPTY  # about the whole submission: a compile error, an internal error
    detail: T = EMPTY  # for admins only (see TestResult.detail)
    throughput: list[ThroughputResult] = field(default_factory=list)
    device: str = "cpu"
    torch: str = ""
    time_ms: float = 0.0

    @property
    def passed(self) -> int:
        return sum(t.verdict is Verdict.ACCEPTED for t in self.tests)

    @property
    def skipped(self) -> int:
        """Cases this machine could not run (CUDA cases without a GPU, cases that need what
        its torch lacks): not failures, and not counted in ``total``."""
        return sum(t.unavailable for t in self.tests)

    @property
    def total(self) -> int:
        """The cases counted in "passed / total": all but those this machine could not run."""
        return len(self.tests) - self.skipped

    @property
    def cuda_not_run(self) -> int:
        """CUDA cases and CUDA speed checks this machine could not run (it has no GPU)."""
        return sum(t.needs_cuda for t in self.tests) + sum(
            t.device == "cuda" and t.verdict is Verdict.SKIPPED for t in self.throughput)

    @property
    def cpu_only(self) -> bool:
        """Accepted on everything that ran, with CUDA cases or checks not run: the verdict
        covers the CPU cases only (the web queues the submission for a GPU worker)."""
        return self.verdict is Verdict.ACCEPTED and self.cuda_not_run > 0

    @property
    def ratio(self) -> float | None:
        """The slowest measured speed check's ratio (None without one)."""
        ratios = [t.ratio for t in self.throughput if t.ratio is not None]
        return min(ratios) if ratios else None

    def to_json(self, lang: str = "zh", *, learner: bool = False) -> dict[str, Any]:
        return {
            "verdict": str(self.verdict),
            "problem": self.problem,
            "problem_version": self.problem_version,
            "seed": self.seed,
            "isolation": self.isolation,
            "message": self.message(lang),
            "messages": self.message.as_dict(),
            **({"details": self.detail.as_dict()} if self.detail != EMPTY and not learner else {}),
            "tests": [t.to_json(lang, learner=learner) for t in self.tests],
            "passed": self.passed,
            "total": self.total,
            "skipped": self.skipped,
            "cuda_not_run": self.cuda_not_run,
            "throughput": [t.to_json() for t in self.throughput],
            "device": self.device,
            "torch": self.torch,
            "time_ms": round(self.time_ms, 1),
        }

    def for_learner(self, lang: str = "zh") -> dict[str, Any]:
        return self.to_json(lang, learner=True)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Report:
        msgs = data.get("messages") or {"zh": data.get("message", ""),
                                        "en": data.get("message", "")}
        return cls(
            verdict=Verdict(data["verdict"]), problem=data["problem"], seed=int(data["seed"]),
            isolation=data.get("isolation", ""), problem_version=data.get("problem_version", ""),
            tests=[TestResult.from_json(t) for t in data.get("tests", [])],
            message=T(msgs["zh"], msgs["en"]),
            throughput=[ThroughputResult.from_json(t) for t in data.get("throughput", [])],
            device=data.get("device", "cpu"), torch=data.get("torch", ""),
            time_ms=float(data.get("time_ms", 0.0)), detail=T.from_dict(data.get("details")),
        )


def redact_for_learner(report_json: dict[str, Any], lang: str = "zh") -> dict[str, Any]:
    """The learner's view of a stored full report."""
    return Report.from_json(report_json).for_learner(lang)
