"""Admin pages for the problem bank: the problem list with the upload form, a problem
(its versions, publish, unpublish, rejudge, recent submissions), a version (its validation,
live), and the edit form (statement, limits, test files: a new version). Anonymous
visitors are sent to the login page; other users get 403."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, File, Form, Request, UploadFile
from fastapi.responses import RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from judge.i18n import T
from judge.package import PackageError
from web import bank_admin, version_edit
from web.catalog import ProblemView
from web.data import bank, queue, submissions
from web.deps import AdminPageUser, CatalogDep, CsrfChecked, HubDep, Now, SessionDep
from web.error_handlers import status_of
from web.errors import DomainError
from web.forms import Utf8FormRoute
from web.language import page_lang
from web.models import ProblemVersion
from web.routes.admin_api import problem_or_404, read_upload, version_or_404
from web.templating import render, verdict_labels

router = APIRouter(prefix="/admin", tags=["admin pages"], include_in_schema=False,
                   route_class=Utf8FormRoute)


@router.get("")
def home(user: AdminPageUser) -> Response:
    return RedirectResponse("/admin/problems", status_code=303)


def title(store, version: ProblemVersion | None, lang: str) -> str:
    """A version's title in the page's language ("" when it cannot be loaded)."""
    if version is None:
        return ""
    try:
        meta = store.load(version.content_hash).meta
    except PackageError:
        return ""
    return meta.title.en if lang == "en" else meta.title.zh


def problems_page(request: Request, user, db, *, error: str | None = None,
                  status: int = 200) -> Response:
    latest = bank.latest_versions(db)
    records = bank.all_problems(db)
    shown = {r.id: bank.published_version(db, r) for r in records}
    lang = page_lang(request, user)
    titles = {r.id: title(request.app.state.store, shown[r.id] or latest.get(r.id), lang)
              for r in records}
    return render(request, "admin_problems.html", user, lang, status=status,
                  records=records, latest=latest, shown=shown, titles=titles, error=error)


@router.get("/problems")
def problems(request: Request, user: AdminPageUser, db: SessionDep) -> Response:
    return problems_page(request, user, db)


@router.post("/problems/upload", dependencies=[CsrfChecked])
async def upload(request: Request, user: AdminPageUser, db: SessionDep, hub: HubDep, now: Now,
                 file: Annotated[UploadFile, File()],
                 note: Annotated[str, Form(max_length=200)] = "") -> Response:
    try:
        data = await read_upload(file)
        # unpacking and hashing take a moment: off the event loop
        version, created = await run_in_threadpool(
            bank_admin.add_version, db, request.app.state.store, hub, user, now, origin="upload",
            note=note.strip() or file.filename or "upload.zip", zip_data=data)
    except DomainError as e:  # back to the form with the reason, nothing stored
        return problems_page(request, user, db, error=e.message(page_lang(request, user)),
                             status=status_of(e))
    # An identical upload is the version that exists: say so rather than look like a new one.
    suffix = "" if created else "?notice=unchanged"
    return RedirectResponse(f"/admin/versions/{version.id}{suffix}", status_code=303)


@router.get("/problems/{slug}")
def problem(slug: str, request: Request, user: AdminPageUser, db: SessionDep,
            notice: str = "") -> Response:
    record = problem_or_404(db, slug)
    lang = page_lang(request, user)
    versions = bank.versions(db, record.id)
    shown = bank.published_version(db, record)
    return render(request, "admin_problem.html", user, lang, record=record,
                  versions=versions, shown=shown,
                  title=title(request.app.state.store, shown or next(iter(versions), None),
                              lang),
                  subs=submissions.problem_submissions(db, slug, limit=100),
                  pending=queue.pending_rejudges(db, slug), notice=notice[:200])


@router.post("/problems/{slug}/unpublish", dependencies=[CsrfChecked])
def unpublish(slug: str, user: AdminPageUser, db: SessionDep, catalog: CatalogDep,
              now: Now) -> Response:
    bank_admin.unpublish(db, catalog, user, problem_or_404(db, slug), now)
    return RedirectResponse(f"/admin/problems/{slug}", status_code=303)


@router.post("/problems/{slug}/rejudge", dependencies=[CsrfChecked])
def rejudge(slug: str, request: Request, user: AdminPageUser, db: SessionDep, hub: HubDep,
            now: Now, which: Annotated[str, Form(pattern="^(all|selected)$")],
            ids: Annotated[str, Form(max_length=10_000)] = "") -> Response:
    chosen = bank_admin.rejudge(db, request.app.state.store, hub, user, problem_or_404(db, slug),
                           bank_admin.parse_ids(ids) if which == "selected" else None, now)
    return RedirectResponse(f"/admin/problems/{slug}?notice=rejudge-{len(chosen)}",
                            status_code=303)


@router.get("/versions/{vid}")
def version(vid: int, request: Request, user: AdminPageUser, db: SessionDep) -> Response:
    version = version_or_404(db, vid)
    lang = page_lang(request, user)
    try:
        preview: ProblemView | None = ProblemView(request.app.state.store.load(
            version.content_hash))
    except PackageError:
        preview = None
    return render(request, "admin_version.html", user, lang, version=version,
                  record=version.problem, preview=preview,
                  published=version.problem.published_version_id == version.id,
                  labels={**verdict_labels(lang), **expected_labels(lang)},
                  unchanged=request.query_params.get("notice") == "unchanged",
                  kept=bank.why_not_deletable(db, version),
                  **bank_admin.review(request.app.state.store, version))


# What a check expects of the starter, in the page's language like the verdicts.
def expected_labels(lang: str) -> dict[str, str]:
    return {"not accepted": T("不能通过", "not accepted")(lang)}


@router.post("/versions/{vid}/publish", dependencies=[CsrfChecked])
def publish(vid: int, user: AdminPageUser, db: SessionDep, catalog: CatalogDep,
            now: Now) -> Response:
    version = version_or_404(db, vid)
    bank_admin.publish(db, catalog, user, version, now)
    return RedirectResponse(f"/admin/problems/{version.problem.slug}", status_code=303)


@router.get("/versions/{vid}/diff")
def diff_page(vid: int, request: Request, user: AdminPageUser, db: SessionDep,
              against: int) -> Response:
    """What changed from version ``against`` to this one: every file that differs."""
    return compare(request, user, db, old=against, new=vid)


@router.get("/compare")
def compare(request: Request, user: AdminPageUser, db: SessionDep, old: int,
            new: int) -> Response:
    """Any two versions (the problem page's compare form): every file that differs."""
    newer, older = version_or_404(db, new), version_or_404(db, old)
    store = request.app.state.store
    files = version_edit.diff(store.files(older.content_hash), store.files(newer.content_hash),
                              old_name=older.content_hash[:12],
                              new_name=newer.content_hash[:12])
    return render(request, "admin_diff.html", user, page_lang(request, user), new=newer,
                  old=older, record=newer.problem, diffs=files)


@router.post("/versions/{vid}/delete", dependencies=[CsrfChecked])
def delete_version(vid: int, request: Request, user: AdminPageUser, db: SessionDep,
                   now: Now) -> Response:
    version = version_or_404(db, vid)
    slug = bank_admin.delete_version(db, request.app.state.store, user, version, now)
    return RedirectResponse(f"/admin/problems/{slug}" if slug else "/admin/problems",
                            status_code=303)


@router.post("/versions/{vid}/validate", dependencies=[CsrfChecked])
def validate(vid: int, request: Request, user: AdminPageUser, db: SessionDep, hub: HubDep,
             now: Now) -> Response:
    version = version_or_404(db, vid)
    bank_admin.validate_again(db, request.app.state.store, hub, user, version, now)
    return RedirectResponse(f"/admin/versions/{vid}", status_code=303)


def edit_page(request: Request, user, version, files: dict[str, bytes], *,
              error: str | None = None, status: int = 200) -> Response:
    texts = {name: files.get(name, b"").decode("utf-8", "replace")
             for name in version_edit.EDITABLE_TEXT + tuple(version_edit.MORE_TEXT.values())
             if name in files or name in version_edit.EDITABLE_TEXT}
    limits = version_edit.current_limits(files.get("problem.toml", b"").decode("utf-8", "replace"))
    return render(request, "admin_edit.html", user, page_lang(request, user), status=status,
                  version=version, record=version.problem, texts=texts, limits=limits,
                  names=sorted(files), error=error, more_text=version_edit.MORE_TEXT,
                  others=version_edit.other_texts(files), text_field=version_edit.TEXT_FIELD)


@router.get("/versions/{vid}/edit")
def edit_form(vid: int, request: Request, user: AdminPageUser, db: SessionDep) -> Response:
    version = version_or_404(db, vid)
    return edit_page(request, user, version,
                     request.app.state.store.files(version.content_hash))


Text = Annotated[str, Form(max_length=1_000_000)]
Number = Annotated[str, Form(max_length=32)]


@router.post("/versions/{vid}/edit", dependencies=[CsrfChecked])
async def edit(vid: int, request: Request, user: AdminPageUser, db: SessionDep, hub: HubDep,
               now: Now, statement_zh: Text, statement_en: Text, tests: Text,
               case_wall_s: Number, cpu_s: Number, memory_mb: Number, output_kb: Number,
               file_path: Annotated[str, Form(max_length=200)] = "",
               note: Annotated[str, Form(max_length=200)] = "",
               file: Annotated[UploadFile | None, File()] = None) -> Response:
    """A new version: the base version's files with the edits applied."""
    version = version_or_404(db, vid)
    store = request.app.state.store
    files = store.files(version.content_hash)
    lang = page_lang(request, user)
    try:
        limits = {key: kind(form) for (key, kind), form in zip(
            version_edit.LIMIT_FIELDS.items(), (case_wall_s, cpu_s, memory_mb, output_kb),
            strict=True)}
    except ValueError:
        return edit_page(request, user, version, files, status=422, error=T(
            "限制要填数字", "limits must be numbers")(lang))
    base_toml = files["problem.toml"].decode()
    version_edit.apply_texts(files, await request.form())
    files["problem.toml"] = version_edit.set_limits(
        files["problem.toml"].decode(), version_edit.changed_limits(base_toml, limits)).encode()
    for name, text in zip(version_edit.EDITABLE_TEXT, (statement_zh, statement_en, tests),
                          strict=True):
        files[name] = text.replace("\r\n", "\n").encode()
    if file is not None and file.filename:
        target = file_path.strip() or file.filename
        files[target] = await read_upload(file)
    try:
        new, _ = await run_in_threadpool(
            bank_admin.add_version, db, store, hub, user, now, origin="edit",
            note=note.strip() or f"edit of {version.content_hash[:12]}", files=files,
            slug=version.problem.slug)
    except DomainError as e:
        return edit_page(request, user, version, files, status=status_of(e), error=e.message(lang))
    return RedirectResponse(f"/admin/versions/{new.id}", status_code=303)
