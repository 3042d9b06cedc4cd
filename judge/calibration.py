"""The calibration report of a package check: every judged file's verdict, the case that
caught it, its speed ratios with an interval, and for each speed check a suggested
``min_ratio`` between the slowest accepted file and the fastest too_slow one.

``python -m judge check`` prints it as a table; the admin version page shows the same from
the validation's stored files (:class:`judge.events.CheckedFile`).

The interval of a ratio is the one the speed check reports (``interval`` in its JSON) when
it does; otherwise it is the median's approximate 95 % interval from the spread of the
timed pairs, ``ratio * (1 ± 1.57 * IQR / sqrt(pairs))`` (the notch of a box plot, McGill,
Tukey and Larsen 1978): a rough guide, not a promise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from judge.events import CheckedFile
from judge.report import Report
from judge.verdict import Verdict

NOTCH = 1.57
# The fixtures a hidden case must catch (docs/writing-problems.md §6): a bug that only a
# public case catches is one a learner fixes by reading the example, and the hidden cases
# would miss its variants. ``check`` warns, ``check --strict`` (CI, for the bundled
# problems) and ``lint --grade`` fail.
CAUGHT_BY_HIDDEN = ("wrong_answer", "runtime_error")


def speed_entries(report: Report) -> tuple[dict[str, Any], ...]:
    """What the calibration keeps of a report's speed checks."""
    entries = []
    for t in report.throughput:
        data = t.to_json()
        interval = data.get("interval")
        if not (isinstance(interval, list | tuple) and len(interval) == 2):
            interval = notch(t.ratio, t.spread, t.pairs)
        entries.append({"name": t.name, "verdict": str(t.verdict), "ratio": t.ratio,
                        "interval": None if interval is None else [float(x) for x in interval],
                        "min_ratio": t.min_ratio})
    return tuple(entries)


def notch(ratio: float | None, spread: float, pairs: int) -> list[float] | None:
    if ratio is None or pairs < 2:
        return None
    half = NOTCH * spread / math.sqrt(pairs)
    return [round(ratio * max(0.0, 1 - half), 4), round(ratio * (1 + half), 4)]


def caught_by(report: Report) -> tuple[str | None, bool]:
    """(the case that caught a rejected file, whether it is public): its first failing
    hidden case, else its first failing case; (None, False) when no case failed."""
    failing = [t for t in report.tests if t.verdict not in (Verdict.ACCEPTED, Verdict.SKIPPED)]
    hidden = [t for t in failing if t.visibility == "hidden"]
    if hidden:
        return hidden[0].name, False
    if failing:
        return failing[0].name, True
    return None, False


@dataclass(frozen=True)
class Bar:
    """A suggested ``min_ratio`` for one speed check."""

    name: str
    min_ratio: float  # the current one
    slowest_accepted: tuple[str, float] | None  # (file, the low end of its interval)
    fastest_too_slow: tuple[str, float] | None  # (file, the high end of its interval)

    @property
    def suggested(self) -> float | None:
        """The geometric middle of the gap, when the accepted files are all faster. A
        too_slow file cut short reports a ratio near 0: the gap's low end is then taken as
        a tenth of its high end, so the bar stays within reach of the accepted files."""
        if self.slowest_accepted is None or self.fastest_too_slow is None:
            return None
        low, high = self.fastest_too_slow[1], self.slowest_accepted[1]
        if high <= low:
            return None
        return round(math.sqrt(max(low, high / 10) * high), 3)

    def describe(self) -> str:
        parts = [f"{self.name} (min_ratio {self.min_ratio:g})"]
        if self.slowest_accepted:
            parts.append(f"slowest accepted {self.slowest_accepted[0]} >= "
                         f"{self.slowest_accepted[1]:.3f}")
        if self.fastest_too_slow:
            parts.append(f"fastest too_slow {self.fastest_too_slow[0]} <= "
                         f"{self.fastest_too_slow[1]:.3f}")
        if self.suggested is not None:
            parts.append(f"suggested min_ratio {self.suggested:g}")
        elif self.slowest_accepted and self.fastest_too_slow:
            parts.append("no bar separates them: their intervals overlap")
        else:
            parts.append("measure both kinds of fixture to choose a bar")
        return ": ".join(parts[:1]) + ": " + "; ".join(parts[1:])


def _ends(entry: dict[str, Any]) -> tuple[float, float] | None:
    if entry.get("ratio") is None:
        return None
    interval = entry.get("interval") or [entry["ratio"], entry["ratio"]]
    return float(interval[0]), float(interval[1])


def bars(files: list[CheckedFile]) -> list[Bar]:
    """A suggested bar per speed check, from the accepted files' (the reference's too)
    and the too_slow files' measured ratios."""
    found: dict[str, dict[str, Any]] = {}
    for f in files:
        for entry in f.speed:
            ends = _ends(entry)
            slot = found.setdefault(entry["name"], {"min_ratio": entry.get("min_ratio", 0.0),
                                                    "acc": None, "slow": None})
            if ends is None:
                continue
            if f.expected == "accepted" and (slot["acc"] is None or ends[0] < slot["acc"][1]):
                slot["acc"] = (f.label, ends[0])
            if f.expected == "too_slow" and (slot["slow"] is None or ends[1] > slot["slow"][1]):
                slot["slow"] = (f.label, ends[1])
    return [Bar(name, float(s["min_ratio"]), s["acc"], s["slow"]) for name, s in found.items()]


def speed_text(entry: dict[str, Any]) -> str:
    if entry.get("ratio") is None:
        return f"{entry['name']} not measured"
    text = f"{entry['name']} {entry['ratio']:.3g}x"
    if entry.get("interval"):
        lo, hi = entry["interval"]
        text += f" [{lo:.2f}, {hi:.2f}]"
    return text


def table(files: list[CheckedFile]) -> str:
    """The calibration table as text (``python -m judge check``)."""
    head = ("file", "expected", "got", "caught by", "speed ratio [interval]", "time")
    rows = [head]
    for f in files:
        caught = "" if f.caught_by is None else (
            f.caught_by + (" (public only!)" if f.caught_public
                           and f.expected in CAUGHT_BY_HIDDEN else ""))
        rows.append((("✓ " if f.ok else "✗ ") + f.label, f.expected,
                     str(f.verdict) if f.verdict else "…", caught,
                     ", ".join(speed_text(s) for s in f.speed), f"{f.time_ms / 1000:.1f}s"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
             for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines += [f"bar {bar.describe()}" for bar in bars(files)]
    return "\n".join(lines)
