"""``python -m judge admin create-user|promote|demote|disable|enable NAME`` and
``make-admin NAME [--revoke]`` (the same as ``admin promote``/``demote``): accounts on the
server machine, through the same services as the admin pages; every change goes to the
audit log as done by ``cli``."""

from __future__ import annotations

import argparse
import getpass
import sys

from judge.cli_base import UsageError
from web import account_rules, db
from web.account_rules import check_new_account
from web.cli.datadir import open_data
from web.data import accounts, audit_log
from web.errors import DomainError
from web.security import hash_password


def _read_password(args: argparse.Namespace) -> str:
    if args.password_stdin or not sys.stdin.isatty():
        return sys.stdin.readline().rstrip("\r\n")
    first = getpass.getpass("password: ")
    if getpass.getpass("again: ") != first:
        raise UsageError("the two passwords differ")
    return first


def cmd_create_user(args: argparse.Namespace) -> int:
    data = open_data(args)
    password = _read_password(args)
    try:
        check_new_account(args.username, password)
    except DomainError as e:
        raise UsageError(e.message.en) from None
    with data.sessions() as session:
        now = db.utcnow()
        user = accounts.create_user(session, args.username, hash_password(password), now,
                                   is_admin=args.admin)
        if user is None:
            raise UsageError(f"the username {args.username!r} is taken")
        audit_log.record(session, None, "create-user", user.username, now,
                            admin=args.admin)
        session.commit()
    print(f"created {args.username}{' (admin)' if args.admin else ''}")
    return 0


def change_user(args: argparse.Namespace, action: str) -> None:
    data = open_data(args)
    with data.sessions() as session:
        user = accounts.user_by_name(session, args.username)
        if user is None:
            raise UsageError(f"no user {args.username!r}")
        account_rules.change_user(session, None, user, action, db.utcnow())


def cmd_change_user(args: argparse.Namespace) -> int:
    change_user(args, args.action)
    print(f"{args.username}: {args.action}d")
    return 0


def cmd_make_admin(args: argparse.Namespace) -> int:
    change_user(args, "demote" if args.revoke else "promote")
    print(f"{args.username}: admin {'revoked' if args.revoke else 'granted'}")
    return 0
