"""Queries of the admin side: problems and their versions, validation, publishing,
rejudging, users, the audit log. (Learners' and workers' queries are in web/queries.py.)"""

from __future__ import annotations

import logging
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from judge.events import Event, FileChecked, FilesPlanned
from judge.i18n import T
from judge.package import PackageError, Problem, package_hash
from judge.problem_store import Store, Stored
from judge.upload import PackageRefused
from web.models import (
    ApiToken,
    AuditEntry,
    Job,
    ProblemRecord,
    ProblemVersion,
    Submission,
    User,
)

log = logging.getLogger("web.admin")

# Queue priorities (higher first): live submissions 0; validations -5 (an admin is
# waiting, but learners come first); rejudges -10 (nobody is waiting).
VALIDATE_PRIORITY = -5
REJUDGE_PRIORITY = -10
FINISHED = ("valid", "invalid")
STATUS_TEXT = {"uploaded": T("正在等待验证", "waiting for validation"),
               "validating": T("正在验证", "being validated"),
               "valid": T("有效", "valid"), "invalid": T("验证没有通过", "invalid")}


# ---------------------------------------------------------------- audit


def audit(db: Session, user: User | None, action: str, target: str, now: datetime,
          **detail: Any) -> None:
    """Record an admin action (committed with the caller's transaction)."""
    db.add(AuditEntry(user_id=user.id if user else None,
                      actor=user.username if user else "cli", action=action,
                      target=target[:128], detail=detail, created_at=now))


def audit_log(db: Session, limit: int = 200) -> list[AuditEntry]:
    return list(db.scalars(select(AuditEntry).order_by(AuditEntry.id.desc()).limit(limit)))


# ---------------------------------------------------------------- problems and versions


def problem_record(db: Session, slug: str) -> ProblemRecord | None:
    return db.scalar(select(ProblemRecord).where(ProblemRecord.slug == slug))


def all_problems(db: Session) -> list[ProblemRecord]:
    return list(db.scalars(select(ProblemRecord).order_by(ProblemRecord.number)))


def versions(db: Session, problem_id: int) -> list[ProblemVersion]:
    return list(db.scalars(select(ProblemVersion).where(ProblemVersion.problem_id == problem_id)
                           .order_by(ProblemVersion.id.desc())))


def latest_versions(db: Session) -> dict[int, ProblemVersion]:
    """problem id -> its newest version."""
    newest = (select(func.max(ProblemVersion.id)).group_by(ProblemVersion.problem_id)
              .scalar_subquery())
    return {v.problem_id: v for v in db.scalars(select(ProblemVersion)
                                                .where(ProblemVersion.id.in_(newest)))}


def get_version(db: Session, version_id: int) -> ProblemVersion | None:
    return db.get(ProblemVersion, version_id)


def published_version(db: Session, record: ProblemRecord) -> ProblemVersion | None:
    if record.published_version_id is None:
        return None
    return db.get(ProblemVersion, record.published_version_id)


def add_version(db: Session, problem: Problem, origin: str, user: User | None,
                now: datetime, note: str = "", status: str = "uploaded"
                ) -> tuple[ProblemVersion, bool]:
    """The version row for a stored package (new, or the existing one with the same
    content: False). A new slug makes a new problem; its number must be free."""
    record = problem_record(db, problem.slug)
    clash = db.scalar(select(ProblemRecord).where(ProblemRecord.number == problem.number,
                                                  ProblemRecord.slug != problem.slug))
    if clash is not None:
        raise PackageRefused(T(f"编号 {problem.number} 已经被 {clash.slug!r} 占用，"
                               f"请在 problem.toml 里换一个编号",
                               f"number {problem.number} is already taken by "
                               f"{clash.slug!r}; choose another number in problem.toml"))
    if record is None:
        record = ProblemRecord(slug=problem.slug, number=problem.number, created_at=now)
        db.add(record)
        db.flush()
    else:
        record.number = problem.number
        existing = db.scalar(select(ProblemVersion).where(
            ProblemVersion.problem_id == record.id,
            ProblemVersion.content_hash == problem.content_hash))
        if existing is not None:
            return existing, False
    version = ProblemVersion(problem_id=record.id, content_hash=problem.content_hash,
                             status=status, origin=origin, note=note[:200],
                             created_by=user.id if user else None, created_at=now)
    db.add(version)
    db.flush()
    return version, True


def discard_unused(db: Session, store: Store, content_hash: str) -> None:
    """Remove a stored package folder that no version row uses (the step after storing
    it failed), so that no folder is left without its version."""
    used = db.scalar(select(ProblemVersion.id).where(
        ProblemVersion.content_hash == content_hash).limit(1))
    if used is None:
        store.discard(content_hash)


def gpu_needs(problem: Problem) -> tuple[bool, bool]:
    """(needs_gpu, prefers_gpu) of a package, as the queue wants them."""
    return problem.meta.requires.cuda, problem.uses_cuda


def queue_validation(db: Session, version: ProblemVersion, problem: Problem,
                     now: datetime) -> Job:
    """Ask the workers to validate a version (``python -m judge check`` in the sandbox)."""
    needs, prefers = gpu_needs(problem)
    version.status, version.report, version.validated_at = "uploaded", None, None
    job = Job(kind="validate", version_id=version.id, status="queued",
              priority=VALIDATE_PRIORITY, needs_gpu=needs, prefers_gpu=prefers, attempts=0,
              created_at=now)
    db.add(job)
    db.flush()
    return job


def close_queued_validations(db: Session, version_id: int, now: datetime) -> None:
    """Validations of a version still waiting for a worker are answered already (it was
    validated on the server machine)."""
    db.execute(update(Job).where(Job.kind == "validate", Job.version_id == version_id,
                                 Job.status == "queued").values(status="done", finished_at=now))


def publish(db: Session, version: ProblemVersion) -> None:
    """Make a valid version the one learners see. Raises PackageError otherwise."""
    if version.status != "valid":
        status = STATUS_TEXT.get(version.status, T.same(version.status))
        raise PackageRefused(T(f"版本 {version.content_hash[:12]} {status.zh}：只有验证通过"
                               f"（有效）的版本才能发布",
                               f"version {version.content_hash[:12]} is {status.en}: only "
                               f"a valid version can be published"))
    record = version.problem
    clash = db.scalar(select(ProblemRecord).where(
        ProblemRecord.number == record.number, ProblemRecord.id != record.id,
        ProblemRecord.published_version_id.is_not(None)))
    if clash is not None:
        raise PackageRefused(T(f"编号 {record.number} 已经被已发布的题目 {clash.slug!r} 占用",
                               f"number {record.number} is used by the published problem "
                               f"{clash.slug!r}"))
    record.published_version_id = version.id


def unpublish(db: Session, record: ProblemRecord) -> None:
    record.published_version_id = None


def published(db: Session, store: Store) -> list[Problem]:
    """The packages learners see, by number (a version missing on disk is logged and
    left out rather than taking the site down)."""
    rows = db.execute(select(ProblemVersion.content_hash).join(
        ProblemRecord, ProblemRecord.published_version_id == ProblemVersion.id))
    problems = []
    for (content_hash,) in rows:
        try:
            problems.append(store.load(content_hash))
        except PackageError as e:
            log.error("published version %s cannot be loaded: %s", content_hash[:12], e)
    return sorted(problems, key=lambda p: p.number)


def bundled_packages(folder: Path | None) -> list[Path]:
    """The package folders of a problems folder (``_template`` and dot-folders skipped)."""
    if folder is None or not Path(folder).is_dir():
        return []
    return [p for p in sorted(Path(folder).iterdir())
            if p.is_dir() and not p.name.startswith(("_", "."))]


def seed(db: Session, store: Store, folder: Path | None, now: datetime) -> bool:
    """Store every bundled package whose content is new, as a valid version; publish it
    when the problem is new or its published version is bundled too. True on a change."""
    changed = False
    for src in bundled_packages(folder):
        stored: Stored | None = None
        try:
            with_hash = package_hash(src)
            record = problem_record(db, src.name)
            if record is not None and db.scalar(select(ProblemVersion.id).where(
                    ProblemVersion.problem_id == record.id,
                    ProblemVersion.content_hash == with_hash)) is not None:
                continue
            stored = store.put(folder=src)
            problem = stored.problem
            if problem.slug != src.name:
                raise PackageError(f"the folder must be named after its slug {problem.slug!r}")
            new = problem_record(db, problem.slug) is None
            version, created = add_version(db, problem, "bundled", None, now,
                                           note=f"bundled: {src.name}", status="valid")
            if not created:
                continue
            version.report = {"ok": True, "trusted": "bundled (checked by `python -m judge "
                                                     "check` in CI)", "files": []}
            version.validated_at = now
            current = published_version(db, version.problem)
            if new or (current is not None and current.origin == "bundled"):
                publish(db, version)
            db.commit()
            changed = True
            log.info("bundled problem %s stored as %s", problem.slug, version.content_hash[:12])
        except (PackageError, OSError) as e:
            db.rollback()
            if stored is not None and stored.new:
                discard_unused(db, store, stored.problem.content_hash)
            log.error("bundled problem %s left out: %s", src.name, e)
    return changed


# ---------------------------------------------------------------- validation results


def validation_started(db: Session, version_id: int, files: list[dict[str, Any]]) -> None:
    version = db.get(ProblemVersion, version_id)
    if version is not None:
        version.status = "validating"
        version.report = {"ok": None, "errors": [], "files": files}


def validation_progress(db: Session, version_id: int, event: Event) -> None:
    """Fold one progress event of a validate job into the version's report."""
    version = db.get(ProblemVersion, version_id)
    if version is None:
        return
    report = dict(version.report or {"ok": None, "errors": [], "files": []})
    if isinstance(event, FilesPlanned):
        report = {"ok": None, "errors": [], "files": [f.to_json() for f in event.files]}
        version.status = "validating"
    elif isinstance(event, FileChecked):
        files = list(report.get("files", []))
        entry = event.file.to_json()
        for i, f in enumerate(files):
            if f["label"] == entry["label"]:
                files[i] = entry
                break
        else:
            files.append(entry)
        report["files"] = files
    version.report = report


def validation_finished(db: Session, version_id: int, result: dict[str, Any],
                        now: datetime) -> None:
    version = db.get(ProblemVersion, version_id)
    if version is not None:
        version.status = "valid" if result.get("ok") else "invalid"
        version.report = result
        version.validated_at = now


# ---------------------------------------------------------------- rejudge


def rejudge(db: Session, slug: str, content_hash: str, now: datetime,
            ids: list[int] | None = None, needs_gpu: bool = False,
            prefers_gpu: bool = False) -> list[int]:
    """Queue judged submissions of a problem again, at the given version and below live
    submissions. Submissions already waiting for a job are skipped. The old result stays
    shown until the new one is stored; the report names the version that judged it."""
    q = select(Submission.id).where(Submission.problem == slug, Submission.status == "done")
    if ids is not None:
        q = q.where(Submission.id.in_(ids))
    busy = select(Job.submission_id).where(Job.status.in_(("queued", "running")),
                                           Job.submission_id.is_not(None))
    chosen = list(db.scalars(q.where(Submission.id.not_in(busy)).order_by(Submission.id)))
    db.add_all(Job(kind="judge", submission_id=sid, problem_version=content_hash,
                   status="queued", priority=REJUDGE_PRIORITY, needs_gpu=needs_gpu,
                   prefers_gpu=prefers_gpu, attempts=0, created_at=now) for sid in chosen)
    return chosen


def problem_submissions(db: Session, slug: str, limit: int = 200) -> list[Submission]:
    return list(db.scalars(select(Submission).where(Submission.problem == slug)
                           .order_by(Submission.id.desc()).limit(limit)))


def pending_rejudges(db: Session, slug: str) -> int:
    return db.scalar(select(func.count()).select_from(Job).join(
        Submission, Submission.id == Job.submission_id).where(
        Submission.problem == slug, Job.status.in_(("queued", "running")),
        Job.priority == REJUDGE_PRIORITY)) or 0


# ---------------------------------------------------------------- users


def all_users(db: Session) -> list[User]:
    return list(db.scalars(select(User).order_by(User.id)))


def set_disabled(db: Session, user: User, disabled: bool) -> None:
    user.disabled = disabled
    if disabled:  # its bearer tokens end now (the session is checked on every request)
        db.execute(delete(ApiToken).where(ApiToken.user_id == user.id))


def set_admin(db: Session, user: User, admin: bool) -> None:
    db.execute(update(User).where(User.id == user.id).values(is_admin=admin))
    user.is_admin = admin
