"""``python -m judge``: grade a file, check packages (and, with the web extras, serve).

Exit status: 0 accepted (or every package passed), 1 any other verdict (or a package
failed), 2 a usage or internal error.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import sys
from pathlib import Path

from judge.i18n import DEFAULT_LANG, LANGS
from judge.package import PackageError, find, load_all, load_problem
from judge.render import indent, paint, render
from judge.verdict import Verdict

log = logging.getLogger("judge")


class UsageError(Exception):
    """Bad arguments or input; printed as one line, exit status 2."""


def make_launcher(args: argparse.Namespace):
    from judge.isolation import launcher_from_args

    return launcher_from_args(args)


def add_isolation_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-sandbox", action="store_true",
                   help="DEVELOPMENT ONLY: run submissions as plain child processes")


def _problems(root: str | None):
    try:
        return load_all(Path(root) if root else None)
    except PackageError as e:
        raise UsageError(str(e)) from None


def _problem(args: argparse.Namespace):
    """PROBLEM may be a slug, a number, or a package folder."""
    path = Path(args.problem)
    if path.is_dir() and (path / "problem.toml").is_file():
        return load_problem(path)
    return find(_problems(args.problems), args.problem)


def cmd_grade(args: argparse.Namespace) -> int:
    from judge.grader import Options, grade

    problem = _problem(args)
    path = Path(args.file)
    try:
        code = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"cannot read {path}: {e}") from None
    unknown = sorted(set(args.case or ()) - {c.name for c in problem.tests.cases})
    if unknown:
        raise UsageError(f"{problem.slug} has no case {', '.join(unknown)} (its cases: "
                         f"{', '.join(c.name for c in problem.tests.cases)})")
    launcher = make_launcher(args)
    try:
        options = Options(seed=args.seed, public_only=args.public_only,
                          cases=tuple(args.case or ()), throughput=not args.no_throughput,
                          cuda=_cuda_available())
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
    if report.verdict is Verdict.INTERNAL_ERROR:
        return 2
    return 0 if report.verdict is Verdict.ACCEPTED else 1


def cmd_check(args: argparse.Namespace) -> int:
    from judge.check import check_problem

    if args.problem:
        problems = [_problem(argparse.Namespace(problem=p, problems=args.problems))
                    for p in args.problem]
    else:
        problems = _problems(args.problems)
    launcher = make_launcher(args)
    bad = 0
    try:
        for problem in problems:
            def progress(outcome) -> None:
                if args.verbose:
                    mark = paint("✓", "32") if outcome.ok else paint("✗", "31")
                    print(f"   {mark} {outcome.label}: {outcome.report.verdict}", flush=True)

            result = check_problem(problem, launcher, seed=args.seed, workers=args.jobs,
                                   throughput=not args.no_throughput,
                                   cuda=_cuda_available(), on_outcome=progress)
            skipped = (f", {len(result.skipped)} skipped: they need CUDA"
                       if result.skipped else "")
            if args.verbose:
                for label in result.skipped:
                    print(f"   - {label}: skipped (needs CUDA)", flush=True)
            if result.ok:
                print(paint(f"✓ {problem.slug}", "32") +
                      f"  ({len(result.outcomes)} files judged{skipped})", flush=True)
            else:
                bad += 1
                print(paint(f"✗ {problem.slug}", "31"), flush=True)
                for line in result.problems():
                    print(indent(line, 3))
    finally:
        launcher.close()
    print(f"{len(problems) - bad} / {len(problems)} packages pass")
    return 1 if bad else 0


def _cuda_available() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:
        return False


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m judge", description=__doc__.splitlines()[0])
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
    p.add_argument("--lang", choices=LANGS, default=DEFAULT_LANG)
    add_isolation_args(p)
    p.set_defaults(fn=cmd_grade)

    p = sub.add_parser("check", help="validate problem packages")
    p.add_argument("problem", nargs="*", help="slugs, numbers or folders (default: all)")
    p.add_argument("--seed", type=int)
    p.add_argument("-j", "--jobs", type=int, default=2, help="files judged at once")
    p.add_argument("-v", "--verbose", action="store_true", help="one line per judged file")
    p.add_argument("--no-throughput", action="store_true", help="skip throughput checks")
    add_isolation_args(p)
    p.set_defaults(fn=cmd_check)

    try:
        from judge.cli_server import add_server_commands
    except ImportError:
        pass  # the web extras are not installed
    else:
        add_server_commands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        return int(args.fn(args) or 0)
    except (UsageError, PackageError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
