"""The bundled problems (``JUDGE_PROBLEMS_DIR``, default ``./problems``), seeded into the
bank. They are trusted: ``python -m judge check`` validates them in CI, so seeding stores
them as ``valid`` and publishes them, at the first start and whenever the folder changes
(the app checks every 10 s). An admin takes a problem over by uploading or editing a
version of it, or by unpublishing it: from then on changes in the folder are stored as
valid versions but not published."""

from __future__ import annotations

import logging
from datetime import datetime
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from judge.package import PackageError, package_hash
from judge.problem_store import Store, Stored
from web.data import bank
from web.models import ProblemVersion

log = logging.getLogger("web.bundled")


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
            record = bank.problem_record(db, src.name)
            if record is not None and db.scalar(select(ProblemVersion.id).where(
                    ProblemVersion.problem_id == record.id,
                    ProblemVersion.content_hash == with_hash)) is not None:
                continue
            stored = store.put(folder=src)
            problem = stored.problem
            if problem.slug != src.name:
                raise PackageError(f"the folder must be named after its slug {problem.slug!r}")
            new = bank.problem_record(db, problem.slug) is None
            version, created = bank.add_version(db, problem, "bundled", None, now,
                                           note=f"bundled: {src.name}", status="valid")
            if not created:
                continue
            version.report = {"ok": True, "trusted": "bundled (checked by `python -m judge "
                                                     "check` in CI)", "files": []}
            version.validated_at = now
            current = bank.published_version(db, version.problem)
            if new or (current is not None and current.origin == "bundled"):
                bank.publish(db, version)
            db.commit()
            changed = True
            log.info("bundled problem %s stored as %s", problem.slug, version.content_hash[:12])
        except (PackageError, OSError) as e:
            db.rollback()
            if stored is not None and stored.new:
                bank.discard_unused(db, store, stored.problem.content_hash)
            log.error("bundled problem %s left out: %s", src.name, e)
    return changed
