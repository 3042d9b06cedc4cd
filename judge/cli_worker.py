"""``python -m judge worker`` (judge jobs for a server, over HTTP) and ``python -m judge
pack`` (build the practice pack): core commands that run for a server without being part
of it. ``worker`` needs the ``worker`` extra (httpx, the sandbox's seccomp binding)."""

from __future__ import annotations

import argparse
import logging
import os
from pathlib import Path

from judge.cli_base import UsageError, add_isolation_args, load_problems

log = logging.getLogger("judge.cli")


def quiet_http_logs() -> None:
    """Verbose logs, except for the HTTP and migration libraries' chatter."""
    logging.getLogger().setLevel(logging.INFO)
    for noisy in ("httpx", "httpcore", "alembic"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def cmd_worker(args: argparse.Namespace) -> int:
    from judge.worker_main import main

    token = os.environ.get("JUDGE_WORKER_TOKEN", "")
    token_file = args.token_file or (None if token else os.environ.get("JUDGE_WORKER_TOKEN_FILE"))
    if token_file:
        try:
            token = Path(token_file).read_text().strip()
        except OSError as e:
            raise UsageError(f"cannot read the worker token from {token_file}: {e.strerror}"
                             ) from None
    if not token:
        raise UsageError("no worker token: set JUDGE_WORKER_TOKEN (or JUDGE_WORKER_TOKEN_FILE) "
                         "or pass --token-file (the server keeps it in its data folder, file "
                         "worker_token)")
    quiet_http_logs()
    root = Path(args.problems) if args.problems else None
    return main(args.server, token, slot=args.slot, gpu=args.gpu, no_sandbox=args.no_sandbox,
                problems_root=root, name=args.name,
                store=Path(args.store) if args.store else None)


def cmd_pack(args: argparse.Namespace) -> int:
    """Every problem whose public part can be made goes in; one that cannot is left out
    loudly rather than costing learners the whole pack."""
    from judge.isolation import make_launcher
    from judge.pack import public_parts, zip_pack

    problems = load_problems(args.problems)
    parts, left_out = [], []
    launcher = make_launcher(args.no_sandbox)
    try:
        for problem in problems:
            try:
                parts.append((problem, *public_parts(problem, launcher)))
            except Exception as e:
                left_out.append(problem.slug)
                log.error("practice pack: leaving out %s: %s: %s", problem.slug,
                          type(e).__name__, e)
    finally:
        launcher.close()
    if not parts:
        raise UsageError("no problem can go in the practice pack")
    Path(args.out).write_bytes(zip_pack(parts))
    print(f"wrote {args.out} ({len(parts)} problems"
          + (f"; left out: {', '.join(left_out)}" if left_out else "") + ")")
    return 0


def add_worker_commands(sub) -> None:
    p = sub.add_parser("worker", help="judge jobs for a server (token: $JUDGE_WORKER_TOKEN, "
                                      "or a file: $JUDGE_WORKER_TOKEN_FILE, --token-file)")
    p.add_argument("--server", required=True, help="the web app's URL")
    p.add_argument("--slot", type=int, default=0, help="this worker's number on the machine")
    p.add_argument("--gpu", default="auto", help="auto (slot i takes GPU i), none, or an index")
    p.add_argument("--token-file", help="read the worker token from this file")
    p.add_argument("--name", help="shown to admins (default: host/slot/pid)")
    p.add_argument("--store", help="where problem versions are kept (default: "
                                   "~/.cache/torch-judge/bank; downloaded from the server "
                                   "when missing)")
    add_isolation_args(p)
    p.set_defaults(fn=cmd_worker, extra="worker")

    p = sub.add_parser("pack", help="build the practice pack (a zip) into OUT")
    p.add_argument("out")
    add_isolation_args(p)
    p.set_defaults(fn=cmd_pack)
