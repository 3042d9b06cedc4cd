"""Plain-text rendering of reports for terminals (``python -m judge`` and the practice CLI):
one line per case, the failure message indented under it, then a summary."""

from __future__ import annotations

import os
import sys
import unicodedata

from judge.i18n import T
from judge.report import Report, TestResult, ThroughputResult
from judge.verdict import Verdict

COLOR = sys.stdout.isatty() and os.environ.get("NO_COLOR") is None
MARKS = {Verdict.ACCEPTED: ("✓", "32"), Verdict.SKIPPED: ("-", "33")}


def paint(text: str, code: str) -> str:
    return f"\033[{code}m{text}\033[0m" if COLOR else text


def width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def pad(text: str, n: int) -> str:
    return text + " " * max(0, n - width(text))


def case_line(t: TestResult, lang: str, name_width: int = 28) -> str:
    mark, color = MARKS.get(t.verdict, ("✗", "31"))
    tail = "" if t.verdict is Verdict.ACCEPTED else f"  [{t.verdict.label(lang)}]"
    time = f"{t.time_ms:.0f} ms" if t.verdict is not Verdict.SKIPPED else ""
    return (f" {paint(mark, color)} {pad(t.name, name_width)} "
            f"{paint(pad(t.category(lang), 30), '90')} {time:>8}{tail}")


def indent(text: str, spaces: int = 5) -> str:
    return "\n".join(" " * spaces + line for line in text.rstrip().splitlines())


def summary(report: Report, lang: str) -> str:
    v = report.verdict
    color = "32" if v is Verdict.ACCEPTED else "31"
    skipped = report.skipped
    text = T(f"{v.label.zh}：{report.passed} / {report.total} 个用例通过",
             f"{v.label.en}: {report.passed} / {report.total} cases passed")(lang)
    if skipped and all(t.needs_cuda for t in report.tests if t.unavailable):
        text += T(f"（{skipped} 个未运行：需要本机没有的 CUDA）",
                  f" ({skipped} skipped: they need CUDA, which this machine lacks)")(lang)
    elif skipped:
        text += T(f"（{skipped} 个未运行：本机无法运行，原因见各用例）",
                  f" ({skipped} skipped: this machine cannot run them, see each case)")(lang)
    if report.cpu_only:
        text += T("；结果只代表 CPU 用例", "; the verdict covers the CPU cases only")(lang)
    return paint(text, color)


def render(report: Report, lang: str, *, show_hidden_messages: bool = True,
           case_lines: bool = True) -> str:
    """The report as text. ``case_lines=False`` when the case lines were already shown live
    (``practice/judge.py submit``): only the failures' messages and the summary follow."""
    lines = []
    if report.verdict is Verdict.COMPILE_ERROR or (report.message(lang) and not report.tests):
        lines.append(indent(report.message(lang), 1))
    name_width = max([len(t.name) for t in report.tests] + [12]) + 1
    for t in report.tests:
        hidden = t.visibility == "hidden" and not show_hidden_messages
        shown = t.message(lang) and t.verdict is not Verdict.SKIPPED and not hidden
        if case_lines:
            lines.append(case_line(t, lang, name_width))
        elif shown or (t.output and t.verdict is not Verdict.ACCEPTED):
            # a passing public case's note follows a ✓, a failure's message a ✗
            mark, color = MARKS.get(t.verdict, ("✗", "31"))
            lines.append(f" {paint(mark, color)} {t.name}")
        if shown:
            lines.append(indent(t.message(lang)))
        if t.output and t.verdict is not Verdict.ACCEPTED:
            label = T("输出：", "output:")(lang)
            lines.append(paint(indent(label + "\n" + t.output.rstrip()[-2000:]), "90"))
    for tp in report.throughput:
        lines.append(throughput_line(tp, lang))
    if report.verdict is Verdict.INTERNAL_ERROR and report.tests and report.message(lang):
        lines.append(indent(report.message(lang), 1))
    lines.append(summary(report, lang))
    return "\n".join(lines)


def throughput_line(tp: ThroughputResult, lang: str) -> str:
    ok = tp.verdict is Verdict.ACCEPTED
    mark = paint("✓", "32") if ok else paint("✗", "31")
    if tp.verdict is Verdict.SKIPPED:
        text = T("未测：需要 CUDA，本机没有", "not measured: needs CUDA, none here")(lang)
        return f" {paint('-', '33')} {pad(tp.name, 28)} {text}"
    ratio, need = tp.ratio, tp.min_ratio
    text = T(f"速度 {ratio:.2f}× 参考解答（至少 {need:.2f}×）" if ratio is not None else "未测",
             f"speed {ratio:.2f}× the reference (at least {need:.2f}×)"
             if ratio is not None else "not measured")(lang)
    return f" {mark} {pad(tp.name, 28)} {text}"
