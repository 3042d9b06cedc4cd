"""``python -m judge admin ...`` and ``python -m judge problems ...``: the admin's commands
on the server machine, working on the data folder (database and problem bank) directly,
like ``make-admin``. Every change goes to the audit log as done by ``cli``.

    admin create-user NAME [--admin] [--password-stdin]
    admin promote|demote|disable|enable NAME
    problems list
    problems add DIR|ZIP [--check [--publish]]   store a version; validated by the
                                                  server's workers, or here with --check
    problems check SLUG [--version HASH]          validate a stored version here, now
    problems publish SLUG [--version HASH]        (a valid version; default: the newest)
    problems unpublish SLUG
"""

from __future__ import annotations

import argparse
import getpass
import sys
from pathlib import Path

from judge.cli import UsageError, add_isolation_args


def _data(args: argparse.Namespace):
    """(settings, sessionmaker, store) of the data folder, migrated to the newest schema,
    with the bundled problems seeded (as the server does at start)."""
    from judge.package import problems_dir
    from web import admin_queries, db
    from web.bank import Store
    from web.settings import Settings

    settings = (Settings(data_dir=Path(args.data_dir)) if args.data_dir else Settings()).prepare()
    engine = db.make_engine(settings.db_url)
    db.migrate(engine)
    sessions, store = db.make_sessionmaker(engine), Store(settings.bank_dir)
    folder = Path(args.problems) if getattr(args, "problems", None) else (
        settings.problems_dir or problems_dir())
    with sessions() as session:
        admin_queries.seed(session, store, folder, db.utcnow())
    return settings, sessions, store


def _read_password(args: argparse.Namespace) -> str:
    if args.password_stdin or not sys.stdin.isatty():
        return sys.stdin.readline().rstrip("\r\n")
    first = getpass.getpass("password: ")
    if getpass.getpass("again: ") != first:
        raise UsageError("the two passwords differ")
    return first


def cmd_create_user(args: argparse.Namespace) -> int:
    from web import admin_queries, db, queries
    from web.errors import ClientError
    from web.routes.accounts import check_new_account
    from web.security import hash_password

    _, sessions, _ = _data(args)
    password = _read_password(args)
    try:
        check_new_account(args.username, password)
    except ClientError as e:
        raise UsageError(e.message.en) from None
    with sessions() as session:
        now = db.utcnow()
        user = queries.create_user(session, args.username, hash_password(password), now,
                                   is_admin=args.admin)
        if user is None:
            raise UsageError(f"the username {args.username!r} is taken")
        admin_queries.audit(session, None, "create-user", user.username, now,
                            admin=args.admin)
        session.commit()
    print(f"created {args.username}{' (admin)' if args.admin else ''}")
    return 0


def cmd_user_flag(args: argparse.Namespace) -> int:
    from web import admin_queries, db, queries

    _, sessions, _ = _data(args)
    with sessions() as session:
        user = queries.user_by_name(session, args.username)
        if user is None:
            raise UsageError(f"no user {args.username!r}")
        if args.action in ("promote", "demote"):
            admin_queries.set_admin(session, user, args.action == "promote")
        else:
            admin_queries.set_disabled(session, user, args.action == "disable")
        admin_queries.audit(session, None, args.action, user.username, db.utcnow())
        session.commit()
    print(f"{args.username}: {args.action}d")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    from web import admin_queries

    _, sessions, _ = _data(args)
    with sessions() as session:
        latest = admin_queries.latest_versions(session)
        print(f"{'no.':>4}  {'slug':<32} {'published':<14} newest")
        for record in admin_queries.all_problems(session):
            shown = admin_queries.published_version(session, record)
            newest = latest.get(record.id)
            newest_text = (f"{newest.content_hash[:12]} {newest.status} ({newest.origin}, "
                           f"#{newest.id})" if newest else "-")
            print(f"{record.number:>4}  {record.slug:<32} "
                  f"{shown.content_hash[:12] if shown else '-':<14} {newest_text}")
    return 0


def cmd_add(args: argparse.Namespace) -> int:
    from web import admin, db
    from web.errors import ClientError

    _, sessions, store = _data(args)
    source = Path(args.package)
    if source.is_dir():
        package: dict = {"folder": source}
    elif source.is_file():
        package = {"zip_data": source.read_bytes()}
    else:
        raise UsageError(f"{source}: no such folder or zip")
    with sessions() as session:
        try:  # as an upload: refused with the reason, nothing stored
            version, created = admin.add_version(
                session, store, None, None, db.utcnow(), origin="cli", note=source.name,
                validate=not args.check, **package)
        except ClientError as e:
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


def _version(session, slug: str, content_hash: str | None):
    from web import admin_queries

    record = admin_queries.problem_record(session, slug)
    if record is None:
        raise UsageError(f"no problem {slug!r} in the bank (see `problems list`)")
    found = [v for v in admin_queries.versions(session, record.id)
             if content_hash is None or v.content_hash.startswith(content_hash)]
    if not found:
        raise UsageError(f"{slug} has no version {content_hash!r}")
    return found[0]


def _check(args: argparse.Namespace, slug: str, content_hash: str | None) -> int:
    from sqlalchemy import update

    from judge.check import check_problem
    from judge.cli import _cuda_available, make_launcher
    from judge.render import paint
    from web import admin_queries, db
    from web.models import Job

    _, sessions, store = _data(args)
    with sessions() as session:
        version = _version(session, slug, content_hash)
        vid, full_hash = version.id, version.content_hash
    problem = store.load(full_hash)
    launcher = make_launcher(args)

    def progress(outcome) -> None:
        mark = paint("✓", "32") if outcome.ok else paint("✗", "31")
        print(f"   {mark} {outcome.label}: {outcome.report.verdict}", flush=True)

    print(f"checking {slug} {full_hash[:12]} ...", flush=True)
    try:
        result = check_problem(problem, launcher, workers=args.jobs, cuda=_cuda_available(),
                               on_outcome=progress)
    finally:
        launcher.close()
    report = {"ok": result.ok, "errors": result.errors,
              "files": [o.to_json() for o in result.outcomes], "skipped": result.skipped}
    with sessions() as session:
        now = db.utcnow()
        admin_queries.validation_finished(session, vid, report, now)
        # a validation still queued for the workers is answered already
        session.execute(update(Job).where(Job.version_id == vid, Job.status == "queued")
                        .values(status="done", finished_at=now))
        admin_queries.audit(session, None, "validate", slug, now, version=full_hash,
                            ok=result.ok)
        session.commit()
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
    from judge.package import PackageError
    from web import admin_queries, db

    _, sessions, _ = _data(args)
    with sessions() as session:
        version = _version(session, slug, content_hash)
        try:
            admin_queries.publish(session, version)
        except PackageError as e:
            raise UsageError(str(e)) from None
        admin_queries.audit(session, None, "publish", slug, db.utcnow(),
                            version=version.content_hash)
        session.commit()
        print(f"{slug}: published {version.content_hash[:12]} (a running server shows it "
              f"within 10 s)")
    return 0


def cmd_publish(args: argparse.Namespace) -> int:
    return _publish(args, args.slug, args.version)


def cmd_unpublish(args: argparse.Namespace) -> int:
    from web import admin_queries, db

    _, sessions, _ = _data(args)
    with sessions() as session:
        record = admin_queries.problem_record(session, args.slug)
        if record is None:
            raise UsageError(f"no problem {args.slug!r} in the bank")
        admin_queries.unpublish(session, record)
        admin_queries.audit(session, None, "unpublish", args.slug, db.utcnow())
        session.commit()
    print(f"{args.slug}: unpublished")
    return 0


def add_admin_commands(sub) -> None:
    def data_dir(p: argparse.ArgumentParser) -> None:
        p.add_argument("--data-dir", help="default: $JUDGE_DATA_DIR or ./data")

    admin = sub.add_parser("admin", help="user accounts (create-user, promote, disable ...)")
    verbs = admin.add_subparsers(dest="verb", required=True)
    p = verbs.add_parser("create-user", help="create an account (password from a prompt, "
                                             "or the first line of stdin)")
    p.add_argument("username")
    p.add_argument("--admin", action="store_true", help="with admin rights")
    p.add_argument("--password-stdin", action="store_true")
    data_dir(p)
    p.set_defaults(fn=cmd_create_user)
    for action, text in (("promote", "grant admin rights"), ("demote", "revoke admin rights"),
                         ("disable", "lock an account out (login, session, API tokens)"),
                         ("enable", "let a disabled account in again")):
        p = verbs.add_parser(action, help=text)
        p.add_argument("username")
        data_dir(p)
        p.set_defaults(fn=cmd_user_flag, action=action)

    problems = sub.add_parser("problems", help="the server's problem bank (list, add, check, "
                                               "publish ...)")
    verbs = problems.add_subparsers(dest="verb", required=True)
    p = verbs.add_parser("list", help="every problem: published and newest version")
    data_dir(p)
    p.set_defaults(fn=cmd_list)
    p = verbs.add_parser("add", help="store a package (folder or zip) as a new version")
    p.add_argument("package", help="a package folder or a zip")
    p.add_argument("--check", action="store_true",
                   help="validate it here now instead of by the server's workers")
    p.add_argument("--publish", action="store_true", help="with --check: publish if valid")
    p.add_argument("-j", "--jobs", type=int, default=2, help="files judged at once")
    data_dir(p)
    add_isolation_args(p)
    p.set_defaults(fn=cmd_add)
    p = verbs.add_parser("check", help="validate a stored version here (default: newest)")
    p.add_argument("slug")
    p.add_argument("--version", help="a content hash (or its start)")
    p.add_argument("-j", "--jobs", type=int, default=2, help="files judged at once")
    data_dir(p)
    add_isolation_args(p)
    p.set_defaults(fn=cmd_check)
    p = verbs.add_parser("publish", help="show learners a valid version (default: newest)")
    p.add_argument("slug")
    p.add_argument("--version", help="a content hash (or its start)")
    data_dir(p)
    p.set_defaults(fn=cmd_publish)
    p = verbs.add_parser("unpublish", help="hide a problem from learners")
    p.add_argument("slug")
    data_dir(p)
    p.set_defaults(fn=cmd_unpublish)
