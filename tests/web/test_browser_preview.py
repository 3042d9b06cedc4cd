"""``python -m judge preview`` in a real browser (Playwright, Debian's Chromium): a new
package (a copy of problems/_template) from a phone's 360 px to a desk's 1366 px without
sideways scrolling or anything cut off, its two statements side by side on the desk and
stacked on the phone, math typeset by KaTeX; "Run examples" shows the public tests live;
saving a file reloads the page. One preview process (``--no-sandbox``) and one browser for
the module; screenshots in test-artifacts/screenshots/."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.web.layout import WIDTHS, misfits
from tests.web.support import ARTIFACTS, CHROMIUM
from tests.web.test_preview import command, public_names, template_copy

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SHOTS = ARTIFACTS.parent / "screenshots"


class Previewed:
    def __init__(self, url: str, folder: Path) -> None:
        self.url, self.folder = url, folder


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Chromium is not installed at {CHROMIUM} (scripts/setup.sh --test)")
    tmp = tmp_path_factory.mktemp("preview")
    folder = template_copy(tmp)
    for lang in ("zh", "en"):  # math, for KaTeX (the template's statements have none)
        with (folder / f"statement.{lang}.md").open("a", encoding="utf-8") as f:
            f.write("\n$$\\bar{x} = \\frac{1}{n} \\sum_{i} m_i x_i$$\n")
    with command(str(folder), tmp) as url:
        yield Previewed(url, folder)


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"preview-{name}.png"), full_page=True)


@pytest.mark.parametrize("width", WIDTHS)
def test_the_preview_fits_from_phone_to_desk(page, server, width):
    page.set_viewport_size({"width": width, "height": 900})
    page.goto("/")
    page.wait_for_selector(".cm-editor")
    page.wait_for_selector("#statement-en .katex, #statement-zh .katex")
    problems = misfits(page, f"the preview at {width}px", lang=None)
    assert not problems, "\n".join(problems)
    zh = page.locator("#column-zh").bounding_box()
    en = page.locator("#column-en").bounding_box()
    if width >= 1000:
        assert en["x"] > zh["x"] + zh["width"] - 1 and abs(en["y"] - zh["y"]) < 2
    else:
        assert en["y"] >= zh["y"] + zh["height"] - 1 and en["x"] == zh["x"]
    assert page.locator("#lint").is_visible() and page.locator("#no-sandbox").is_visible()
    shot(page, f"{width}")


def test_run_examples_shows_the_public_tests_live(page, server):
    page.goto("/?lang=en")
    page.wait_for_selector(".cm-editor")
    page.click("#run-button")  # the starter: rejected, on the public tests only
    page.wait_for_selector("#final-verdict .verdict", timeout=120_000)
    names = page.locator("#tests tr.test td.name code").all_inner_texts()
    assert names == public_names(server.folder)
    assert page.locator("#tests .hidden-tag").count() == 0
    assert page.locator("#throughput").is_hidden()
    assert page.locator("#final-verdict .verdict").get_attribute("data-verdict") != "accepted"

    reference = (server.folder / "reference.py").read_text(encoding="utf-8")
    page.evaluate("(code) => window.judgeEditor.setCode(code)", reference)
    page.click("#run-button")
    page.wait_for_selector('#final-verdict .verdict[data-verdict="accepted"]',
                           timeout=120_000)
    assert "passed" in page.locator("#status-text").inner_text()
    shot(page, "run")


def test_saving_a_file_reloads_the_page(page, server):
    page.goto("/?lang=en")
    page.wait_for_selector(".cm-editor")
    statement = server.folder / "statement.en.md"
    text = statement.read_text(encoding="utf-8")
    try:
        statement.write_text(text + "\nA line saved while the page was open.\n",
                             encoding="utf-8")
        page.wait_for_selector("#statement-en >> text=A line saved while the page was open.",
                               timeout=15_000)
    finally:
        statement.write_text(text, encoding="utf-8")
    # (a selector: a wait_for_function that polls runs its predicate outside the
    # DevTools call, where the page's CSP refuses the eval that compiles it)
    page.locator("#statement-en", has_text="A line saved while").wait_for(state="detached",
                                                                         timeout=15_000)
