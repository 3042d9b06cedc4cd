"""Problem statements: Markdown to HTML that is safe to put in a page.

Statements come from problem packages, which admins will upload: they are untrusted as
HTML. markdown-it renders with raw HTML off (``<script>`` comes out as text), Pygments
highlights fenced code, and nh3 then keeps only an allow-list of tags, attributes and URL
schemes whatever the Markdown produced.
"""

from __future__ import annotations

import functools
import html

import nh3
from markdown_it import MarkdownIt
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

CSS_CLASS = "hl"  # web/static/pygments.css styles `.hl` blocks (see make_css below)

TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4", "h5",
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


_md = MarkdownIt("commonmark", {"html": False, "highlight": _highlight}).enable("table")


def render(text: str) -> str:
    """Sanitised HTML for a statement written in Markdown."""
    return sanitise(_md.render(text))


def sanitise(fragment: str) -> str:
    return nh3.clean(fragment, tags=TAGS, attributes=ATTRIBUTES,
                     url_schemes={"http", "https", "mailto"},
                     filter_style_properties={"text-align"}, link_rel="noopener noreferrer")


@functools.lru_cache(maxsize=256)
def highlight_python(code: str) -> str:
    """A Python snippet (a public example's source) as a highlighted <pre> block. Pages
    show the same few snippets over and over (a problem's examples, a submission's code):
    Pygments takes milliseconds for each, so the most recent are kept."""
    return _highlight(code, "python", None)


def make_css() -> str:
    """The stylesheet committed as web/static/pygments.css."""
    return HtmlFormatter(style="friendly").get_style_defs(f".{CSS_CLASS}")
