"""The learner's site without a browser: statement math through the sanitiser, colour
contrast of both themes (site and Pygments), the one language rule, and the API docs
served from the site's own files (tests/web/test_browser_site.py drives a real browser)."""

from __future__ import annotations

import json
import re

import pytest

from tests.web.support import ROOT, browser_login, csrf, make_user, rows
from web import markdown
from web.contrast import AA, legible, ratio
from web.language import accept_language
from web.routes import api_docs

STATIC = ROOT / "web" / "static"


# ------------------------------------------------------------------------------ math

def test_dollar_math_becomes_katex_markup_inside_the_allow_list():
    html = markdown.render("Loss $(wx - y)^2$ here.\n\n$$g = \\frac{1}{n}\\sum_i \\ell_i$$\n\n"
                           "| a | $-2\\sum xy$ |\n|---|---|\n| 1 | 2 |\n")
    assert '<span class="math inline">(wx - y)^2</span>' in html
    assert '<div class="math block">\ng = \\frac{1}{n}\\sum_i \\ell_i\n</div>' in html
    assert '<th><span class="math inline">-2\\sum xy</span></th>' in html


def test_prices_and_spaced_dollars_stay_text():
    html = markdown.render("It costs $5 and $6, or $ x $.")
    assert "math" not in html and "$5 and $6" in html


def test_math_cannot_smuggle_markup_and_scripts_are_still_stripped():
    html = markdown.render("$<script>alert(1)</script>$\n\n$$\n<img src=x onerror=alert(1)>\n$$\n\n"
                           "<div class=\"math block\" onclick=\"alert(1)\">raw</div>\n\n"
                           "<script>alert(2)</script>")
    assert not re.search(r"<(script|img|div class=\"math block\" on)", html), html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html  # the TeX, as text
    # the sanitiser itself: div only with the math classes, nothing else on it
    clean = markdown.sanitise('<div class="math block evil" style="x" onclick="y">a</div>'
                              '<div id="d" class="other">b</div><script>z</script>')
    assert clean == '<div class="math block">a</div><div class="">b</div>'


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_grad_accumulation_statement_has_its_math_marked(lang):
    text = (ROOT / f"problems/grad-accumulation/statement.{lang}.md").read_text()
    html = markdown.render(text)
    assert html.count('class="math block"') == 1
    assert html.count('class="math inline"') >= 8
    assert re.search(r'<th>[^<]*<span class="math inline">-2\\sum xy</span></th>', html)
    assert "$$" not in html and "$y = w" not in html


# -------------------------------------------------------------------------- contrast

def _block(css: str, selector: str) -> dict[str, str]:
    body = re.search(re.escape(selector) + r"\s*\{(.*?)\n\}", css, re.S).group(1)
    return dict(re.findall(r"--([\w-]+):\s*(#[0-9a-fA-F]{3,6})", body))


THEMES = {"light": ":root {", "dark": ':root[data-theme="dark"] {'}
# text colour on background, as the stylesheet uses them
PAIRS = [("fg", "bg"), ("fg", "panel"), ("muted", "bg"), ("muted", "panel"), ("link", "bg"),
         ("link", "panel"), ("accent", "panel"), ("tag-fg", "tag-bg"), ("soft-fg", "soft"),
         ("soft-fg", "panel"), ("error-fg", "error-bg"), ("fg", "note-bg"), ("link", "me"),
         ("on-badge", "ok"), ("on-badge", "bad"), ("on-badge", "warn"), ("on-badge", "purple")]
PAIRS += [(f"syn-{k}", "bg") for k in ("keyword", "string", "comment", "number", "def",
                                        "type", "meta")]


@pytest.mark.parametrize("theme", THEMES)
def test_every_text_colour_of_the_site_meets_wcag_aa(theme):
    css = (STATIC / "style.css").read_text()
    colours = _block(css, THEMES[theme][:-2])
    low = [(fg, bg, round(ratio(colours[fg], colours[bg]), 2)) for fg, bg in PAIRS
           if ratio(colours[fg], colours[bg]) < AA]
    assert not low, f"{theme}: below 4.5:1: {low}"


def test_pygments_css_is_generated_and_legible_in_both_themes():
    css = (STATIC / "pygments.css").read_text()
    assert css == markdown.make_css(), "regenerate web/static/pygments.css (see its header)"
    for name, bg, selector in markdown.THEMES.values():
        rules = re.findall("^" + re.escape(selector) + r" \.[\w-]+ \{([^}]*)\}", css, re.M)
        colours = [c for rule in rules
                   for c in re.findall(r"(?<![-\w])color: (#[0-9A-Fa-f]+)", rule)]
        assert len(colours) > 20, name
        low = sorted({c for c in colours if ratio(c, bg) < AA})
        assert not low, f"{name}: colours under 4.5:1 on {bg}: {low}"
    # the comment colour (the statements' example outputs are comments) was 2.6:1
    comment = re.search(r"^\.hl \.c \{ color: (#\w+)", css, re.M).group(1)
    assert ratio(comment, "#f6f8fa") >= AA and ratio("#60a0b0", "#f6f8fa") < 3


def test_legible_keeps_good_colours_and_fixes_bad_ones():
    assert legible("#000000", "#ffffff") == "#000000"
    assert ratio(legible("#60a0b0", "#f6f8fa"), "#f6f8fa") >= AA
    assert ratio(legible("#303030", "#0d1117"), "#0d1117") >= AA


# -------------------------------------------------------------------------- language

@pytest.mark.parametrize("header, want", [
    ("en-US,en;q=0.9", "en"), ("zh-CN,zh;q=0.9,en;q=0.8", "zh"), ("fr, en;q=0.5", "en"),
    ("en;q=0.3, zh-TW;q=0.7", "zh"), ("de-DE", None), ("", None), ("en;q=0, zh;q=0.1", "zh"),
    ("EN-gb", "en"), ("en;q=abc", None),
])
def test_accept_language_picks_the_most_preferred_of_ours(header, want):
    assert accept_language(header) == want


def _lang(html: str) -> str:
    return re.search(r'<html lang="([^"]+)"', html).group(1)


def test_pages_and_error_pages_follow_accept_language_then_default_to_chinese(client):
    en = {"Accept-Language": "en-GB,en;q=0.9"}
    for path in ("/", "/login", "/register", "/leaderboard", "/problems/add-one", "/nowhere"):
        assert _lang(client.get(path, headers=en).text) == "en", path
        assert _lang(client.get(path).text) == "zh-CN", path
    assert client.get("/nowhere", headers=en).status_code == 404
    assert "Not found" in client.get("/nowhere", headers=en).text
    assert client.get("/api/nowhere", headers=en).json() == {"detail": "Not found"}


def test_the_language_link_wins_over_accept_language_on_every_page(client):
    r = client.post("/lang", data={"lang": "zh", "next": "/", "csrf_token": csrf(client)},
                    follow_redirects=False)
    assert r.status_code == 303
    en = {"Accept-Language": "en"}
    for path in ("/", "/login", "/problems/add-one", "/nowhere", "/problems/nope"):
        assert _lang(client.get(path, headers=en).text) == "zh-CN", path


def test_a_choice_made_before_registering_is_the_accounts(client, app):
    client.post("/lang", data={"lang": "en", "csrf_token": csrf(client)})
    r = client.post("/register", data={"username": "bob", "password": "password1",
                                       "password2": "password1",
                                       "csrf_token": csrf(client, "/register")},
                    follow_redirects=False)
    assert r.status_code == 303
    assert _lang(client.get("/").text) == "en"
    assert rows(app, "select lang from users where username = 'bob'")[0][0] == "en"
    client.cookies.clear()  # another browser, Chinese by default: the account says English
    browser_login(client, "bob")
    assert _lang(client.get("/", headers={"Accept-Language": "zh"}).text) == "en"


def test_logging_in_keeps_the_choice_and_logging_out_keeps_the_language(client, app):
    make_user(client, "carol")  # an account in Chinese
    client.post("/lang", data={"lang": "en", "csrf_token": csrf(client)})
    browser_login(client, "carol")
    assert _lang(client.get("/submissions").text) == "en"
    assert rows(app, "select lang from users where username = 'carol'")[0][0] == "en"
    client.post("/logout", data={"csrf_token": csrf(client)})
    assert _lang(client.get("/").text) == "en"


def test_without_a_browser_choice_logging_in_brings_the_accounts_language(client):
    make_user(client, "dan")
    browser_login(client, "dan")
    client.post("/lang", data={"lang": "en", "csrf_token": csrf(client)})
    client.cookies.clear()
    browser_login(client, "dan")  # this browser chose nothing: the account decides
    assert _lang(client.get("/", headers={"Accept-Language": "zh"}).text) == "en"
    assert client.cookies.get("lang") == "en"  # and the browser remembers it


def test_an_account_made_through_the_api_speaks_the_requests_language(client, app):
    r = client.post("/api/users", json={"username": "erin", "password": "password1"},
                    headers={"Accept-Language": "en-US,en;q=0.9"})
    assert r.status_code == 201
    assert rows(app, "select lang from users where username = 'erin'")[0][0] == "en"


# ---------------------------------------------------------------------- the API docs

@pytest.mark.parametrize("path, asset", [("/docs", "swagger-ui-bundle.js"),
                                         ("/redoc", "redoc.standalone.js")])
def test_api_docs_load_nothing_from_other_hosts(client, path, asset):
    if not (api_docs.DOCS / asset).is_file():
        pytest.skip("the front-end is not built (scripts/build_frontend.sh)")
    r = client.get(path)
    assert r.status_code == 200
    urls = re.findall(r'(?:src|href|url)\s*[=:]\s*["\']([^"\']+)', r.text)
    assert f"/static/dist/docs/{asset}" in urls
    assert not [u for u in urls if "//" in u], urls
    assert "googleapis" not in r.text and "cdn." not in r.text
    csp = r.headers["content-security-policy"]
    assert "default-src 'self'" in csp and "connect-src 'self'" in csp and "https:" not in csp
    assert client.get(f"/static/dist/docs/{asset}").status_code == 200
    assert client.get("/openapi.json").json()["info"]["title"] == "torch-judge"


def test_api_docs_not_built_say_how_to_build_them(client, monkeypatch, tmp_path):
    monkeypatch.setattr(api_docs, "DOCS", tmp_path)
    r = client.get("/docs", headers={"Accept-Language": "en"})
    assert r.status_code == 503 and "scripts/build_frontend.sh" in r.text
    assert client.get("/redoc").status_code == 503


# ----------------------------------------------------------------------- page markup

def test_pages_have_a_skip_link_a_theme_toggle_and_a_labelled_progress_bar(client, alice):
    browser_login(client, "alice")
    html = client.get("/problems/add-one").text
    assert '<a class="skip-link" href="#main">' in html and 'id="main"' in html
    assert 'href="#solve" id="skip-to-editor"' in html and 'id="theme-switch"' in html
    assert 'src="/static/theme.js"' in html
    form = {"code": "def add_one(x):\n  return x\n",
            "csrf_token": csrf(client, "/problems/add-one")}
    r = client.post("/problems/add-one/submit", data=form, follow_redirects=False)
    page = client.get(r.headers["location"]).text
    assert re.search(r'<progress id="progress" aria-label="测试进度"', page)
    i18n = json.loads(re.search(r'<script type="application/json" id="i18n">(.*?)</script>',
                                page, re.S).group(1))
    assert set(i18n["phases"]) == {"waiting_for_quiet_machine", "measuring", "ranking"}
    assert i18n["phases"]["waiting_for_quiet_machine"].startswith("等待评测机空闲")
