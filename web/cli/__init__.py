"""The web's commands of ``python -m judge``: ``serve`` (the app and its local workers),
``admin`` (accounts), ``problems`` (the bank) and ``preview`` (one package's pages, for its
author), plus ``make-admin`` (an older spelling of
``admin promote``/``demote``). ``judge.cli`` finds :func:`add_commands` through the
``torch_judge.commands`` entry point, so the core never imports the web.

This module only declares the commands: each one's code is imported when it runs
(``python -m judge grade`` does not pay for FastAPI and SQLAlchemy), after ``judge.cli``
has checked that the ``web`` extra is installed.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable

from judge.cli_base import add_isolation_args

EXTRA = "web"


def _command(module: str, name: str) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        return getattr(importlib.import_module(module), name)(args)

    return run


def _data_dir(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data-dir", help="default: $JUDGE_DATA_DIR or ./data")


def add_commands(sub) -> None:
    add_serve(sub)
    add_admin(sub)
    add_problems(sub)
    add_preview(sub)


def add_serve(sub) -> None:
    p = sub.add_parser("serve", help="serve the web app with local workers")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--workers", type=int, default=1,
                   help="local worker processes (default 1: speed checks are measured "
                        "honestly only when jobs do not compete for the CPU)")
    p.add_argument("--gpu", default="auto", help="auto (worker i takes GPU i), none")
    p.add_argument("--web-processes", type=int, default=1, metavar="N",
                   help="uvicorn processes serving the app on the port (default 1; more "
                        "use more cores for pages: docs/deploy.md, 'Capacity')")
    p.add_argument("--data-dir", help="database and files (default: $JUDGE_DATA_DIR or ./data)")
    p.add_argument("--access-log", action="store_true", help="log every request")
    p.add_argument("--no-pack-prebuild", action="store_true",
                   help="build the practice pack on its first download, not at start")
    add_isolation_args(p)
    p.set_defaults(fn=_command("web.cli.serve", "cmd_serve"), extra=EXTRA)


def add_admin(sub) -> None:
    admin = sub.add_parser("admin", help="user accounts (create-user, promote, disable ...)")
    verbs = admin.add_subparsers(dest="verb", required=True)
    p = verbs.add_parser("create-user", help="create an account (password from a prompt, "
                                             "or the first line of stdin)")
    p.add_argument("username")
    p.add_argument("--admin", action="store_true", help="with admin rights")
    p.add_argument("--password-stdin", action="store_true")
    _data_dir(p)
    p.set_defaults(fn=_command("web.cli.accounts", "cmd_create_user"), extra=EXTRA)
    for action, text in (("promote", "grant admin rights"), ("demote", "revoke admin rights"),
                         ("disable", "lock an account out (login, session, API tokens)"),
                         ("enable", "let a disabled account in again")):
        p = verbs.add_parser(action, help=text)
        p.add_argument("username")
        _data_dir(p)
        p.set_defaults(fn=_command("web.cli.accounts", "cmd_change_user"), action=action,
                       extra=EXTRA)

    p = sub.add_parser("make-admin", help="grant (or --revoke) admin rights: the same as "
                                          "`admin promote` (`admin demote`)")
    p.add_argument("username")
    p.add_argument("--revoke", action="store_true")
    _data_dir(p)
    p.set_defaults(fn=_command("web.cli.accounts", "cmd_make_admin"), extra=EXTRA)


def add_problems(sub) -> None:
    problems = sub.add_parser("problems", help="the server's problem bank (list, add, check, "
                                               "publish ...)")
    verbs = problems.add_subparsers(dest="verb", required=True)

    def verb(name: str, fn: str, text: str) -> argparse.ArgumentParser:
        p = verbs.add_parser(name, help=text)
        _data_dir(p)
        p.set_defaults(fn=_command("web.cli.problems", fn), extra=EXTRA)
        return p

    verb("list", "cmd_list", "every problem: published and newest version")
    p = verb("add", "cmd_add", "store a package (folder or zip) as a new version")
    p.add_argument("package", help="a package folder or a zip")
    p.add_argument("--check", action="store_true",
                   help="validate it here now instead of by the server's workers")
    p.add_argument("--publish", action="store_true", help="with --check: publish if valid")
    p.add_argument("--note", default="", help="a change note kept with the version (at most "
                   "200 characters; default: the folder's or zip's name)")
    p.add_argument("-j", "--jobs", type=int, default=2, help="files judged at once")
    add_isolation_args(p)
    p = verb("check", "cmd_check", "validate a stored version here (default: newest)")
    p.add_argument("slug")
    p.add_argument("--version", help="a content hash (or its start)")
    p.add_argument("-j", "--jobs", type=int, default=2, help="files judged at once")
    add_isolation_args(p)
    p = verb("publish", "cmd_publish", "show learners a valid version (default: newest)")
    p.add_argument("slug")
    p.add_argument("--version", help="a content hash (or its start)")
    p = verb("unpublish", "cmd_unpublish", "hide a problem from learners")
    p.add_argument("slug")


def add_preview(sub) -> None:
    p = sub.add_parser("preview", help="show a package as learners will see it (both "
                                       "languages, the editor, Run examples) on a local "
                                       "page that follows its files")
    p.add_argument("package", help="a package folder (or a bundled problem's slug or number)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8100)
    add_isolation_args(p)
    p.set_defaults(fn=_command("web.cli.preview", "cmd_preview"), extra=EXTRA)
