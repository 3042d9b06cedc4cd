"""The problem bank in the database: a problem per slug, its stored versions (the files are
in :class:`judge.problem_store.Store`), their validation, and the version learners see."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from judge.events import Event, FileChecked, FilesPlanned
from judge.i18n import T
from judge.package import PackageError, Problem
from judge.problem_store import Store
from judge.shards import merge_parts
from judge.upload import PackageRefused
from web.models import (
    AuditEntry,
    Job,
    ProblemRecord,
    ProblemVersion,
    Submission,
    User,
)

log = logging.getLogger("web.bank")

STATUS_TEXT = {"uploaded": T("正在等待验证", "waiting for validation"),
               "validating": T("正在验证", "being validated"),
               "valid": T("有效", "valid"), "invalid": T("验证没有通过", "invalid")}


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
        # A slug is never renamed: an author who changed it meant the same problem.
        raise PackageRefused(T(f"编号 {problem.number} 已经被 {clash.slug!r} 占用，"
                               f"请在 problem.toml 里换一个编号（slug 不能改名：新的 slug "
                               f"{problem.slug!r} 是一道新题；要给 {clash.slug!r} 加新版本，"
                               f"请保留它的 slug）",
                               f"number {problem.number} is already taken by "
                               f"{clash.slug!r}; choose another number in problem.toml (a "
                               f"slug is never renamed: the slug {problem.slug!r} is a new "
                               f"problem; keep the slug {clash.slug!r} to add a version of "
                               f"that one)"))
    if record is None:
        record = ProblemRecord(slug=problem.slug, number=problem.number, created_at=now)
        db.add(record)
        db.flush()
    else:
        if record.published_version_id is None:  # nobody sees it: follow the newest
            record.number = problem.number
        existing = db.scalar(select(ProblemVersion).where(
            ProblemVersion.problem_id == record.id,
            ProblemVersion.content_hash == problem.content_hash))
        if existing is not None:
            return existing, False
    version = ProblemVersion(problem_id=record.id, content_hash=problem.content_hash,
                             number=problem.number, status=status, origin=origin, note=note[:200],
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


def publish(db: Session, version: ProblemVersion) -> None:
    """Make a valid version the one learners see. Raises PackageError otherwise."""
    if version.status != "valid":
        status = STATUS_TEXT.get(version.status, T.same(version.status))
        raise PackageRefused(T(f"版本 {version.content_hash[:12]} {status.zh}：只有验证通过"
                               f"（有效）的版本才能发布",
                               f"version {version.content_hash[:12]} is {status.en}: only "
                               f"a valid version can be published"))
    record = version.problem
    number = version.number if version.number is not None else record.number
    clash = db.scalar(select(ProblemRecord).where(
        ProblemRecord.number == number, ProblemRecord.id != record.id,
        ProblemRecord.published_version_id.is_not(None)))
    if clash is not None:
        raise PackageRefused(T(f"编号 {number} 已经被已发布的题目 {clash.slug!r} 占用",
                               f"number {number} is used by the published problem "
                               f"{clash.slug!r}"))
    record.published_version_id = version.id
    record.number = number  # a version's number reaches the problem only now


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


def validation_progress(db: Session, version_id: int, event: Event, *,
                        merge: bool = False) -> None:
    """Fold one progress event of a validate job into the version's report (``merge``: the
    job is one shard of several, whose planned files add to the others')."""
    version = db.get(ProblemVersion, version_id)
    if version is None:
        return
    report = dict(version.report or {"ok": None, "errors": [], "files": []})
    if isinstance(event, FilesPlanned):
        planned = [f.to_json() for f in event.files]
        if merge:
            known = {f["label"] for f in report.get("files", [])}
            planned = report.get("files", []) + [f for f in planned if f["label"] not in known]
        report = {**report, "ok": None, "files": planned}
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


def shard_finished(db: Session, job: Job, result: dict[str, Any], now: datetime) -> None:
    """A validate job's result. A one-shard validation is the version's result; a shard of
    several is kept in the report's ``parts`` until the last one lands, and the version's
    result is then their merge (judge/shards.py), with the time from the first claim."""
    if job.shards <= 1:
        validation_finished(db, job.version_id or 0, result, now)
        return
    version = db.get(ProblemVersion, job.version_id)
    if version is None:
        return
    report = dict(version.report or {"files": []})
    parts = {**report.get("parts", {}), str(job.shard): result}
    live = {f["label"]: f for f in report.get("files", [])}
    live.update({f["label"]: f for f in result.get("files", [])})
    version.report = {**report, "parts": parts, "files": list(live.values())}
    siblings = select(Job).where(Job.kind == "validate", Job.version_id == job.version_id,
                                 Job.created_at == job.created_at)
    round_jobs = list(db.scalars(siblings.execution_options(populate_existing=True)))
    if len(parts) < job.shards or any(j.status != "done" for j in round_jobs):
        return
    merged = merge_parts([parts[str(i)] for i in range(job.shards)])
    started = min((j.claimed_at for j in round_jobs if j.claimed_at), default=now)
    merged["time_s"] = round((now - started).total_seconds(), 1)
    merged["shards"] = job.shards
    validation_finished(db, version.id, merged, now)


def why_not_deletable(db: Session, version: ProblemVersion) -> T | None:
    """Why a version must be kept (None: it may be deleted): it is bundled, learners see
    it, it was published once (the audit log says so), or submissions were judged at it
    or are waiting for it."""
    record, content_hash = version.problem, version.content_hash
    if version.origin == "bundled":
        return T("内置题目的版本来自 problems/ 文件夹，不能删除",
                 "a bundled version comes from the problems/ folder and cannot be deleted")
    if record.published_version_id == version.id:
        return T("这是学员看到的版本，不能删除", "learners see this version: it cannot be deleted")
    published = db.scalars(select(AuditEntry.detail).where(AuditEntry.action == "publish",
                                                         AuditEntry.target == record.slug))
    if any((d or {}).get("version") == content_hash for d in published):
        return T("这个版本发布过，学员见过它，要保留", "this version was published once: "
                 "learners have seen it, so it is kept")
    used = db.scalar(select(func.count()).select_from(Submission).where(
        Submission.problem == record.slug, Submission.problem_version == content_hash))
    judging = db.scalar(select(func.count()).select_from(Job).where(
        Job.kind == "judge", Job.problem_version == content_hash,
        Job.status.in_(("queued", "running"))))
    if used or judging:
        return T("有提交在这个版本上评测过，要保留", "submissions were judged at this version: "
                 "it is kept")
    return None


def delete_version(db: Session, store: Store, version: ProblemVersion) -> bool:
    """Delete a version that may be deleted (see why_not_deletable), its validation jobs
    and its files; the problem too when it has no version left. Returns whether the
    problem went with it."""
    record = version.problem
    content_hash = version.content_hash
    db.execute(delete(Job).where(Job.version_id == version.id))
    db.delete(version)
    db.flush()
    gone = not versions(db, record.id)
    if gone:
        db.delete(record)
    db.flush()
    discard_unused(db, store, content_hash)
    return gone
