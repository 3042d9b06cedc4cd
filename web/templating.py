"""Rendering server-side pages: the Jinja2 environment and the context every page gets.

Templates autoescape everything; the only ``|safe`` values are the statement (sanitised by
``web.markdown``) and code highlighted by Pygments (which escapes its input). Text shown
in both languages is written as ``t("中文", "English")`` beside each other in templates.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates
from jinja2 import pass_context

from judge.i18n import T
from judge.verdict import LABELS, SHORT, Verdict
from web.language import request_lang
from web.markdown import highlight_python
from web.security import csrf_token
from web.timing import pair_plot

# What the audit log and the version lists show for the names stored in the database.
ACTIONS = {
    "add-version": T("添加版本", "add a version"), "validate": T("验证", "validate"),
    "publish": T("发布", "publish"), "unpublish": T("取消发布", "unpublish"),
    "delete-version": T("删除版本", "delete a version"),
    "rejudge": T("重测", "rejudge"), "create-user": T("创建用户", "create a user"),
    "promote": T("设为管理员", "make admin"), "demote": T("取消管理员", "revoke admin"),
    "disable": T("停用账号", "disable the account"),
    "enable": T("启用账号", "enable the account"),
}
ORIGINS = {"upload": T("上传", "upload"), "edit": T("编辑", "edit"),
           "cli": T("命令行", "command line"), "bundled": T("内置", "bundled")}

HERE = Path(__file__).resolve().parent
EDITOR_BUNDLE = HERE / "static" / "dist" / "editor.js"
MATH_BUNDLE = HERE / "static" / "dist" / "math.js"  # KaTeX (scripts/build_frontend.sh)


def make_templates() -> Jinja2Templates:
    templates = Jinja2Templates(directory=str(HERE / "templates"))
    env = templates.env
    # Templates are part of the installed code: no look at their files' mtimes per page
    # (restart the server after editing one)
    env.auto_reload = False
    env.filters["python"] = highlight_python
    env.filters["utc"] = _utc
    env.filters["ratio"] = lambda r: "—" if r is None else f"{r:.2f}×"
    env.filters["ms"] = lambda v: "" if v is None else f"{v:.0f} ms"
    env.filters["ms_call"] = _ms_call
    env.globals["pair_plot"] = pair_plot
    env.globals["verdict_short"] = lambda v: SHORT[Verdict(v)] if v else ""
    env.filters["action_label"] = _labeller(ACTIONS)
    env.filters["origin_label"] = _labeller(ORIGINS)
    return templates


def _labeller(labels: dict[str, T]):
    """A filter showing a stored name (an audit action, a version's origin) in the page's
    language; an unknown name is shown as it is."""

    @pass_context
    def label(ctx, name: str) -> str:
        text = labels.get(name)
        return text(ctx.get("lang", "zh")) if text else name

    return label


def _ms_call(value: float | None) -> str:
    """A time per call to about three significant digits: 123 ms, 12.3 ms, 2.53 ms,
    0.0417 ms."""
    if value is None:
        return ""
    if value >= 100:
        return f"{value:.0f} ms"
    if value >= 10:
        return f"{value:.1f} ms"
    return f"{value:.2f} ms" if value >= 1 else f"{value:.3g} ms"


def _utc(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M UTC") if value else ""


def verdict_labels(lang: str) -> dict[str, str]:
    return {str(v): label(lang) for v, label in LABELS.items()}


def bundle_built(path: Path, *, now: Callable[[], float] = time.monotonic) -> bool:
    """Whether a front-end bundle exists (scripts/build_frontend.sh), looked at once in
    :data:`BUNDLE_LOOK_S` rather than on every page."""
    seen = _bundles.get(path)
    if seen is None or now() - seen[0] > BUNDLE_LOOK_S:
        seen = _bundles[path] = (now(), path.is_file())
    return seen[1]


BUNDLE_LOOK_S = 10.0
_bundles: dict[Path, tuple[float, bool]] = {}


def context(request: Request, user, lang: str, **extra: Any) -> dict[str, Any]:
    def t(zh: str, en: str) -> str:
        return en if lang == "en" else zh

    here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return {"request": request, "user": user, "lang": lang, "t": t, "here": here,
            "csrf": csrf_token(request.session), "labels": verdict_labels(lang),
            "editor_bundle": bundle_built(EDITOR_BUNDLE), "math_bundle": bundle_built(MATH_BUNDLE),
            **extra}


def render(request: Request, name: str, user, lang: str, status: int = 200,
           headers: dict[str, str] | None = None, **extra: Any) -> HTMLResponse:
    templates: Jinja2Templates = request.app.state.templates
    return templates.TemplateResponse(request, name, context(request, user, lang, **extra),
                                      status_code=status, headers=headers)


def render_error(request: Request, status: int, message: T,
                 headers: dict[str, str] | None = None) -> HTMLResponse:
    lang = request_lang(request)  # the one rule (web/language.py), as every page
    user = getattr(request.state, "user", None)
    return render(request, "error.html", user, lang, status=status, headers=headers,
                  status_code=status, message=message(lang))
