"""``python -m judge preview DIR``: one package, on a local page, as learners will see it,
before it is uploaded. No database, no login, nothing stored.

The page is the problem page's own pieces (``_problem_article.html``, ``_editor.html``,
``_run_panel.html``; web.markdown renders and sanitises the statements, KaTeX typesets
them) with the article shown twice, side by side: in Chinese as a Chinese reader gets it
and in English as an English reader does (stacked on a narrow screen). Above them: what
``python -m judge lint`` finds. "Run examples" judges the editor's code on the package's
public cases (web.preview_runs).

The folder is watched by polling: every look at the page or at ``GET /preview/version``
compares a stamp of its files' names, sizes and modification times with the one the
package was loaded at, and loads it again when they differ; the page polls that stamp
each second and reloads itself when it changed (static/preview.js). A package that does
not load is shown as its error, and the server keeps watching for the fix.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
import stat
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import Response
from fastapi.staticfiles import StaticFiles
from starlette.middleware.sessions import SessionMiddleware
from starlette.middleware.trustedhost import TrustedHostMiddleware

from judge.i18n import LANGS, T
from judge.lint import Finding, error, lint_problem
from judge.package import PackageError, load_problem
from web import error_handlers, preview_runs
from web.catalog import ProblemView
from web.language import page_lang
from web.main import SecurityHeaders
from web.templating import HERE, make_templates, render

log = logging.getLogger("web.preview")

# Not part of what the page shows, and rewritten while one edits or judges: a reload for
# each would be noise (vim's swap file, Emacs' lock and backup files, compiled modules).
SKIPPED_DIRS = frozenset({"__pycache__"})
SKIPPED_SUFFIXES = ("~", ".swp", ".swx", ".pyc")


def stamp(folder: Path) -> str:
    """A digest of every file's path, size and modification time under ``folder`` (dot
    files, ``__pycache__`` and editors' swap and backup files left out): it changes when
    a file is saved, added, renamed or removed."""
    h = hashlib.sha256()
    try:
        paths = sorted(folder.rglob("*"))
    except OSError:  # the folder went away or changes under the walk: look again later
        return "unreadable"
    for path in paths:
        rel = path.relative_to(folder)
        if (any(part in SKIPPED_DIRS or part.startswith(".") for part in rel.parts)
                or path.name.endswith(SKIPPED_SUFFIXES)):
            continue
        try:
            st = path.lstat()
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode):
            h.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


@dataclass(frozen=True)
class Shown:
    """The package as the page shows it, loaded at ``stamp``: ``view`` when it loads,
    else ``error`` (why not); ``findings`` are lint's."""

    stamp: str
    view: ProblemView | None = None
    error: str | None = None
    findings: tuple[Finding, ...] = ()


def load(folder: Path, at: str) -> Shown:
    """Load and render everything the page shows now, so that a file that does not load
    (a TOML error, a statement that is not UTF-8, a missing file) is this page's error
    message rather than a failed request."""
    try:
        view = ProblemView(load_problem(folder, named_by_slug=False))
        for lang in LANGS:
            view.statement_html(lang)
            view.solution_html(lang)
        _ = view.starter
    except (PackageError, OSError, UnicodeDecodeError) as e:
        return Shown(at, error=str(e))
    try:
        _ = view.examples
    except (SyntaxError, ValueError, UnicodeDecodeError):
        view.__dict__["examples"] = []  # lint says what is wrong with tests.py
    try:
        findings = lint_problem(view.problem, folder_name=folder.name)
    except Exception as e:  # lint should not fail; the page must show the package anyway
        log.exception("lint failed on %s", folder)
        findings = [error("package", f"lint 出错：{type(e).__name__}: {e}",
                          f"lint failed: {type(e).__name__}: {e}")]
    return Shown(at, view, findings=tuple(findings))


class Package:
    """The watched folder: :meth:`current` loads it again whenever its stamp changed."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder).resolve()
        self._lock = threading.Lock()
        self._shown: Shown | None = None

    def current(self) -> Shown:
        with self._lock:
            now = stamp(self.folder)
            if self._shown is None or self._shown.stamp != now:
                if self._shown is not None:
                    log.info("%s changed: loaded again", self.folder)
                self._shown = load(self.folder, now)
            return self._shown


router = APIRouter(include_in_schema=False)


def column_texts() -> dict[str, Any]:
    """``t(zh, en)`` for each column of the page, whatever the page's own language."""
    return {lang: (lambda zh, en, lang=lang: en if lang == "en" else zh) for lang in LANGS}


@router.get("/")
def page(request: Request) -> Response:
    shown: Shown = request.app.state.package.current()
    view = shown.view
    return render(request, "preview.html", None, page_lang(request, None), shown=shown,
                  p=view, version=shown.stamp, column_t=column_texts(),
                  code=view.starter if view else "", code_from_server=False,
                  level_text={"error": T("错误", "error"), "warning": T("警告", "warning")})


@router.get("/preview/version")
def version(request: Request) -> dict[str, str]:
    """The stamp the package is loaded at (the page reloads when it is not its own)."""
    return {"version": request.app.state.package.current().stamp}


def create_preview_app(folder: Path, launcher: Any, *, cuda: bool = False,
                       hosts: list[str] | None = None) -> FastAPI:
    """The preview of the package in ``folder``; its runs judge with ``launcher`` (a
    judge.isolation launcher, which the caller closes). ``hosts``: the names the server
    answers to (requests for another Host get 400: a web page elsewhere cannot reach it
    through DNS rebinding); None answers any."""
    package = Package(folder)
    app = FastAPI(title="torch-judge preview", docs_url=None, redoc_url=None,
                  openapi_url=None)
    app.state.package = package
    app.state.runs = preview_runs.Runs(launcher, cuda=cuda)
    templates = make_templates()
    templates.env.globals["local_preview"] = {
        "folder": str(package.folder), "sandboxed": launcher.isolation == "bwrap"}
    app.state.templates = templates
    app.add_middleware(SecurityHeaders)
    # The CSRF token of "Run examples" lives in this session; a cookie of its own name,
    # since cookies ignore ports and a site served on this host has one of its own.
    app.add_middleware(SessionMiddleware, secret_key=secrets.token_urlsafe(32),
                       session_cookie="judge_preview_session", same_site="strict")
    if hosts is not None:
        app.add_middleware(TrustedHostMiddleware, allowed_hosts=hosts)
    error_handlers.install(app)
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    app.include_router(router)
    app.include_router(preview_runs.router)
    return app
