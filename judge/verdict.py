"""Verdicts, named exactly as in DESIGN.md."""

from __future__ import annotations

import enum

from judge.i18n import T


class Verdict(enum.StrEnum):
    ACCEPTED = "accepted"
    WRONG_ANSWER = "wrong_answer"
    RUNTIME_ERROR = "runtime_error"
    TIME_LIMIT_EXCEEDED = "time_limit_exceeded"
    MEMORY_LIMIT_EXCEEDED = "memory_limit_exceeded"
    OUTPUT_LIMIT_EXCEEDED = "output_limit_exceeded"
    TOO_SLOW = "too_slow"
    COMPILE_ERROR = "compile_error"
    INTERNAL_ERROR = "internal_error"
    # A test that did not run (an earlier failure ended the job, or it needs CUDA). Tests
    # only: a submission's verdict is never "skipped".
    SKIPPED = "skipped"

    @property
    def label(self) -> T:
        return LABELS[self]

    @property
    def short(self) -> str:
        return SHORT[self]


LABELS = {
    Verdict.ACCEPTED: T("通过", "Accepted"),
    Verdict.WRONG_ANSWER: T("答案错误", "Wrong answer"),
    Verdict.RUNTIME_ERROR: T("运行错误", "Runtime error"),
    Verdict.TIME_LIMIT_EXCEEDED: T("超时", "Time limit exceeded"),
    Verdict.MEMORY_LIMIT_EXCEEDED: T("超出内存限制", "Memory limit exceeded"),
    Verdict.OUTPUT_LIMIT_EXCEEDED: T("输出过多", "Output limit exceeded"),
    Verdict.TOO_SLOW: T("太慢", "Too slow"),
    Verdict.COMPILE_ERROR: T("编译错误", "Compile error"),
    Verdict.INTERNAL_ERROR: T("评测系统内部错误", "Internal error"),
    Verdict.SKIPPED: T("未运行", "Skipped"),
}

SHORT = {
    Verdict.ACCEPTED: "AC",
    Verdict.WRONG_ANSWER: "WA",
    Verdict.RUNTIME_ERROR: "RE",
    Verdict.TIME_LIMIT_EXCEEDED: "TLE",
    Verdict.MEMORY_LIMIT_EXCEEDED: "MLE",
    Verdict.OUTPUT_LIMIT_EXCEEDED: "OLE",
    Verdict.TOO_SLOW: "SLOW",
    Verdict.COMPILE_ERROR: "CE",
    Verdict.INTERNAL_ERROR: "IE",
    Verdict.SKIPPED: "-",
}

# The folders of submissions/ that `judge check` accepts.
FIXTURE_VERDICTS = frozenset(v.value for v in Verdict if v is not Verdict.SKIPPED)
