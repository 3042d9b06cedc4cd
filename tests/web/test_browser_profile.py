"""Browser test of the learner's own pages against a real ``python -m judge serve``: a
learner fails padding-collate, then solves it sharing the code; the problem page then
offers the reference with its explanation (not before); the history compares the two
submissions; the profile shows the solve. At 390 px nothing scrolls sideways on these
pages. Screenshots go to test-artifacts/browser/."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.web.served import ROOT, serving
from tests.web.support import CHROMIUM, shot
from tests.web.test_browser import register, submit_and_wait

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ACCEPTED = (ROOT / "problems/padding-collate/submissions/accepted/pad_sequence.py").read_text()
SYNTAX_ERROR = "def collate(batch:\n"
NO_SIDEWAYS = "document.documentElement.scrollWidth <= window.innerWidth"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Chromium is not installed at {CHROMIUM} (scripts/setup.sh --test "
                    f"installs it; JUDGE_CHROMIUM points elsewhere)")
    with serving(tmp_path_factory.mktemp("served"), args=("--no-pack-prebuild",)) as served:
        yield served


def test_solutions_diff_and_profile_in_the_browser(page, server):
    name = register(page)
    page.goto("/problems/padding-collate")
    page.wait_for_selector(".cm-editor")
    assert page.locator("#solutions").count() == 0
    assert page.locator("#share").is_checked() is False
    submit_and_wait(page, SYNTAX_ERROR)
    page.goto("/problems/padding-collate")
    page.wait_for_selector(".cm-editor")
    assert page.locator("#solutions").count() == 0 and page.locator("#solutions-locked").count()
    page.check("#share")
    submit_and_wait(page, ACCEPTED)
    assert page.locator("#final-verdict").inner_text() == "通过"

    page.goto("/problems/padding-collate")
    page.click("#reference-solution summary")
    explanation = page.locator("#solution-explanation")
    assert "逐步说明" in explanation.inner_text()  # its h1 is hidden, as a statement's
    assert "input_ids[attention_mask]" in page.locator("#reference-code").inner_text()
    shot(page, "profile-01-solutions")

    page.goto("/submissions")
    page.locator("#history input[type=checkbox]").nth(0).check()
    page.locator("#history input[type=checkbox]").nth(1).check()
    page.click("#compare button")
    page.wait_for_url("**/diff/**")
    assert page.locator("#diff-lines tr.add").count() > 5
    assert page.locator("#diff-lines tr.del").count() == 1
    shot(page, "profile-02-diff")
    diff_path = page.url.replace(server.url, "")

    page.goto("/submissions")
    page.click("#my-profile")
    page.wait_for_url(f"**/users/{name}")
    assert "1 / " in page.locator("#solved-count").inner_text()
    assert "变长序列的填充 collate" in page.locator("#solved").inner_text()
    assert page.locator("#activity rect[data-count='2']").count() == 1
    shot(page, "profile-03-profile")

    page.set_viewport_size({"width": 390, "height": 844})
    for path in (f"/users/{name}", "/submissions", diff_path):
        page.goto(path)
        assert page.evaluate(NO_SIDEWAYS), f"{path} scrolls sideways at 390 px"
    page.goto("/submissions?verdict=accepted")
    assert page.locator("#history tbody tr").count() == 1
    shot(page, "profile-04-history-phone")
