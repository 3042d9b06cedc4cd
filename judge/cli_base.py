"""What every ``python -m judge`` command shares: the usage error, the isolation flag,
finding problems, and saying which extra a command needs when it is missing. The launcher
a flag asks for is :func:`judge.isolation.make_launcher` (imported when a command runs: it
imports torch).

Commands that live elsewhere (the web's ``serve``, ``admin``, ``problems``) are found
through the ``torch_judge.commands`` entry-point group (see :mod:`judge.cli`) and use these
helpers; the core never imports them.
"""

from __future__ import annotations

import argparse
import re
from importlib import metadata
from pathlib import Path

from judge.package import PackageError, Problem, find, load_all, load_problem

DISTRIBUTION = "torch-judge"


class UsageError(Exception):
    """Bad arguments or input; printed as one line, exit status 2."""


def add_isolation_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-sandbox", action="store_true",
                   help="DEVELOPMENT ONLY: run submissions as plain child processes")


def load_problems(root: str | None) -> list[Problem]:
    try:
        return load_all(Path(root) if root else None)
    except PackageError as e:
        raise UsageError(str(e)) from None


def find_problem(ident: str, root: str | None) -> Problem:
    """A slug, a number, or a package folder."""
    path = Path(ident)
    if path.is_dir() and (path / "problem.toml").is_file():
        return load_problem(path)
    return find(load_problems(root), ident)


def cuda_available() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:
        return False


def extra_requirements(extra: str) -> list[str]:
    """The distributions an extra of this project (``web``, ``worker``) names, from the
    installed metadata (``Requires-Dist: fastapi>=0.110; extra == "web"``)."""
    try:
        requires = metadata.requires(DISTRIBUTION) or []
    except metadata.PackageNotFoundError:
        return []
    marker = re.compile(rf"""extra\s*==\s*['"]{re.escape(extra)}['"]""")
    names = []
    for line in requires:
        name = re.match(r"[A-Za-z0-9._-]+", line)
        if name and marker.search(line):
            names.append(name.group())
    return names


def missing_requirements(extra: str) -> list[str]:
    """The distributions of ``extra`` that are not installed."""
    missing = []
    for name in extra_requirements(extra):
        try:
            metadata.version(name)
        except metadata.PackageNotFoundError:
            missing.append(name)
    return missing


def check_extra(command: str, extra: str) -> None:
    """UsageError naming the extra to install when ``command`` cannot run without it."""
    missing = missing_requirements(extra)
    if missing:
        raise UsageError(f"`{command}` needs the {extra} extra, which is not installed "
                         f"(missing: {', '.join(missing)}). Install it with "
                         f"pip install '{DISTRIBUTION}[{extra}]' (from a checkout: "
                         f"pip install -e '.[{extra}]', or scripts/setup.sh)")
