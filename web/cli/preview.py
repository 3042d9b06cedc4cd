"""``python -m judge preview DIR|SLUG``: serve one package on a local page as learners will
see it (web/preview.py), reloaded whenever one of its files changes. No database, no
login; "Run examples" judges in the sandbox unless ``--no-sandbox``."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import uvicorn

from judge.cli_base import UsageError, cuda_available, find_problem
from judge.package import PackageError

log = logging.getLogger("judge.preview")

ANY_ADDRESS = ("0.0.0.0", "::", "")
LOOPBACK = ["127.0.0.1", "localhost", "::1"]


def package_folder(ident: str, problems_root: str | None) -> Path:
    """A folder (it need not hold a package yet: the page says what is missing, and shows
    the package as soon as it loads), else a problem of the bank by slug or number."""
    path = Path(ident)
    if path.is_dir():
        return path.resolve()
    try:
        return find_problem(ident, problems_root).dir
    except (PackageError, UsageError) as e:
        raise UsageError(f"{ident} is not a folder, nor a problem of the bank ({e}); make "
                         f"the folder first, e.g. cp -r problems/_template {ident}") from None


def allowed_hosts(host: str) -> list[str] | None:
    """The Host names the server answers to: the address it listens on and the loopback
    names (None, any name, when it listens on every address)."""
    return None if host in ANY_ADDRESS else sorted({host, *LOOPBACK})


def cmd_preview(args: argparse.Namespace) -> int:
    from judge.isolation import make_launcher
    from web.preview import create_preview_app

    folder = package_folder(args.package, args.problems)
    launcher = make_launcher(args.no_sandbox)
    try:
        app = create_preview_app(folder, launcher, cuda=cuda_available(),
                                 hosts=allowed_hosts(args.host))
        shown = "127.0.0.1" if args.host in ANY_ADDRESS else args.host
        print(f"preview of {folder}: http://{shown}:{args.port}/  (isolation "
              f"{launcher.isolation}; the page reloads when a file changes; Ctrl+C stops it)",
              flush=True)
        uvicorn.run(app, host=args.host, port=args.port,
                    log_level="info" if args.verbose else "warning")
    finally:
        launcher.close()
    return 0
