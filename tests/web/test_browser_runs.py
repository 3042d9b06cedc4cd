""""Run examples" in a real browser (Playwright, Debian's Chromium) against a real
``python -m judge serve``: the button posts the editor's code with the session cookie and
CSRF header, the public tests land live under the editor, a second run replaces the
first, a refusal is shown, and nothing reaches the history."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.web.served import ROOT, serving
from tests.web.support import CHROMIUM, shot
from tests.web.test_browser import register, set_code

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ACCEPTED = (ROOT / "problems/padding-collate/submissions/accepted/pad_sequence.py").read_text()
# Does not import, after 4 s: the run is still in flight when the third click comes (a
# syntax error was judged so quickly that the third click sometimes came after it).
SLOW_IMPORT_ERROR = "import time\ntime.sleep(4)\nimport no_such_module_here\n"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Chromium is not installed at {CHROMIUM} (scripts/setup.sh --test)")
    with serving(tmp_path_factory.mktemp("served"), args=("--no-pack-prebuild",)) as served:
        yield served


def run_and_wait(page, code: str) -> str:
    set_code(page, code)
    page.click("#run-button")
    page.wait_for_selector("#run-result #final-verdict .verdict", timeout=120_000)
    return page.get_attribute("#run-result #final-verdict .verdict", "data-verdict") or ""


def test_run_examples_from_the_problem_page(page, server, page_errors):
    public = [e["name"] for e in httpx.get(
        f"{server.url}/api/problems/padding-collate").json()["examples"]]
    register(page)
    page.goto("/problems/padding-collate")
    assert page.is_hidden("#run-result")
    assert run_and_wait(page, ACCEPTED) == "accepted"
    assert page.url.endswith("/problems/padding-collate")  # stayed on the page
    names = page.eval_on_selector_all("#run-result tr.test", "rows => rows.map(r => "
                                      "[r.querySelector('code').textContent, "
                                      "r.dataset.visibility])")
    assert names == [[n, "public"] for n in public]
    assert "通过" in page.text_content("#run-result #status-text")
    assert "公开用例" in page.text_content("#run-result #status-text")
    shot(page, "run-examples-accepted")

    # a second run replaces the first, live; a third while it runs is refused and says why
    page_errors.allow("429")
    set_code(page, SLOW_IMPORT_ERROR)
    page.click("#run-button")
    page.wait_for_selector("#run-button:not([disabled])")  # not an eval'd predicate: CSP
    page.click("#run-button")
    page.wait_for_selector("#run-error:not([hidden])")
    assert "样例运行" in page.text_content("#run-error")
    page.wait_for_selector("#run-result #final-verdict .verdict[data-verdict=compile_error]",
                           timeout=120_000)
    assert page.locator("#run-result tr.test .verdict[data-verdict=accepted]").count() == 0
    shot(page, "run-examples-refused")
    page.set_viewport_size({"width": 390, "height": 900})  # a phone: nothing scrolls sideways
    assert page.evaluate("document.scrollingElement.scrollWidth <= innerWidth")
    assert page.evaluate("() => [...document.querySelectorAll('#run-result .verdict')]"
                         ".every((e) => e.getBoundingClientRect().right <= innerWidth)")
    shot(page, "run-examples-390")

    page.goto("/submissions")
    assert "还没有提交" in page.text_content("main")
