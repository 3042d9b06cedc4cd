"""Problem statements: Markdown to HTML that is safe to put in a page.

Statements come from problem packages, which admins will upload: they are untrusted as
HTML. markdown-it renders with raw HTML off (``<script>`` comes out as text), Pygments
highlights fenced code, and nh3 then keeps only an allow-list of tags, attributes and URL
schemes whatever the Markdown produced.

Math: ``$...$`` and ``$$...$$`` (mdit-py-plugins' dollarmath, pandoc's rules: no space
inside the dollars, no digit after the closing one, so "$5 and $6" stays text) become
``<span class="math inline">TeX</span>`` and ``<div class="math block">TeX</div>`` with the
TeX escaped as text; static/dist/math.js (KaTeX, from npm) typesets them in the browser.
The allow-list gains only ``div`` with the classes ``math`` and ``block``.
"""

from __future__ import annotations

import functools
import html

import nh3
from markdown_it import MarkdownIt
from mdit_py_plugins.dollarmath import dollarmath_plugin
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.style import Style
from pygments.styles import get_style_by_name
from pygments.util import ClassNotFound

from web.contrast import legible_style as legible_style_text

CSS_CLASS = "hl"  # web/static/pygments.css styles `.hl` blocks (see make_css below)

TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "del", "div", "em", "h1", "h2", "h3", "h4", "h5",
    "h6", "hr", "i", "img", "kbd", "li", "ol", "p", "pre", "span", "strong", "sub", "sup",
    "table", "tbody", "td", "th", "thead", "tr", "ul",
}
ATTRIBUTES = {
    "a": {"href", "title"},
    "img": {"src", "alt", "title"},
    "code": {"class"},
    "pre": {"class"},
    "span": {"class"},
    "th": {"style"},
    "td": {"style"},
    "ol": {"start"},
}
CLASSES = {"div": {"math", "block"}}  # display math; span keeps any class (Pygments, math)

_formatter = HtmlFormatter(nowrap=True)


def _highlight(code: str, lang: str, _attrs) -> str:
    try:
        lexer = get_lexer_by_name(lang or "text")
    except ClassNotFound:
        lexer = get_lexer_by_name("text")
    body = highlight(code, lexer, _formatter)
    safe_lang = "".join(ch for ch in lang if ch.isalnum() or ch in "-_+")
    return (f'<pre class="{CSS_CLASS}"><code class="language-{html.escape(safe_lang)}">'
            f"{body}</code></pre>")


_md = (MarkdownIt("commonmark", {"html": False, "highlight": _highlight}).enable("table")
       .use(dollarmath_plugin, allow_space=False, allow_digits=False))


def render(text: str) -> str:
    """Sanitised HTML for a statement written in Markdown."""
    return sanitise(_md.render(text))


def sanitise(fragment: str) -> str:
    return nh3.clean(fragment, tags=TAGS, attributes=ATTRIBUTES, allowed_classes=CLASSES,
                     url_schemes={"http", "https", "mailto"},
                     filter_style_properties={"text-align"}, link_rel="noopener noreferrer")


@functools.lru_cache(maxsize=256)
def highlight_python(code: str) -> str:
    """A Python snippet (a public example's source) as a highlighted <pre> block. Pages
    show the same few snippets over and over (a problem's examples, a submission's code):
    Pygments takes milliseconds for each, so the most recent are kept."""
    return _highlight(code, "python", None)


# The code background of each theme (static/style.css's --panel) and the Pygments style
# whose colours are made legible on it.
THEMES = {"light": ("friendly", "#f6f8fa", f".{CSS_CLASS}"),
          "dark": ("github-dark", "#161b22", f':root[data-theme="dark"] .{CSS_CLASS}')}


def legible_style(name: str, background: str) -> type[Style]:
    """Pygments' style ``name`` on ``background``, every text colour at least WCAG AA."""
    base = get_style_by_name(name)
    styles = {token: legible_style_text(text, background) for token, text in base.styles.items()}
    return type(f"Legible{base.__name__}", (base,),
                {"styles": styles, "background_color": background})


def make_css() -> str:
    """The stylesheet committed as web/static/pygments.css: both themes."""
    head = ('/* Pygments "friendly" (light) and "github-dark" (dark, under [data-theme=dark]) '
            'for .hl blocks, colours raised to WCAG AA;\n   regenerate with: python -c '
            '"from web.markdown import make_css; print(make_css(), end=\'\')" > '
            'web/static/pygments.css */\n')
    return head + "".join(HtmlFormatter(style=legible_style(name, bg)).get_style_defs(sel) + "\n"
                          for name, bg, sel in THEMES.values())
