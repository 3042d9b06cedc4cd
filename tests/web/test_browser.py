"""Browser tests: Playwright drives Debian's Chromium (headless) against a real
``python -m judge serve``. A learner registers, edits padding-collate in the editor,
submits and watches each test land, reads their history, switches the language, and sees
an error message full of HTML shown as text. Screenshots go to test-artifacts/."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tests.web.served import ROOT, serving
from tests.web.support import CHROMIUM, shot

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ACCEPTED = (ROOT / "problems/padding-collate/submissions/accepted/pad_sequence.py").read_text()
HTML_ERROR = '''def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    raise ValueError('<img src=x onerror="window.__xss = 1"><b id="injected">bold</b>')
'''
# Records, as the page changes, how many tests have a verdict and whether the final
# verdict is shown yet (proof that tests land one by one, not all at the end), and every
# status line shown.
WATCH_TESTS = """
window.__landings = [];
window.__statuses = [];
document.addEventListener("DOMContentLoaded", () => {
  const tests = document.getElementById("tests");
  if (!tests) return;
  new MutationObserver(() => {
    const rows = [...tests.querySelectorAll("tr.test")];
    const landed = rows.filter((r) => r.querySelector(".verdict:not(.verdict-pending)")).length;
    const done = !!document.querySelector("#final-verdict .verdict");
    window.__landings.push({ landed, total: rows.length, done });
    const status = document.getElementById("status-text").textContent;
    if (window.__statuses[window.__statuses.length - 1] !== status) window.__statuses.push(status);
  }).observe(document.getElementById("submission"), { childList: true, subtree: true });
});
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Chromium is not installed at {CHROMIUM} (scripts/setup.sh --test "
                    f"installs it; JUDGE_CHROMIUM points elsewhere)")
    with serving(tmp_path_factory.mktemp("served"), args=("--no-pack-prebuild",)) as served:
        yield served


def register(page, name: str | None = None) -> str:
    name = name or f"u{uuid.uuid4().hex[:8]}"
    page.goto("/register")
    page.fill("#username", name)
    page.fill("#password", "password1")
    page.fill("#password2", "password1")
    page.click("#register-button")
    page.wait_for_selector("#current-user")
    return name


def set_code(page, code: str) -> None:
    """Replace the editor's content the way a paste does (typing a whole file key by key
    would fight the editor's auto-indent)."""
    page.click(".cm-content")
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(code)


def submit_and_wait(page, code: str) -> None:
    page.add_init_script(WATCH_TESTS)
    set_code(page, code)
    page.click("#submit-button")
    page.wait_for_url("**/submissions/*")
    page.wait_for_selector("#final-verdict .verdict", timeout=120_000)


def test_solve_padding_collate_in_the_browser(page, server):
    name = register(page)
    shot(page, "01-problems")
    assert page.locator("#problem-list").inner_text().count("变长序列的填充") == 1
    page.click("text=变长序列的填充 collate")
    page.wait_for_selector(".cm-editor")  # CodeMirror replaced the textarea
    assert page.locator("#code").is_hidden()
    assert page.locator("#statement h2").first.inner_text() == "函数签名"
    shot(page, "02-problem")

    # typing: Tab indents by four spaces, and the draft survives a reload
    page.click(".cm-content")
    page.keyboard.press("Control+End")
    page.keyboard.type("\n# 我的草稿")
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")
    page.keyboard.type("x = 1")
    code = page.evaluate("window.judgeEditor.getCode()")
    assert code.endswith("# 我的草稿\n    x = 1")
    page.reload()
    page.wait_for_selector(".cm-editor")
    assert page.evaluate("window.judgeEditor.getCode()") == code
    assert page.locator("#draft-status").inner_text() == "已恢复上次的草稿"
    page.once("dialog", lambda d: d.accept())
    page.click("#reset-code")
    starter = page.evaluate("JSON.parse(document.getElementById('starter-code').textContent)")
    assert page.evaluate("window.judgeEditor.getCode()") == starter

    submit_and_wait(page, ACCEPTED)
    shot(page, "03-accepted")
    assert page.locator("#final-verdict").inner_text() == "通过"
    rows = page.locator("#tests tr.test")
    total = rows.count()
    assert total >= 10
    assert page.locator("#tests .verdict-accepted").count() == total
    assert "隐藏" in page.locator("#tests").inner_text()
    landings = page.evaluate("window.__landings")
    partial = [s for s in landings if 0 < s["landed"] < s["total"] and not s["done"]]
    assert partial, f"the tests did not land one by one: {landings[-5:]}"
    assert page.locator("#status-text").inner_text() == f"通过 {total} / {total} 个测试"
    # the speed check is named by its title, not the internal throughput:large_batch
    statuses = page.evaluate("window.__statuses")
    assert "正在进行速度检查：大批次（B = 256，长度至多 512）" in statuses, statuses
    assert not any("throughput:" in s for s in statuses), statuses

    # history, then the problem list shows it solved
    page.click("text=提交记录")
    history = page.locator("#history").inner_text()
    assert "变长序列的填充 collate" in history and "通过" in history
    shot(page, "04-history")
    page.goto("/")
    assert "已通过" in page.locator("#problem-list").inner_text()
    page.goto("/leaderboard")
    assert name in page.locator("#board").inner_text()


def test_an_error_message_full_of_html_is_shown_as_text(page, server):
    register(page)
    page.goto("/problems/padding-collate")
    page.wait_for_selector(".cm-editor")
    submit_and_wait(page, HTML_ERROR)
    shot(page, "05-html-in-message")
    assert page.locator("#final-verdict").inner_text() == "运行错误"
    message = page.locator("#tests pre.message").first.inner_text()
    assert '<img src=x onerror="window.__xss = 1">' in message
    assert page.locator("#injected").count() == 0 and page.locator("#tests img").count() == 0
    assert page.evaluate("window.__xss") is None
    page.reload()  # the server-rendered page escapes it too
    assert page.locator("#injected").count() == 0
    assert page.evaluate("window.__xss") is None
    assert "<b id=" in page.locator("#tests pre.message").first.inner_text()


def test_the_language_switch_is_remembered(page, server):
    name = register(page)
    assert page.locator("html").get_attribute("lang") == "zh-CN"
    page.click("#lang-switch")
    page.wait_for_selector("html[lang=en]")
    assert "Problems" in page.locator("header").inner_text()
    page.click("text=Padding collate for variable-length sequences")
    page.wait_for_selector(".cm-editor")
    assert page.locator("#statement h2").first.inner_text() == "Signature"
    shot(page, "06-english")
    # a fresh browser: the choice comes back with the account
    page.context.clear_cookies()
    page.goto("/login")
    assert page.locator("html").get_attribute("lang") == "zh-CN"
    page.fill("#username", name)
    page.fill("#password", "password1")
    page.click("#login-button")
    page.wait_for_selector("#current-user")
    assert page.locator("html").get_attribute("lang") == "en"
    page.click("#lang-switch")
    page.wait_for_selector("html[lang=zh-CN]")


def test_without_the_editor_script_the_textarea_still_submits(page, server, page_errors):
    """Progressive enhancement: if the editor bundle cannot load, the plain form works."""
    page_errors.allow("net::ERR_FAILED")  # the editor bundle, blocked below
    register(page)
    page.route("**/static/dist/editor.js", lambda route: route.abort())
    page.goto("/problems/padding-collate")
    textarea = page.locator("#code")
    assert textarea.is_visible() and page.locator(".cm-editor").count() == 0
    textarea.fill("def collate(batch:\n")  # a syntax error: judged in a moment
    page.click("#submit-button")
    page.wait_for_url("**/submissions/*")
    page.wait_for_selector("#final-verdict .verdict", timeout=120_000)
    assert page.locator("#final-verdict").inner_text() == "编译错误"
    assert "SyntaxError" in page.locator("#overall-message").inner_text()
