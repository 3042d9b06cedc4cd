"""``python -m judge``: grade a file, check packages, run a worker, build the practice
pack; and the commands other parts of the project add (the web's ``serve``, ``admin``,
``problems``), found through the ``torch_judge.commands`` entry-point group so that the
core never imports them.

Exit status: 0 accepted (or every package passed), 1 any other verdict (or a package
failed), 2 a usage or internal error.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import sys
from importlib import metadata
from pathlib import Path

from judge.cli_base import (
    UsageError,
    add_isolation_args,
    check_extra,
    cuda_available,
    find_problem,
    load_problems,
)
from judge.cli_lint import add_lint_command
from judge.cli_worker import add_worker_commands
from judge.i18n import DEFAULT_LANG, LANGS, T
from judge.measurement import SPEED_MODES
from judge.package import PackageError
from judge.render import indent, paint, render
from judge.verdict import Verdict

log = logging.getLogger("judge")
COMMANDS_GROUP = "torch_judge.commands"  # entry points: add_commands(subparsers)
__all__ = ["COMMANDS_GROUP", "UsageError", "build_parser", "main"]


def cmd_grade(args: argparse.Namespace) -> int:
    from judge.grader import Options, grade
    from judge.isolation import make_launcher

    problem = find_problem(args.problem, args.problems)
    path = Path(args.file)
    try:
        code = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"cannot read {path}: {e}") from None
    # Read from tests.py's syntax tree: a package that did not ship with the judge is
    # imported only in its grader box (judge.trust).
    names = [c.name for c in problem.declared_cases]
    unknown = sorted(set(args.case or ()) - set(names))
    if unknown:
        raise UsageError(f"{problem.slug} has no case {', '.join(unknown)} (its cases: "
                         f"{', '.join(names)})")
    launcher = make_launcher(args.no_sandbox)
    try:
        options = Options(seed=args.seed, public_only=args.public_only,
                          cases=tuple(args.case or ()), throughput=not args.no_throughput,
                          cuda=cuda_available(), speed=args.speed)
        # Whatever a package's tests print must not corrupt --json: stdout is the report's.
        with contextlib.redirect_stdout(sys.stderr):
            report = grade(problem, code, launcher, options)
    finally:
        launcher.close()
    if args.json:
        print(json.dumps(report.to_json(args.lang), ensure_ascii=False, indent=2))
    else:
        title = problem.meta.title.en if args.lang == "en" else problem.meta.title.zh
        print(paint(f"{problem.number}. {title}  ← {path}  (seed {report.seed}, "
                    f"isolation {report.isolation})", "1"))
        print(render(report, args.lang))
    if args.case and problem.meta.throughput and not args.no_throughput:
        # The speed checks run after every case has passed, never with --case.
        checks = ", ".join(tp.name for tp in problem.meta.throughput)
        print(T(f"注意：只运行了选定的用例，速度检查（{checks}）没有运行",
                f"note: only the chosen cases ran; the speed checks ({checks}) were skipped"
                )(args.lang), file=sys.stderr)
    if report.verdict is Verdict.INTERNAL_ERROR:
        return 2
    return 0 if report.verdict is Verdict.ACCEPTED else 1


def cmd_check(args: argparse.Namespace) -> int:
    from judge.check import check_problem
    from judge.isolation import make_launcher

    if args.problem:
        problems = [find_problem(p, args.problems) for p in args.problem]
    else:
        problems = load_problems(args.problems)
    launcher = make_launcher(args.no_sandbox)
    bad = 0
    try:
        for problem in problems:
            def progress(outcome) -> None:
                if args.verbose:
                    mark = paint("✓", "32") if outcome.ok else paint("✗", "31")
                    ratios = ", ".join(f"{t.name} {t.ratio:.2f}x"
                                       for t in outcome.report.throughput if t.ratio is not None)
                    print(f"   {mark} {outcome.label}: {outcome.report.verdict}"
                          + (f"  ({ratios})" if ratios else ""), flush=True)

            result = check_problem(problem, launcher, seed=args.seed, workers=args.jobs,
                                   throughput=not args.no_throughput,
                                   cuda=cuda_available(), on_outcome=progress)
            bad += not print_check(problem, result, args.verbose, strict=args.strict)
    finally:
        launcher.close()
    print(f"{len(problems) - bad} / {len(problems)} packages pass")
    return 1 if bad else 0


def print_check(problem, result, verbose: bool, *, strict: bool = False) -> bool:
    """A package's check: its calibration table (judge/calibration.py), its warnings, and
    what failed. Whether it passes: with ``strict``, a warning fails it too (a wrong
    fixture that only a public case catches, a lint warning)."""
    from judge.calibration import table

    skipped = f", {len(result.skipped)} skipped: they need CUDA" if result.skipped else ""
    if verbose:
        for label in result.skipped:
            print(f"   - {label}: skipped (needs CUDA)", flush=True)
    if result.outcomes:
        print(indent(table(result.files()), 3))
    warnings = [str(f) for f in result.findings if f.level == "warning"] + [
        f"warning: {w}" for w in result.warnings]
    for warning in warnings:
        print(indent(paint("warning", "33") + warning.removeprefix("warning"), 3))
    took = f", {result.time_s:.0f} s"
    if result.ok and not (strict and warnings):
        print(paint(f"✓ {problem.slug}", "32") +
              f"  ({len(result.outcomes)} files judged{skipped}{took})", flush=True)
        return True
    print(paint(f"✗ {problem.slug}", "31") + f"  ({took[2:]})", flush=True)
    for line in result.problems():
        print(indent(line, 3))
    if result.ok:
        print(indent(f"{len(warnings)} warnings, and --strict fails on warnings", 3))
    return False


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m judge", description="Grade a file, check packages, run a worker; "
        "with the web package installed, serve and administer the site.")
    parser.add_argument("--problems", metavar="DIR",
                        help="the problem bank (default: $JUDGE_PROBLEMS_DIR or ./problems)")
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("grade", help="judge a file against all tests of a problem")
    p.add_argument("problem", help="a slug, a number, or a package folder")
    p.add_argument("file")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--public-only", action="store_true", help="only the public cases")
    p.add_argument("--seed", type=int, help="the seed for hidden inputs (default: random)")
    p.add_argument("--case", action="append", help="run only this case (repeatable)")
    p.add_argument("--no-throughput", action="store_true", help="skip throughput checks")
    p.add_argument("--speed", choices=SPEED_MODES, default="verdict",
                   help="verdict: stop each speed check once the bar is decided (default); "
                        "ranking: measure the ratio precisely, as for the leaderboard")
    p.add_argument("--lang", choices=LANGS, default=DEFAULT_LANG)
    add_isolation_args(p)
    p.set_defaults(fn=cmd_grade)

    p = sub.add_parser("check", help="validate problem packages")
    p.add_argument("problem", nargs="*", help="slugs, numbers or folders (default: all)")
    p.add_argument("--seed", type=int)
    p.add_argument("-j", "--jobs", type=int, default=2, help="files judged at once")
    p.add_argument("-v", "--verbose", action="store_true", help="one line per judged file")
    p.add_argument("--no-throughput", action="store_true", help="skip throughput checks")
    p.add_argument("--strict", action="store_true", help="fail on warnings too (CI, for "
                   "the bundled problems): a wrong_answer or runtime_error fixture that "
                   "no hidden case catches, a lint warning")
    add_isolation_args(p)
    p.set_defaults(fn=cmd_check)

    add_lint_command(sub)
    add_worker_commands(sub)
    if not add_plugin_commands(sub):
        parser.epilog = ("serve, admin, problems and preview come with the web package: "
                         "install this project (pip install -e '.[web]', or scripts/setup.sh)")
    return parser


def add_plugin_commands(sub) -> int:
    """The commands other packages of the project register (``[project.entry-points.
    "torch_judge.commands"]`` in pyproject.toml). A plugin that cannot be loaded is
    skipped with a warning: the core commands keep working. Returns how many loaded."""
    loaded = 0
    for entry in sorted(metadata.entry_points(group=COMMANDS_GROUP), key=lambda e: e.name):
        try:
            add_commands = entry.load()
        except ImportError as e:
            log.warning("commands %r cannot be loaded: %s", entry.name, e)
            continue
        add_commands(sub)
        loaded += 1
    return loaded


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        if getattr(args, "extra", None):
            check_extra(args.command, args.extra)
        return int(args.fn(args) or 0)
    except (UsageError, PackageError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
