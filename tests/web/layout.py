"""Does a page fit its window: the layout sweeps' browser-side checks (tests/web/
test_browser_site.py sweeps the learner's and the admin's pages with them).

A sweep loads each page once and resizes the window through the widths, checking at each:
a resize reflows the page as a load at that width would (the layout is CSS; the editor
and the API docs follow resizes), and it costs a fraction of a load. The first width of a
sweep is where each page is loaded, so the sweeps alternate: one language from the phone
up, the other from the desk down."""

from __future__ import annotations

from collections.abc import Callable, Collection
from pathlib import Path

# The lower bound (360), a common phone (390), the width where the problem page
# once laid out ~940 px wide (900), a desk (1366).
WIDTHS = (360, 390, 900, 1366)
SHOT_WIDTHS = (390, 1366)  # every width is checked; these two are kept as screenshots
HTML_LANG = {"zh": "zh-CN", "en": "en"}

# What does not fit, measured in the page: its sideways scroll, its language, navigation
# links wrapped inside themselves (Chinese used to go one character a line), and elements
# cut off: outside the window, or outside an ancestor that hides overflow, with no
# ancestor that scrolls sideways in between (tables, code and display math scroll inside
# themselves by design). Only the outermost cut element is named; a 1-pixel box that hides
# its overflow is for screen readers only and is skipped.
FIT = """() => {
  const w = innerWidth;
  const name = (e) => e.tagName.toLowerCase() + (e.id ? "#" + e.id : "")
    + (typeof e.className === "string" && e.className.trim()
       ? "." + e.className.trim().split(/\\s+/).join(".") : "");
  const wrapped = [...document.querySelectorAll(
      "header.nav a, header.nav button, header.nav .username")]
    .filter((e) => !e.hidden
      && (e.getClientRects().length > 1 || e.getBoundingClientRect().height > 40))
    .map((e) => e.textContent.trim());
  const cut = [];
  const walk = (parent, clip) => {
    for (const e of parent.children) {
      const style = getComputedStyle(e);
      if (style.display === "none") continue;
      const r = e.getBoundingClientRect();
      if (clip && r.width > 1 && (r.left < clip.left - 1 || r.right > clip.right + 1)) {
        cut.push(`${name(e)} spans ${Math.round(r.left)}..${Math.round(r.right)} px, `
          + `room ${Math.round(clip.left)}..${Math.round(clip.right)}`);
        continue;
      }
      const o = style.overflowX;
      let inner = clip;
      if (o === "auto" || o === "scroll") inner = null;  // reachable by scrolling it
      else if (clip && (o === "hidden" || o === "clip")) {
        if (e.clientWidth <= 1) continue;  // visually hidden, for screen readers (KaTeX's MathML)
        const left = r.left + e.clientLeft;
        inner = { left: Math.max(clip.left, left),
                  right: Math.min(clip.right, left + e.clientWidth) };
      }
      walk(e, inner);
    }
  };
  walk(document.body, { left: 0, right: w });
  return { scroll: document.scrollingElement.scrollWidth, inner: w,
           lang: document.documentElement.getAttribute("lang"), wrapped, cut: cut.slice(0, 6) };
}"""
# Two animation frames: what the page's scripts do on a resize (the editor measures
# itself in one) has run.
SETTLED = "() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))"


def misfits(page, where: str, *, lang: str | None) -> list[str]:
    """What does not fit on the page as it is now; `lang` None skips the language check."""
    fit = page.evaluate(FIT)
    problems = []
    if fit["scroll"] > fit["inner"]:
        problems.append(f"{where} scrolls sideways: {fit['scroll']} px in {fit['inner']}")
    if lang is not None and fit["lang"] != HTML_LANG[lang]:
        problems.append(f"{where} is in {fit['lang']}, not {HTML_LANG[lang]}")
    if fit["wrapped"]:
        problems.append(f"{where}: navigation wraps inside {fit['wrapped']}")
    if fit["cut"]:
        problems.append(f"{where} cuts off {fit['cut']}")
    return problems


def opening(page, path: str, ready: str | None = None) -> Callable[[], None]:
    """What loads `path` in `page`, then waits for `ready` (a selector) if given."""
    def load() -> None:
        page.goto(path)
        if ready:
            page.wait_for_selector(ready)
    return load


def sweep(page, pages: dict[str, Callable[[], None]], lang: str, shots: Path, prefix: str,
          *, check: Callable[[str, str], list[str]] | None = None,
          not_ours: Collection[str] = ()) -> list[str]:
    """Open each page (`pages[label]()` loads it) and check it at every width, Chinese from
    the phone up, English from the desk down; a full-page screenshot of each in `shots`
    as {prefix}-{width}-{label}.jpg (at the widths in SHOT_WIDTHS). `check(label, where)`
    adds a page's own checks; the pages in `not_ours` (the API docs) are not checked for
    the page's language."""
    widths = WIDTHS if lang == "zh" else WIDTHS[::-1]
    shots.mkdir(parents=True, exist_ok=True)
    problems: list[str] = []
    for label, load in pages.items():
        page.set_viewport_size({"width": widths[0], "height": 900})
        load()
        for width in widths:
            if width != widths[0]:
                page.set_viewport_size({"width": width, "height": 900})
                page.evaluate(SETTLED)
            where = f"{label} at {width}px ({lang})"
            problems += misfits(page, where, lang=None if label in not_ours else lang)
            if check is not None:
                problems += check(label, where)
            if width in SHOT_WIDTHS:  # a phone and a desk: half the sweep's time went here
                # JPEG: 40 % quicker than PNG on these long pages, and smaller
                page.screenshot(path=str(shots / f"{prefix}-{width}-{label}.jpg"),
                                full_page=True, type="jpeg", quality=70)
    return problems
