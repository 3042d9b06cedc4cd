"""A speed check's timing as the submission page shows it: the ratio with its interval,
the median time per call of submission and reference for each kind of input, and the
pair ratios against the bar (an SVG drawn here, :func:`pair_plot`).

The numbers come from a report's ``throughput`` entries (``judge.report.ThroughputResult``
JSON). Newer workers add ``interval``, ``pair_ratios``, ``kinds`` and ``refined``; older
reports lack them, and everything here works without them. Entries are read defensively
(a worker is trusted, but a report is stored for years): every number must be finite and
every list is capped, so a malformed entry shows less, never breaks a page.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from markupsafe import Markup, escape

from judge.i18n import T

MAX_PAIRS = 200  # pair ratios kept per check (the report's own cap)
MAX_KINDS = 20
MAX_RUNS = 10  # rank runs combined (settings: rank_runs, at most 10)
ALL_INPUTS = T("全部输入", "all inputs")


def combined_ratio(ratios: list[float]) -> float:
    """The leaderboard's ratio from a submission's rank runs: their geometric mean (a
    ratio's errors are relative; a run on a slow minute of the machine counts as much as
    one on a quick minute, no more). 0.0 for none, or for any that is not positive."""
    return statistics.geometric_mean(ratios) if ratios and min(ratios) > 0 else 0.0


def combine(runs: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The checks of several rank runs of one submission (:func:`checks` dicts, oldest run
    first) as one: per check of the last run, the ratio, the interval's ends and each kind's
    median times are the geometric means of the runs' (an interval so combined is no
    narrower than the runs' own: it is not claimed to be); the pairs add up, the plot shows
    every run's pairs in order (thinned evenly to ``MAX_PAIRS``), and ``runs`` lists each
    run's ratio."""
    combined = []
    for last in runs[-1]:
        same = [x for run in runs for x in run if x["name"] == last["name"]]
        ratios = [x["ratio"] for x in same]
        bands = [x["interval"] for x in same]
        dots = [r for x in same for r in x["pair_ratios"]]
        step = len(dots) / MAX_PAIRS
        combined.append({
            **last, "ratio": combined_ratio(ratios), "runs": ratios, "refined": True,
            "pairs": sum(x["pairs"] for x in same),
            "interval": ([combined_ratio([b[0] for b in bands]),
                          combined_ratio([b[1] for b in bands])] if all(bands) else None),
            "kinds": _combined_kinds([x["kinds"] for x in same]),
            "pair_ratios": dots if step <= 1 else [dots[int(i * step)]
                                                   for i in range(MAX_PAIRS)]})
    return combined


def _combined_kinds(runs: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Each kind of input of the last run that every run timed, its times' geometric means."""
    found = []
    for k in runs[-1]:
        same = [x for kinds in runs for x in kinds if x["kind"] == k["kind"]]
        if len(same) == len(runs):
            found.append({"kind": k["kind"],
                          "sub_ms": combined_ratio([x["sub_ms"] for x in same]),
                          "ref_ms": combined_ratio([x["ref_ms"] for x in same])})
    return found


def _number(value: Any) -> float | None:
    """A finite float, else None (a bool is not a number here)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _interval(value: Any) -> list[float] | None:
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        return None
    lo, hi = _number(value[0]), _number(value[1])
    return [lo, hi] if lo is not None and hi is not None and lo <= hi else None


def _kinds(value: Any) -> list[dict[str, Any]]:
    kinds: list[dict[str, Any]] = []
    for item in value[:MAX_KINDS] if isinstance(value, list) else []:
        if not isinstance(item, dict):
            continue
        sub_ms, ref_ms = _number(item.get("sub_ms")), _number(item.get("ref_ms"))
        if sub_ms is None or ref_ms is None:
            continue
        kind = item.get("kind")
        kinds.append({"kind": kind[:80] if isinstance(kind, str) else None,
                      "sub_ms": sub_ms, "ref_ms": ref_ms})
    return kinds


def extras(entry: Any) -> dict[str, Any]:
    """The newer keys of one throughput entry, checked; absent or malformed ones left out."""
    if not isinstance(entry, dict):
        return {}
    found: dict[str, Any] = {}
    interval = _interval(entry.get("interval"))
    if interval is not None:
        found["interval"] = interval
    pairs = entry.get("pair_ratios")
    if isinstance(pairs, list):
        found["pair_ratios"] = [r for r in (_number(p) for p in pairs[:MAX_PAIRS])
                                if r is not None]
    kinds = _kinds(entry.get("kinds"))
    if kinds:
        found["kinds"] = kinds
    if isinstance(entry.get("refined"), bool):
        found["refined"] = entry["refined"]
    runs = entry.get("runs")
    if isinstance(runs, list):
        found["runs"] = [r for r in (_number(x) for x in runs[:MAX_RUNS]) if r is not None]
    return found


def with_extras(stored: dict[str, Any], raw: Any) -> dict[str, Any]:
    """A stored report (``Report.to_json``) with the newer keys of the posted one put back
    on its throughput entries, matched by position and name (a judge that already keeps
    them writes the same values)."""
    posted = raw.get("throughput") if isinstance(raw, dict) else None
    if not isinstance(posted, list):
        return stored
    for entry, source in zip(stored.get("throughput") or [], posted, strict=False):
        if isinstance(source, dict) and source.get("name") == entry.get("name"):
            entry.update(extras(source))
    return stored


def check(entry: Any) -> dict[str, Any] | None:
    """One measured speed check as the page shows it; None for one not measured."""
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
        return None
    ratio, bar = _number(entry.get("ratio")), _number(entry.get("min_ratio"))
    if ratio is None or bar is None:
        return None
    title = entry.get("title")
    sub_ms, ref_ms = _number(entry.get("sub_ms")), _number(entry.get("ref_ms"))
    shown: dict[str, Any] = {
        "name": entry["name"][:200], "device": str(entry.get("device", "cpu"))[:20],
        "verdict": str(entry.get("verdict", ""))[:32], "ratio": ratio, "min_ratio": bar,
        "pairs": int(_number(entry.get("pairs")) or 0), "interval": None, "pair_ratios": [],
        "kinds": [], "refined": False, "runs": [],
        "title": title if isinstance(title, dict) and set(title) == {"zh", "en"} else None}
    shown.update(extras(entry))
    if not shown["kinds"] and sub_ms is not None and ref_ms is not None:
        shown["kinds"] = [{"kind": None, "sub_ms": sub_ms, "ref_ms": ref_ms}]
    return shown


def checks(report: Any) -> list[dict[str, Any]]:
    """The measured speed checks of a report (or of a ranking's ``checks``)."""
    entries = report.get("throughput") if isinstance(report, dict) else None
    if entries is None and isinstance(report, dict):
        entries = report.get("checks")
    found = [check(e) for e in entries] if isinstance(entries, list) else []
    return [c for c in found if c is not None]


def ranking_of(raw: Any) -> tuple[dict[str, Any] | None, float | None]:
    """A rank job's result: (``{"checks", "device"}``, slowest refined ratio), or
    (None, None) when it ranks nothing (its run was not accepted: the machine was too
    noisy, or no check came back refined)."""
    if not isinstance(raw, dict) or raw.get("verdict") != "accepted":
        return None, None
    refined = [c for c in checks(raw) if c["refined"]]
    if not refined:
        return None, None
    device = str(raw.get("device", "cpu"))[:20]
    return {"checks": refined, "device": device}, min(c["ratio"] for c in refined)


def shown_checks(report: Any, ranking: Any) -> list[dict[str, Any]]:
    """What the page shows per check: the refined numbers where the ranking has them
    (``refined`` True), else the verdict run's (provisional). The verdict stays the
    verdict run's."""
    refined = {c["name"]: c for c in checks(ranking)}
    shown = []
    for c in checks(report):
        better = refined.get(c["name"])
        if better is not None:
            c = {**better, "verdict": c["verdict"], "title": c["title"] or better["title"],
                 "refined": True}
        else:
            c = {**c, "refined": False}
        shown.append(c)
    return shown


# ------------------------------------------------------------------ the plot

WIDTH, HEIGHT = 320, 132
LEFT, RIGHT, TOP, BOTTOM = 40, 8, 12, 26


def _fmt(x: float) -> str:
    return f"{x:.1f}"


def _scale(values: list[float]) -> tuple[float, float]:
    """The y range: every value with a margin, never empty."""
    lo, hi = min(values), max(values)
    if hi - lo < 1e-9:
        lo, hi = lo * 0.9, hi * 1.1 + 1e-3
    pad = (hi - lo) * 0.08
    return max(0.0, lo - pad), hi + pad


def pair_plot(c: dict[str, Any], lang: str) -> Markup:
    """The check's pair ratios (one dot per timed pair, in order) against the bar (a red
    dashed line) and the ratio (a solid line, its interval shaded). Only numbers and
    fixed labels go in, so the SVG is safe to embed; it scales to its container
    (viewBox, width 100%)."""
    pairs: list[float] = c["pair_ratios"]
    bar, ratio = c["min_ratio"], c["ratio"]
    band = c["interval"]
    lo, hi = _scale([*pairs, bar, ratio, *(band or [])])
    span_x = max(1, len(pairs) - 1)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def y(v: float) -> str:
        return _fmt(TOP + plot_h * (hi - v) / (hi - lo))

    def x(i: int) -> str:
        return _fmt(LEFT + plot_w * (i / span_x if len(pairs) > 1 else 0.5))

    t = T("每个点是一对交替计时的调用：参考用时与提交用时之比", "each dot is one pair of "
          "interleaved timed calls: the reference's time over the submission's")
    label_bar = T(f"门槛 {bar:.2f}×", f"bar {bar:.2f}×")(lang)
    runs = len(c.get("runs") or [])
    label_ratio = (T(f"{runs} 次平均 {ratio:.2f}×", f"mean of {runs} runs {ratio:.2f}×")
                   if runs > 1 else T(f"中位数 {ratio:.2f}×", f"median {ratio:.2f}×"))(lang)
    axis = T(f"第 1–{len(pairs)} 对", f"pairs 1–{len(pairs)}")(lang)
    parts = [
        f'<svg class="pair-plot" viewBox="0 0 {WIDTH} {HEIGHT}" width="100%" '
        f'role="img" xmlns="http://www.w3.org/2000/svg" data-points="{len(pairs)}">',
        f"<title>{escape(t(lang))}</title>",
        f'<rect class="frame" x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}"/>',
    ]
    if band is not None:
        top, bottom = float(y(band[1])), float(y(band[0]))
        parts.append(f'<rect class="interval" x="{LEFT}" y="{_fmt(top)}" width="{plot_w}" '
                     f'height="{_fmt(max(0.5, bottom - top))}"/>')
    parts += [f'<circle class="pt" cx="{x(i)}" cy="{y(v)}" r="2"/>' for i, v in enumerate(pairs)]
    parts += [
        f'<line class="ratio-line" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y(ratio)}" '
        f'y2="{y(ratio)}"/>',
        f'<line class="bar-line" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y(bar)}" y2="{y(bar)}"/>',
        f'<text class="tick" x="{LEFT - 3}" y="{y(hi)}" dy="8" text-anchor="end">'
        f"{hi:.2f}×</text>",
        f'<text class="tick" x="{LEFT - 3}" y="{y(lo)}" text-anchor="end">{lo:.2f}×</text>',
        f'<text class="label bar-label" x="{WIDTH - RIGHT - 2}" y="{y(bar)}" dy="-3" '
        f'text-anchor="end">{escape(label_bar)}</text>',
        f'<text class="label ratio-label" x="{LEFT + 2}" y="{y(ratio)}" dy="-3">'
        f"{escape(label_ratio)}</text>",
        f'<text class="tick" x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 8}" '
        f'text-anchor="middle">{escape(axis)}</text>',
        "</svg>",
    ]
    return Markup("".join(parts))
