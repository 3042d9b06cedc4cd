"""What admins do to the bank, shared by the admin pages and the admin API: take in a
version (upload, edit or the CLI), validate, publish, unpublish, rejudge. Each action is
checked, recorded in the audit log and committed; refusals raise web.errors with nothing
changed (a package folder stored for a version that is then refused is removed again)."""

from __future__ import annotations

import logging
import re
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from judge import calibration, lint
from judge.events import CheckedFile
from judge.i18n import T
from judge.package import PackageError, Problem
from judge.problem_store import Store, Stored
from judge.upload import PackageRefused
from web.catalog import Catalog
from web.data import audit_log, bank, queue
from web.errors import BadRequest, Conflict, DomainError, Invalid
from web.hub import Hub
from web.models import ProblemRecord, ProblemVersion, User

log = logging.getLogger("web.admin")



def reason(e: PackageError) -> T:
    """Why a package was refused, in both languages where the check says it in both
    (judge.upload, the web's own checks); the loader's schema errors are English only."""
    if isinstance(e, PackageRefused):
        return e.text
    return T(f"（原因只有英文说明）{e}", str(e))


def refused(e: PackageError) -> DomainError:
    text = reason(e)
    return BadRequest(T(f"题目包被拒绝：{text.zh}", f"package refused: {text.en}"))


def add_version(db: Session, store: Store, hub: Hub | None, user: User | None,
                now: datetime, *, origin: str, note: str, zip_data: bytes | None = None,
                files: dict[str, bytes] | None = None, folder: Path | None = None,
                validate: bool = True, slug: str | None = None) -> tuple[ProblemVersion, bool]:
    """Store a package (a zip, the files of an edit, or a folder), record the version and
    queue its validation (unless ``validate`` is False: the CLI's ``--check`` validates
    it here). ``slug``: the problem an edit must stay a version of. Returns the version
    and whether it is new. BadRequest (or Conflict) saying why when the package is
    refused; then nothing is recorded and a folder this call stored is removed again."""
    stored: Stored | None = None
    try:
        stored = store.put(zip_data=zip_data, files=files, folder=folder)
        problem = stored.problem
        if slug is not None and problem.slug != slug:
            raise slug_changed(slug, problem.slug)
        refuse_on_lint(problem, stored.source_name)
        version, created = bank.add_version(db, problem, origin, user, now, note)
        if validate and (created or version.status == "invalid"):
            queue.queue_validation(db, version, problem, now)
        audit_log.record(db, user, "add-version", problem.slug, now,
                            version=problem.content_hash, origin=origin, note=note[:100],
                            created=created)
        db.commit()
    except BaseException as e:
        db.rollback()
        if stored is not None and stored.new:
            _discard_unused(db, store, stored.problem.content_hash)
        if not isinstance(e, PackageError | IntegrityError):
            raise
        if user is not None:
            db.refresh(user)  # the error page shows who is logged in, after the session
        if isinstance(e, IntegrityError):  # the same upload raced
            raise Conflict(T("同样的版本正在被另一个请求添加，请刷新后再看",
                                     "the same version is being added by another request; "
                                     "reload and look again")) from None
        raise refused(e) from None
    if hub is not None:
        hub.notify("queue")
    return version, created


def slug_changed(slug: str, new: str) -> PackageRefused:
    """An edit that changed the slug: slugs are never renamed (a package with another
    slug is another problem, with its own submissions and standings), and an edit must
    not start a new problem unawares."""
    return PackageRefused(T(
        f"编辑不能改 slug（{slug!r} → {new!r}）：slug 不能改名，另一个 slug 就是另一道题。"
        f"要从这道题开始一道新题，请在题库页面上传改了 slug 和编号的题目包",
        f"an edit cannot change the slug ({slug!r} -> {new!r}): slugs are never renamed, "
        f"and another slug is another problem. To start a new problem from this one, "
        f"upload the package with its new slug and number on the problem bank page"))


def refuse_on_lint(problem: Problem, folder_name: str | None) -> None:
    """Refuse a package with lint errors (judge/lint.py) before it is validated: a public
    case after a hidden one, a folder not named after its slug, a statement missing."""
    found = lint.errors(lint.lint_problem(problem, folder_name=folder_name))
    if found:
        text = lint.summary(found)
        raise PackageRefused(T(f"没有通过 python -m judge lint 的检查：\n{text.zh}",
                               f"it fails python -m judge lint:\n{text.en}"))


def review(store: Store, version: ProblemVersion) -> dict[str, Any]:
    """What the version page shows beside the validation: the package's lint findings
    (read now: lint is quick and reads only files) and the calibration of its speed
    checks (judge/calibration.py) from the files the validation judged."""
    try:
        findings = lint.lint_problem(store.load(version.content_hash))
    except PackageError:
        findings = []
    files = []
    for entry in (version.report or {}).get("files", []):
        try:
            checked = CheckedFile.from_json(entry)
        except (ValueError, TypeError):
            continue
        if checked.verdict is not None:
            files.append(checked)
    return {"findings": findings, "bars": calibration.bars(files),
            "speed_text": calibration.speed_text}


def _discard_unused(db: Session, store: Store, content_hash: str) -> None:
    try:
        bank.discard_unused(db, store, content_hash)
    except Exception:  # the database is failing too: an unused folder is harmless
        log.exception("could not remove the unused package folder %s", content_hash[:12])


def validate_again(db: Session, store: Store, hub: Hub, user: User, version: ProblemVersion,
                   now: datetime) -> None:
    if version.status in ("uploaded", "validating"):
        raise Conflict(T("这个版本正在验证", "this version is being validated"))
    queue.queue_validation(db, version, store.load(version.content_hash), now)
    audit_log.record(db, user, "validate", version.problem.slug, now,
                        version=version.content_hash)
    db.commit()
    hub.notify("queue")


def record_validation(db: Session, user: User | None, version: ProblemVersion,
                      result: dict[str, Any], now: datetime) -> None:
    """A validation run outside the queue (``problems check`` on the server machine):
    the version's result, the validations still queued for it answered, the audit log."""
    bank.validation_finished(db, version.id, result, now)
    queue.close_queued_validations(db, version.id, now)
    audit_log.record(db, user, "validate", version.problem.slug, now,
                        version=version.content_hash, ok=result.get("ok"))
    db.commit()


def publish(db: Session, catalog: Catalog | None, user: User | None,
            version: ProblemVersion, now: datetime) -> None:
    """Make a valid version the one learners see (Conflict otherwise); ``catalog`` (the
    app's) is reloaded at once, else a running server sees it within 10 s."""
    try:
        bank.publish(db, version)
    except PackageError as e:  # refused before anything changed
        text = reason(e)
        raise Conflict(T(f"不能发布：{text.zh}", f"cannot publish: {text.en}")
                          ) from None
    audit_log.record(db, user, "publish", version.problem.slug, now,
                        version=version.content_hash)
    db.commit()
    if catalog is not None:
        catalog.refresh()


def unpublish(db: Session, catalog: Catalog | None, user: User | None,
              record: ProblemRecord, now: datetime) -> None:
    bank.unpublish(db, record)
    audit_log.record(db, user, "unpublish", record.slug, now)
    db.commit()
    if catalog is not None:
        catalog.refresh()






def delete_version(db: Session, store: Store, user: User | None, version: ProblemVersion,
                   now: datetime) -> str | None:
    """Delete a never-published version (Conflict saying why it is kept otherwise); the
    problem's slug when the problem is still there (it had other versions), else None."""
    why = bank.why_not_deletable(db, version)
    if why is not None:
        raise Conflict(T(f"不能删除：{why.zh}", f"cannot delete: {why.en}"))
    slug, content_hash = version.problem.slug, version.content_hash
    gone = bank.delete_version(db, store, version)
    audit_log.record(db, user, "delete-version", slug, now, version=content_hash)
    db.commit()
    return None if gone else slug


def parse_ids(text: str) -> list[int]:
    """Submission ids typed by an admin: numbers separated by spaces or commas."""
    parts = [p for p in re.split(r"[\s,]+", text.strip()) if p]
    if not all(p.isdigit() for p in parts):
        raise Invalid(T("提交编号要用数字，以空格或逗号分隔",
                                 "submission ids are numbers separated by spaces or commas"))
    return [int(p) for p in parts]


def rejudge(db: Session, store: Store, hub: Hub, user: User, record: ProblemRecord,
            ids: list[int] | None, now: datetime) -> list[int]:
    """Judge submissions again (all of the problem's, or these) at its published version,
    below live submissions."""
    version = bank.published_version(db, record)
    if version is None:
        raise Conflict(T("这道题没有发布的版本，不能重测",
                                 "the problem has no published version to rejudge with"))
    needs, prefers = queue.gpu_needs(store.load(version.content_hash))
    chosen = queue.rejudge(db, record.slug, version.content_hash, now, ids,
                                   needs_gpu=needs, prefers_gpu=prefers)
    audit_log.record(db, user, "rejudge", record.slug, now, version=version.content_hash,
                        submissions=len(chosen), selected=ids is not None)
    db.commit()
    hub.notify("queue")
    return chosen




