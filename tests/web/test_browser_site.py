"""The learner's site in a real browser (Playwright, Debian's Chromium): every learner page
(the API docs included) and every admin page at 360, 390, 900 and 1366 px in both languages
without sideways scrolling or anything cut off (tests/web/layout.py; screenshots in
test-artifacts/screenshots/), math typeset by KaTeX, /docs and /redoc with
every request to another host blocked, the language choice through registration and
login, dark mode and the editor's colours, the keyboard (skip links, Ctrl+Enter), and the
status line's phases. One server and one browser for the module."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
import uuid
import zipfile
from pathlib import Path
from urllib.parse import urlparse

import httpx
import pytest

from tests.web.layout import opening, sweep
from tests.web.served import ROOT, serving
from tests.web.support import ARTIFACTS, CHROMIUM

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SHOTS = ARTIFACTS.parent / "screenshots"
LOCALES = {"zh": "zh-CN", "en": "en-US"}
SYNTAX_ERROR = "def collate(batch:\n"

# Parts of the limits box outside it or under the editor panel.
LIMITS_HIDDEN = """() => {
  const box = document.getElementById("limits").getBoundingClientRect();
  const solve = document.getElementById("solve").getBoundingClientRect();
  const sideBySide = solve.top < box.bottom && solve.left > box.left;
  return [...document.querySelectorAll("#limits dt, #limits dd")].filter((e) => {
    const r = e.getBoundingClientRect();
    return r.right > box.right + 1 || (sideBySide && r.right > solve.left)
      || e.scrollWidth > e.clientWidth + 1;
  }).map((e) => e.textContent.trim());
}"""
# A verdict badge outside the viewport (the tables used to push them off a phone).
VERDICT_HIDDEN = """() => [...document.querySelectorAll("main .verdict")]
  .some((e) => e.getBoundingClientRect().right > window.innerWidth)"""
FAKE_EVENTS = """
window.__sources = [];
window.EventSource = class {
  constructor(url) { this.url = url; this.readyState = 1; window.__sources.push(this); }
  close() { this.readyState = 2; }
};
window.EventSource.CLOSED = 2;
window.__emit = (ev) => window.__sources[0].onmessage({ data: JSON.stringify(ev) });
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Chromium is not installed at {CHROMIUM} (scripts/setup.sh --test)")
    with serving(tmp_path_factory.mktemp("served"), args=("--no-pack-prebuild",)) as served:
        yield served


@pytest.fixture(scope="module")
def slugs(server) -> list[str]:
    return [p["slug"] for p in httpx.get(f"{server.url}/api/problems").json()]


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def new_context(browser, server, lang: str = "zh", **options):
    options.setdefault("viewport", {"width": 1366, "height": 900})
    context = browser.new_context(locale=LOCALES[lang], base_url=server.url, **options)
    context.set_default_timeout(20_000)
    return context


def register(page, password: str = "password1") -> str:
    name = f"u{uuid.uuid4().hex[:8]}"
    page.goto("/register")
    page.fill("#username", name)
    page.fill("#password", password)
    page.fill("#password2", password)
    page.click("#register-button")
    page.wait_for_selector("#current-user")
    return name


def judged_submission(server, name: str, code: str = SYNTAX_ERROR) -> int:
    """A submission of ``name``'s, judged (a syntax error: judged at once)."""
    token = httpx.post(f"{server.url}/api/token",
                       data={"username": name, "password": "password1"}).json()["access_token"]
    headers = {"Authorization": f"Bearer {token}"}
    r = httpx.post(f"{server.url}/api/submissions", headers=headers,
                   json={"problem": "padding-collate", "code": code})
    assert r.status_code == 202, r.text
    sid = r.json()["id"]
    deadline = time.monotonic() + 120
    url = f"{server.url}/api/submissions/{sid}"
    while httpx.get(url, headers=headers).json()["status"] != "done":
        assert time.monotonic() < deadline, "the submission was not judged in 120 s"
        time.sleep(0.3)
    return sid


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_every_learner_page_fits_from_phone_to_desk(browser, server, slugs, lang):
    context = new_context(browser, server, lang)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    name = register(page)  # in the browser's language (Accept-Language)
    sid = judged_submission(server, name)
    other = judged_submission(server, name, SYNTAX_ERROR + "\n# a second try\nx = [1, 2\n")
    pages = {"problems": opening(page, "/"),
             **{s: opening(page, f"/problems/{s}", ".cm-editor") for s in slugs},
             **{label: opening(page, path) for label, path in (
                 ("submission", f"/submissions/{sid}"), ("history", "/submissions"),
                 ("profile", f"/users/{name}"), ("diff", f"/submissions/{sid}/diff/{other}"),
                 ("leaderboard", "/leaderboard"), ("login", "/login"),
                 ("register", "/register"), ("error", "/problems/no-such-problem"))},
             "docs": opening(page, "/docs", ".swagger-ui .opblock"),
             "redoc": opening(page, "/redoc", "[data-section-id]")}

    def own_checks(label: str, where: str) -> list[str]:
        if label in ("submission", "history") and page.evaluate(VERDICT_HIDDEN):
            return [f"{where}: a verdict is off-screen"]
        if label == "grad-accumulation" and (hidden := page.evaluate(LIMITS_HIDDEN)):
            return [f"{where}: the limits box hides {hidden}"]
        return []

    problems = sweep(page, pages, lang, SHOTS, lang, check=own_checks,
                     not_ours=("docs", "redoc"))
    context.close()
    assert not problems, "\n".join(problems)
    assert not errors, errors


ADMIN = "root"
# A refused upload's reason names the offending path: a long one must wrap, not widen.
REFUSED_ZIP = {"name": "refused.zip", "mimeType": "application/zip"}


@pytest.fixture(scope="module")
def admin(server) -> str:
    """An admin account on the module's server, made by the CLI as a deployment does."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUDGE_")}
    made = subprocess.run(
        [sys.executable, "-m", "judge", "admin", "create-user", ADMIN, "--admin",
         "--password-stdin", "--data-dir", str(server.data_dir)],
        input="password1\n", text=True, capture_output=True, cwd=ROOT, env=env)
    assert made.returncode == 0, made.stderr
    return ADMIN


def refused_upload(page):
    """What opens the problem bank with an upload refused (a path with '..' in the zip)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("../" + "a_long_file_name" * 8 + ".py", "x = 1")

    def load() -> None:
        page.goto("/admin/problems")
        page.set_input_files("#package-file", {**REFUSED_ZIP, "buffer": buffer.getvalue()})
        page.click("#upload-button")
        page.wait_for_selector("#upload-error")
    return load


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_every_admin_page_fits_from_phone_to_desk(browser, server, admin, lang):
    context = new_context(browser, server, lang)
    # logging in carries this browser's choice into the account
    context.add_cookies([{"name": "lang", "value": lang, "url": server.url}])
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    judged_submission(server, admin)  # the problem's admin page lists a submission
    page.goto("/login?next=/admin/problems")
    page.fill("#username", admin)
    page.fill("#password", "password1")
    page.click("#login-button")
    page.wait_for_selector("#bank")
    newest = {slug: page.get_attribute(
        f"#bank tr[data-slug={slug}] a[href^='/admin/versions/']", "href")
        for slug in ("padding-collate", "grad-accumulation")}
    grad = newest["grad-accumulation"]  # the version page previews its math

    def edit_form() -> None:
        page.goto(f"{grad}/edit")
        page.click("#more-files summary")  # the other files' text boxes too

    old, new = (v.rsplit("/", 1)[1] for v in newest.values())
    pages = {"bank": opening(page, "/admin/problems"), "upload-refused": refused_upload(page),
             "problem": opening(page, "/admin/problems/padding-collate"),
             "version": opening(page, grad, "#statement-preview .katex"),
             "compare": opening(page, f"/admin/compare?old={old}&new={new}"),
             "edit": edit_form, "users": opening(page, "/admin/users"),
             "audit": opening(page, "/admin/audit")}
    problems = sweep(page, pages, lang, SHOTS, f"admin-{lang}")
    context.close()
    assert not problems, "\n".join(problems)
    assert not errors, errors


def test_math_is_typeset_in_paragraphs_and_tables(page, server):
    page.goto("/problems/grad-accumulation")
    page.wait_for_selector(".statement .katex")
    assert page.locator(".statement .katex-display").count() == 1
    assert page.locator(".statement p .katex, .statement li .katex").count() >= 8
    assert page.locator(".statement th .katex").count() == 1
    assert page.locator(".statement .math-error").count() == 0
    assert "\\frac" not in page.locator("#statement").inner_text()  # no raw TeX shown
    # KaTeX's own fonts, from this site
    assert page.evaluate("document.fonts.check('16px KaTeX_Main')")


@pytest.mark.parametrize("path, ready", [("/docs", ".swagger-ui .info .title"),
                                         ("/redoc", "h1")])
def test_api_docs_work_with_every_outside_request_blocked(page, server, page_errors, path,
                                                         ready):
    # ReDoc's footer logo is hard-wired to cdn.redoc.ly: the docs' CSP blocks it before it
    # reaches the network (and ReDoc hides the image); nothing else names another host
    page_errors.allow("https://cdn.redoc.ly/redoc/logo-mini.svg")
    outside: list[str] = []

    def only_here(route):
        if urlparse(route.request.url).hostname == "127.0.0.1":
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    page.route("**/*", only_here)
    page.goto(path)
    title = page.wait_for_selector(ready, timeout=30_000)
    assert "torch-judge" in title.inner_text()
    if path == "/docs":
        page.wait_for_selector(".opblock")
        assert page.locator(".opblock").count() >= 5  # the operations are listed
        assert page.locator(".opblock-summary-path", has_text="/api/submissions").count() >= 1
    else:
        page.get_by_text("/api/submissions", exact=False).first.wait_for(timeout=30_000)
    shot(page, f"api{path.replace('/', '-')}-offline")
    assert outside == [], f"requests to other hosts: {outside}"


def test_the_language_chosen_before_registering_or_logging_in_is_kept(page, server,
                                                                     page_errors):
    page_errors.allow("status of 404")  # the error page visited at the end
    page.goto("/")
    assert page.locator("html").get_attribute("lang") == "zh-CN"  # Accept-Language zh-CN
    page.click("#lang-switch")
    page.wait_for_selector("html[lang=en]")
    name = register(page)
    assert page.locator("html").get_attribute("lang") == "en"
    page.click("text=Log out")
    page.wait_for_selector("text=Log in")
    assert page.locator("html").get_attribute("lang") == "en"
    # a fresh browser in Chinese picks English again, then logs in: still English
    page.context.clear_cookies()
    page.goto("/login")
    assert page.locator("html").get_attribute("lang") == "zh-CN"
    page.click("#lang-switch")
    page.wait_for_selector("html[lang=en]")
    page.fill("#username", name)
    page.fill("#password", "password1")
    page.click("#login-button")
    page.wait_for_selector("#current-user")
    assert page.locator("html").get_attribute("lang") == "en"
    page.goto("/no-such-page")  # error pages follow the same rule
    assert page.locator("html").get_attribute("lang") == "en"
    assert "Not found" in page.locator("#error-message").inner_text()


CONTRAST = """(sel) => {
  const lum = (c) => {
    const [r, g, b] = c.match(/\\d+(\\.\\d+)?/g).slice(0, 3).map(Number).map((v) => {
      v /= 255; return v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const el = document.querySelector(sel);
  let bgEl = el; let bg = getComputedStyle(bgEl).backgroundColor;
  while (bg === "rgba(0, 0, 0, 0)" && bgEl.parentElement) {
    bgEl = bgEl.parentElement;
    bg = getComputedStyle(bgEl).backgroundColor;
  }
  const [a, b] = [lum(getComputedStyle(el).color), lum(bg)].sort((x, y) => y - x);
  return (a + 0.05) / (b + 0.05);
}"""


def test_dark_mode_follows_the_system_and_the_toggle_is_remembered(browser, server):
    context = new_context(browser, server, color_scheme="dark")
    page = context.new_page()
    page.goto("/problems/padding-collate")
    page.wait_for_selector(".cm-editor .tok-comment")
    assert page.locator("html").get_attribute("data-theme") == "dark"
    editor_bg = page.evaluate(
        "getComputedStyle(document.querySelector('.cm-editor')).backgroundColor")
    assert editor_bg == "rgb(13, 17, 23)"  # the editor follows the theme
    for selector in (".cm-editor .tok-comment", ".cm-editor .tok-keyword", ".statement .hl .c1",
                     "footer", ".limits dt"):
        if page.locator(selector).count():
            assert page.evaluate(CONTRAST, selector) >= 4.5, f"dark: {selector}"
    shot(page, "theme-dark-problem")
    page.click("#theme-switch")
    assert page.locator("html").get_attribute("data-theme") == "light"
    page.reload()
    page.wait_for_selector(".cm-editor")
    assert page.locator("html").get_attribute("data-theme") == "light"  # remembered
    for selector in (".cm-editor .tok-comment", ".statement .hl .c1", "#examples .hl .c1"):
        if page.locator(selector).count():
            assert page.evaluate(CONTRAST, selector) >= 4.5, f"light: {selector}"
    page.click("#theme-switch")  # back to what the system says: follow it again
    assert page.evaluate("localStorage.getItem('torch-judge:theme')") is None
    assert page.locator("html").get_attribute("data-theme") == "dark"
    context.close()


def test_keyboard_skip_links_reach_the_editor_and_ctrl_enter_submits(page, server):
    register(page)
    page.goto("/problems/padding-collate")
    page.wait_for_selector(".cm-editor")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.getAttribute('href')") == "#main"
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "skip-to-editor"
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.classList.contains('cm-content')")
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(SYNTAX_ERROR)
    page.keyboard.press("Control+Enter")
    page.wait_for_url("**/submissions/*")
    page.wait_for_selector("#final-verdict .verdict", timeout=120_000)
    assert page.locator("#progress").get_attribute("aria-label") == "测试进度"


def test_ctrl_enter_submits_from_the_plain_code_box_too(page, server, page_errors):
    page_errors.allow("net::ERR_FAILED")  # the editor bundle, blocked below
    register(page)
    page.route("**/static/dist/editor.js", lambda route: route.abort())
    page.goto("/problems/padding-collate")
    page.fill("#code", SYNTAX_ERROR)
    page.press("#code", "Control+Enter")
    page.wait_for_url("**/submissions/*")


def test_the_editor_is_usable_on_a_tablet(browser, server):
    context = new_context(browser, server, viewport={"width": 820, "height": 1180},
                          has_touch=True, is_mobile=True)
    page = context.new_page()
    page.goto("/problems/padding-collate")
    page.wait_for_selector(".cm-editor")
    box = page.locator(".cm-editor").bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 820 and box["height"] >= 300
    assert page.evaluate("document.scrollingElement.scrollWidth") <= 820
    page.locator(".cm-content").tap()
    page.keyboard.press("Control+End")
    page.keyboard.type("\n# from a tablet")
    assert page.evaluate("window.judgeEditor.getCode()").endswith("# from a tablet")
    shot(page, "tablet-820-padding-collate")
    context.close()


def test_the_status_line_names_each_phase_it_waits_in(page, server):
    name = register(page)
    sid = judged_submission(server, name)

    def as_running(route):  # the page as it is while judging: the script follows events
        html = route.fetch().text().replace('data-status="done"', 'data-status="running"', 1)
        route.fulfill(body=html, content_type="text/html; charset=utf-8")

    page.route(f"**/submissions/{sid}", as_running)
    page.add_init_script(FAKE_EVENTS)
    page.goto(f"/submissions/{sid}")
    # polled from here: wait_for_function's own polling compiles its predicate with eval
    # outside the DevTools call, which the page's CSP (script-src 'self') refuses
    deadline = time.monotonic() + 20
    while page.evaluate("window.__sources.length") != 1:
        assert time.monotonic() < deadline, "the page opened no event stream"
        time.sleep(0.05)
    status = page.locator("#status-text")
    page.evaluate("__emit({event: 'queued', position: 2})")
    assert status.inner_text() == "排队中（前面还有 2 个）"
    page.evaluate("__emit({event: 'start', total: 1, "
                  "tests: [{name: 'a', visibility: 'public', category: 'x'}]})")
    page.evaluate("__emit({event: 'phase', phase: 'waiting_for_quiet_machine'})")
    assert status.inner_text().startswith("等待评测机空闲后再计时")
    page.evaluate("__emit({event: 'phase', phase: 'measuring'})")
    assert status.inner_text() == "正在测量速度…"
    page.evaluate("__emit({event: 'phase', phase: 'something_new'})")  # unknown: ignored
    assert status.inner_text() == "正在测量速度…"
    page.evaluate("__emit({event: 'phase', phase: 'ranking'})")
    assert status.inner_text() == "正在为排行榜测速…"
    page.evaluate("__emit({event: 'done', verdict: 'accepted', passed: 1, total: 1})")
    assert status.inner_text() == "通过 1 / 1 个测试"
