"""The result of judging one submission, and the views of it that leave the grader.

``Report.to_json(lang)`` is the full record (the CLI's ``--json``, the worker's upload,
what admins see). ``Report.for_learner(lang)`` is what a learner may see: hidden tests keep
their name, category, verdict and time, never their message or output.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from judge.i18n import T
from judge.verdict import Verdict

EMPTY = T("", "")
# The message of a CUDA case skipped on a machine without a GPU: such a case is not a
# failure and is not counted in a report's total (cases skipped after a compile error or
# a limit are: they were not passed).
NEEDS_CUDA = T("需要 CUDA，本机没有", "needs CUDA, none here")
# The start of the message of a case that called ``t.skip``: this machine cannot run it
# (its torch lacks a feature); like a CUDA case without a GPU, not counted in the total.
UNAVAILABLE = T("本机无法运行：", "cannot run on this machine: ")


@dataclass
class TestResult:
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

    @property
    def needs_cuda(self) -> bool:
        return self.verdict is Verdict.SKIPPED and self.message.en == NEEDS_CUDA.en

    @property
    def unavailable(self) -> bool:
        """Skipped because this machine cannot run it: a CUDA case without a GPU, or a
        case that needs what this machine's torch lacks (``t.skip``)."""
        return self.needs_cuda or (self.verdict is Verdict.SKIPPED
                                   and self.message.en.startswith(UNAVAILABLE.en))

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
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TestResult:
        msgs = data.get("messages") or {"zh": data.get("message", ""),
                                        "en": data.get("message", "")}
        cats = data.get("categories") or {"zh": data.get("category", ""),
                                          "en": data.get("category", "")}
        return cls(data["name"], data["visibility"], T(cats["zh"], cats["en"]),
                   Verdict(data["verdict"]), T(msgs["zh"], msgs["en"]),
                   float(data.get("time_ms", 0.0)), data.get("output", ""),
                   T.from_dict(data.get("details")))


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
    throughput: list[dict[str, Any]] = field(default_factory=list)
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
            "throughput": self.throughput,
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
            message=T(msgs["zh"], msgs["en"]), throughput=list(data.get("throughput", [])),
            device=data.get("device", "cpu"), torch=data.get("torch", ""),
            time_ms=float(data.get("time_ms", 0.0)), detail=T.from_dict(data.get("details")),
        )


def redact_for_learner(report_json: dict[str, Any], lang: str = "zh") -> dict[str, Any]:
    """The learner's view of a stored full report."""
    return Report.from_json(report_json).for_learner(lang)
