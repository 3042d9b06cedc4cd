"""How a call into a runner can end other than with its result, as the grader's exceptions.

The submission's code raised (:class:`SubmissionError`), the file did not import
(:class:`ImportFailed`), or the process is gone (:class:`RunnerLost`, with the verdict its
end deserves: :func:`lost_verdict`). Every string kept from a runner's ERROR or
IMPORT_ERROR is capped (:data:`MAX_TYPE_CHARS` ...): the runner is the submission's process
and may say anything, at any length. ``judge.session`` re-exports these names, which is
where problems' ``tests.py`` import ``SubmissionError`` from.
"""

from __future__ import annotations

from typing import Any

from judge.i18n import T
from judge.verdict import Verdict
from sandbox.launch import Exit, ExitReason

# What is kept of a runner's ERROR / IMPORT_ERROR (the runner caps them too, but the
# runner is the submission's process).
MAX_TYPE_CHARS = 256  # the runner cuts a name at 200
MAX_MESSAGE_CHARS = 4000
MAX_TRACEBACK_CHARS = 8000
MAX_MISSING_NAMES = 20


def _text(value: Any, limit: int, default: str = "") -> str:
    """A string a runner sent, capped at ``limit`` characters (anything else: default)."""
    if value is None or isinstance(value, dict | list | tuple):
        return default
    text = value if isinstance(value, str) else str(value)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text) - limit} more)"


def _line(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class SubmissionError(Exception):
    """The submission's code raised. Carries the exception as data from the runner."""

    def __init__(self, info: dict[str, Any]) -> None:
        info = info if isinstance(info, dict) else {}
        self.type = _text(info.get("type"), MAX_TYPE_CHARS) or "Exception"
        self.message = _text(info.get("message"), MAX_MESSAGE_CHARS)
        self.traceback = _text(info.get("traceback"), MAX_TRACEBACK_CHARS)
        self.line = _line(info.get("line"))
        # Set by the grader, never by the runner: the kernel killed a process of the job
        # for memory (a DataLoader worker, say) before the code raised this.
        self.oom_killed = False
        super().__init__(f"{self.type}: {self.message}")

    def line_in(self, code: str) -> int | None:
        """The line the runner named, if it is a line of ``code`` holding code (not blank,
        not a comment): the runner is the submission's process, and a line number it
        makes up (code compiled at run time with a chosen line) would carry whatever the
        submission put in it. Otherwise None."""
        lines = code.splitlines()
        if self.line is None or not 1 <= self.line <= len(lines):
            return None
        text = lines[self.line - 1].strip()
        return self.line if text and not text.startswith("#") else None

    @property
    def is_memory(self) -> bool:
        text = self.message.lower()
        return (self.oom_killed or "MemoryError" in self.type
                or self.type == "OutOfMemoryError"
                or "can't allocate memory" in text or "out of memory" in text)

    def describe(self, hint: T | None = None) -> T:
        """What was raised, a ``hint`` (if any) after it, then the traceback."""
        head = f"{self.type}: {self.message}".strip()
        tb = f"\n{self.traceback.rstrip()}" if self.traceback else ""
        said = T(head, head) if hint is None else T(f"{head} —— {hint.zh}", f"{head} — {hint.en}")
        raised = T(f"抛出了异常 {said.zh}{tb}", f"raised {said.en}{tb}")
        if not self.oom_killed:
            return raised
        return T("超出内存限制：内核结束了这个任务的一个进程（例如 DataLoader 的 worker；"
                 "限制对主进程和它启动的所有进程合计），之后代码",
                 "ran out of memory: the kernel killed a process of the job (a DataLoader "
                 "worker, say; the limit counts the main process and every process it starts "
                 "together), and then the code ") + raised


class ImportFailed(Exception):
    """The file did not import, or lacks a required name."""

    def __init__(self, info: dict[str, Any]) -> None:
        info = info if isinstance(info, dict) else {}
        missing = info.get("missing")
        if isinstance(missing, list):
            missing = [_text(n, 100) for n in missing[:MAX_MISSING_NAMES]
                       if isinstance(n, str)] or None
        else:
            missing = None
        # Only what was checked is kept: the runner may send anything under these keys.
        self.info: dict[str, Any] = {
            "where": "fixture" if info.get("where") == "fixture" else "submission",
            "type": _text(info.get("type"), MAX_TYPE_CHARS) or "ImportError",
            "message": _text(info.get("message"), MAX_MESSAGE_CHARS),
            "traceback": _text(info.get("traceback"), MAX_TRACEBACK_CHARS),
            "line": _line(info.get("line")),
            "missing": missing,
        }
        self.where = self.info["where"]
        super().__init__(f"{self.info['type']}: {self.info['message']}")

    def describe(self) -> T:
        missing = self.info.get("missing")
        if missing:
            names = ", ".join(missing)
            return T(f"代码里缺少需要的名字：{names}", f"the file does not define {names}")
        head = f"{self.info.get('type')}: {self.info.get('message')}"
        tb = str(self.info.get("traceback") or "").rstrip()
        return T(f"导入代码时出错：{head}\n{tb}".rstrip(),
                 f"importing the file failed: {head}\n{tb}".rstrip())


class RunnerLost(BaseException):
    """The runner process is gone (limit, crash, timeout). A BaseException, so that a
    test's ``except Exception`` cannot swallow it."""

    def __init__(self, verdict: Verdict, message: T, exit: Exit | None = None) -> None:
        self.verdict = verdict
        self.message = message
        self.exit = exit
        super().__init__(message.en)


class Killed(Exception):
    """Raised by :meth:`Stream.kill` users: the grader ended the process on purpose."""


def lost_verdict(ex: Exit | None, limits_cpu_s: float, wall_s: float | None) -> RunnerLost:
    """The verdict for a runner that ended before answering."""
    reason = ex.reason if ex else ExitReason.WALL
    if reason is ExitReason.WALL:
        s = f"{wall_s:g}" if wall_s else "?"
        return RunnerLost(Verdict.TIME_LIMIT_EXCEEDED,
                          T(f"超过时间限制：{s} 秒内没有完成", f"did not finish within {s} s"), ex)
    if reason is ExitReason.CPU:
        return RunnerLost(Verdict.TIME_LIMIT_EXCEEDED,
                          T(f"用完了 {limits_cpu_s:g} 秒的 CPU 时间",
                            f"used up its {limits_cpu_s:g} s of CPU time"), ex)
    if reason is ExitReason.MEMORY:
        return RunnerLost(Verdict.MEMORY_LIMIT_EXCEEDED,
                          T("超出内存限制，进程被结束", "ran out of memory and was killed"), ex)
    if reason is ExitReason.OUTPUT:
        return RunnerLost(Verdict.OUTPUT_LIMIT_EXCEEDED,
                          T("输出（print）过多，进程被结束", "printed too much and was killed"), ex)
    if reason is ExitReason.KILLED:
        return RunnerLost(Verdict.RUNTIME_ERROR,
                          T("破坏了评测通道，进程被结束",
                            "broke the judge's channel and was killed"), ex)
    how = ex.describe() if ex else "?"
    return RunnerLost(Verdict.RUNTIME_ERROR,
                      T(f"进程意外结束（{how}）：是否调用了 sys.exit / os._exit，或者崩溃了？",
                        f"the process ended unexpectedly ({how}): did it call sys.exit or "
                        f"os._exit, or crash?"), ex)
