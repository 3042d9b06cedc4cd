"""``python -m judge problems list|add|check|publish|unpublish``: the bank on the server
machine, through the same services as the admin pages (``web.admin``); every change goes
to the audit log as done by ``cli``. A running server picks changes up within 10 s.

    problems add DIR|ZIP [--check [--publish]]   store a version; validated by the
                                                  server's workers, or here with --check
    problems check SLUG [--version HASH]          validate a stored version here, now
    problems publish SLUG [--version HASH]        (a valid version; default: the newest)
    problems unpublish SLUG
"""

from __future__ import annotations

import argparse
from pathlib import Path

from sqlalchemy.orm import Session

from judge.check import check_problem
from judge.cli_base import UsageError, cuda_available
from judge.isolation import make_launcher
from judge.render import paint
from web import bank_admin, db
from web.cli.datadir import open_data
from web.data import bank
from web.errors import DomainError
from web.models import ProblemVersion


def cmd_list(args: argparse.Namespace) -> int:
    data = open_data(args)
    with data.sessions() as session:
        latest = bank.latest_versions(session)
        print(f"{'no.':>4}  {'slug':<32} {'published':<14} newest")
        for record in bank.all_problems(session):
            shown = bank.published_version(session, record)
            newest = latest.get(record.id)
            newest_text = (f"{newest.content_hash[:12]} {newest.status} ({newest.origin}, "
                           f"#{newest.id})" if newest else "-")
            print(f"{record.number:>4}  {record.slug:<32} "
                  f"{shown.content_hash[:12] if shown else '-':<14} {newest_text}")
    return 0


def cmd_add(args: argparse.Namespace) -> int:
    data = open_data(args)
    source = Path(args.package)
    if source.is_dir():
        package: dict = {"folder": source}
    elif source.is_file():
        package = {"zip_data": source.read_bytes()}
    else:
        raise UsageError(f"{source}: no such folder or zip")
    with data.sessions() as session:
        try:  # as an upload: refused with the reason, nothing stored
            version, created = bank_admin.add_version(
                session, data.store, None, None, db.utcnow(), origin="cli",
                note=args.note.strip() or source.name,
                validate=not args.check, **package)
        except DomainError as e:
            raise UsageError(e.message.en) from None
        vid, status, slug = version.id, version.status, version.problem.slug
        content_hash = version.content_hash
    print(f"{slug}: version {content_hash[:12]} (#{vid}) "
          f"{'stored' if created else 'already stored'}, {status}")
    if args.check:
        code = _check(args, slug, content_hash)
        if code == 0 and args.publish:
            return _publish(args, slug, content_hash)
        return code
    if status == "uploaded":
        print("queued for validation by the server's workers; see /admin/problems or "
              "run `python -m judge problems check " + slug + "`")
    return 0


def _version(session: Session, slug: str, content_hash: str | None) -> ProblemVersion:
    record = bank.problem_record(session, slug)
    if record is None:
        raise UsageError(f"no problem {slug!r} in the bank (see `problems list`)")
    found = [v for v in bank.versions(session, record.id)
             if content_hash is None or v.content_hash.startswith(content_hash)]
    if not found:
        raise UsageError(f"{slug} has no version {content_hash!r}")
    return found[0]


def _check(args: argparse.Namespace, slug: str, content_hash: str | None) -> int:
    data = open_data(args)
    with data.sessions() as session:
        full_hash = _version(session, slug, content_hash).content_hash
    problem = data.store.load(full_hash)
    launcher = make_launcher(args.no_sandbox)

    def progress(outcome) -> None:
        mark = paint("✓", "32") if outcome.ok else paint("✗", "31")
        print(f"   {mark} {outcome.label}: {outcome.report.verdict}", flush=True)

    print(f"checking {slug} {full_hash[:12]} ...", flush=True)
    try:
        result = check_problem(problem, launcher, workers=args.jobs, cuda=cuda_available(),
                               on_outcome=progress)
    finally:
        launcher.close()
    report = result.to_json()  # what a worker sends: the calibration, warnings, time
    with data.sessions() as session:
        bank_admin.record_validation(session, None, _version(session, slug, full_hash), report,
                                db.utcnow())
    if result.ok:
        print(paint(f"✓ {slug} {full_hash[:12]} is valid", "32"))
        return 0
    print(paint(f"✗ {slug} {full_hash[:12]} is invalid", "31"))
    for line in result.problems():
        print("   " + line.replace("\n", "\n   "))
    return 1


def cmd_check(args: argparse.Namespace) -> int:
    return _check(args, args.slug, args.version)


def _publish(args: argparse.Namespace, slug: str, content_hash: str | None) -> int:
    data = open_data(args)
    with data.sessions() as session:
        version = _version(session, slug, content_hash)
        try:
            bank_admin.publish(session, None, None, version, db.utcnow())
        except DomainError as e:
            raise UsageError(e.message.en) from None
        print(f"{slug}: published {version.content_hash[:12]} (a running server shows it "
              f"within 10 s)")
    return 0


def cmd_publish(args: argparse.Namespace) -> int:
    return _publish(args, args.slug, args.version)


def cmd_unpublish(args: argparse.Namespace) -> int:
    data = open_data(args)
    with data.sessions() as session:
        record = bank.problem_record(session, args.slug)
        if record is None:
            raise UsageError(f"no problem {args.slug!r} in the bank")
        bank_admin.unpublish(session, None, None, record, db.utcnow())
    print(f"{args.slug}: unpublished")
    return 0
