"""``python -m judge lint [DIR|SLUG ...]``: the guide's rules (judge/lint.py), for authors
and for CI.

Exit status: 0 when no package has an error (with ``--strict``: nor a warning), 1
otherwise, 2 on a usage error. ``--grade`` also judges each wrong_answer and runtime_error
fixture (no speed checks) and names the case that catches it; ``--fix`` joins the line
breaks inside Chinese sentences of the statements.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

from judge import lint
from judge.cli_base import UsageError, add_isolation_args, cuda_available, find_problem
from judge.i18n import T
from judge.package import problems_dir
from judge.render import paint


def targets(args: argparse.Namespace) -> list[tuple[Path, str]]:
    """(folder, the name it came under) of every package to lint: the ones named, else
    every folder of the problems folder with a problem.toml (the template too)."""
    if not args.problem:
        root = Path(args.problems) if args.problems else problems_dir()
        return [(p, p.name) for p in sorted(root.iterdir())
                if p.is_dir() and (p / "problem.toml").is_file()]
    found = []
    for ident in args.problem:
        path = Path(ident)
        if path.is_dir():
            if not (path / "problem.toml").is_file():
                raise UsageError(f"{path}: no problem.toml here")
            found.append((path, path.resolve().name))
        else:
            problem = find_problem(ident, args.problems)
            found.append((problem.dir, problem.dir.name))
    return found


def cmd_lint(args: argparse.Namespace) -> int:
    bad = 0
    for folder, name in targets(args):
        if args.fix:
            for changed in lint.fix_statements(folder):
                print(f"   fixed {changed}: joined the line breaks inside Chinese sentences")
        found = lint.lint_folder(folder, folder_name=name)
        if args.grade and not lint.errors(found):
            found += graded_findings(folder, args)
        failing = [f for f in found
                   if f.level == "error" or (args.strict and f.level == "warning")]
        bad += bool(failing)
        mark = paint("✗", "31") if failing else paint("✓", "32")
        print(f"{mark} {name}" + (f"  ({len(found)} findings)" if found else ""))
        for f in found:
            level = paint(f.level, {"error": "31", "warning": "33"}.get(f.level, "32"))
            print(f"   {level}: {f.where}: {f.text(args.lang)}")
    return 1 if bad else 0


def graded_findings(folder: Path, args: argparse.Namespace) -> list[lint.Finding]:
    """Judge the wrong_answer and runtime_error fixtures (judge/check.py, without the
    speed checks) and say which case catches each: an error when no hidden case does."""
    from judge.calibration import CAUGHT_BY_HIDDEN, caught_by
    from judge.check import check_problem
    from judge.isolation import make_launcher
    from judge.package import load_problem

    problem = load_problem(folder, named_by_slug=False)
    launcher = make_launcher(args.no_sandbox)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            result = check_problem(problem, launcher, workers=args.jobs, throughput=False,
                                   cuda=cuda_available(),
                                   only=lambda label, expected: expected in CAUGHT_BY_HIDDEN)
    finally:
        launcher.close()
    found = [lint.error("check", e, e) for e in result.errors]
    for o in result.outcomes:
        name, public = caught_by(o.report)
        if name is None:
            found.append(lint.error(o.label, "没有任何用例能发现它", "no case catches it"))
        elif public:
            found.append(lint.error(o.label, f"只有公开用例 {name} 能发现它，隐藏用例也要能",
                                    f"only public case {name} catches it; a hidden case "
                                    f"must too"))
        else:
            found.append(lint.Finding("info", o.label, T(f"被隐藏用例 {name} 发现",
                                                             f"caught by hidden case {name}")))
    return found


def add_lint_command(sub) -> None:
    p = sub.add_parser("lint", help="check a package against the rules of "
                       "docs/writing-problems.md, without running it")
    p.add_argument("problem", nargs="*", help="folders, slugs or numbers (default: every "
                   "package of the problems folder, the template too)")
    p.add_argument("--strict", action="store_true", help="fail on warnings too (CI)")
    p.add_argument("--grade", action="store_true", help="also judge the wrong_answer and "
                   "runtime_error fixtures and name the case that catches each")
    p.add_argument("--fix", action="store_true", help="join line breaks inside Chinese "
                   "sentences of the statements")
    p.add_argument("-j", "--jobs", type=int, default=2, help="files judged at once (--grade)")
    p.add_argument("--lang", choices=("zh", "en"), default="en")
    add_isolation_args(p)
    p.set_defaults(fn=cmd_lint)
