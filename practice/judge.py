#!/usr/bin/env python3
"""练习题的本地判题工具 / judge the practice problems on your own machine.

    python practice/judge.py doctor              # 本机能判哪些题（PyTorch、CUDA、MPS）
    python practice/judge.py list                # 题目列表
    python practice/judge.py start 1             # 复制第 1 题的模板到 practice/workspace/
    python practice/judge.py test 1              # 用公开用例判 practice/workspace/ 里你的代码
    python practice/judge.py test 1 my.py --run  # 只跑样例；也可以指定别的文件
    python practice/judge.py check               # （维护者）检查题目包
    python practice/judge.py submit 1 --server URL   # 提交到评测网站，实时显示进度
    python practice/judge.py run 1 --server URL      # 在网站的沙箱里只跑公开用例（不算提交）

题号可以写编号（1）或 slug（padding-collate）。只需要 PyTorch；隐藏用例只在网站上评测。
Ids are numbers or slugs. Needs only PyTorch; hidden cases are judged online only.
Add --lang en for English.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from judge.i18n import T  # noqa: E402
from judge.package import (  # noqa: E402
    DIFFICULTY,
    PackageError,
    Problem,
    UnknownProblem,
    find,
    load_all,
)
from judge.render import paint, render  # noqa: E402

WORKSPACE = HERE / "workspace"


def say(lang: str, zh: str, en: str) -> None:
    print(T(zh, en)(lang))


def problems() -> list[Problem]:
    root = Path(os.environ.get("JUDGE_PROBLEMS_DIR") or ROOT / "problems")
    return load_all(root)


def workspace_file(p: Problem) -> Path:
    return WORKSPACE / f"{p.number:03d}-{p.slug}.py"


def title(p: Problem, lang: str) -> str:
    return p.meta.title.en if lang == "en" else p.meta.title.zh


# ---------------------------------------------------------------- verbs


def cmd_doctor(args: argparse.Namespace) -> int:
    from judge.capabilities import detect

    lang = args.lang
    info = detect()
    ok, no = paint("✓", "32"), paint("✗", "31")
    print(f"Python {info['python']} ({info['platform']})")
    gpu = ", ".join(info["devices"]) if info["devices"] else None
    rows = [
        ("PyTorch", info["torch"], T("所有题目都需要", "every problem needs it")),
        ("NumPy", info["numpy"], T("部分题目的场景需要", "some problems' scenarios need it")),
        ("CUDA", gpu and f"{gpu} (CUDA {info['cuda']})",
         T("标记为 CUDA 的用例", "cases marked CUDA")),
        ("MPS", "Apple GPU" if info["mps"] else None, T("本地试验用（评测在 CPU/CUDA 上）",
                                                         "for your own experiments")),
    ]
    missing = T("未检测到", "not found")(lang)
    for name, value, use in rows:
        print(f"  {ok if value else no} {name:<8} {value or missing:<36} {use(lang)}")
    if not info["torch"]:
        say(lang, "先安装 PyTorch：pip install torch", "Install PyTorch first: pip install torch")
        return 1
    runnable = 0
    all_problems = problems()
    for p in all_problems:
        needs = p.meta.requires
        runnable += (not needs.cuda or bool(info["devices"])) and (
            not needs.numpy or bool(info["numpy"]))
    say(lang, f"本机可以判题的题目：{runnable} / {len(all_problems)}",
        f"problems this machine can judge: {runnable} / {len(all_problems)}")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    for p in problems():
        diff = DIFFICULTY[p.meta.difficulty](args.lang)
        done = paint(" ✓", "32") if workspace_file(p).exists() else ""
        tags = ", ".join(p.meta.tags)
        print(f"  {p.number:>3}. {title(p, args.lang)}  {diff}  "
              f"{paint(f'id={p.slug}  [{tags}]', '90')}{done}")
    return 0


def cmd_start(args: argparse.Namespace) -> int:
    p = find(problems(), args.id)
    WORKSPACE.mkdir(exist_ok=True)
    dest = workspace_file(p)
    if not dest.exists():
        shutil.copyfile(p.dir / "starter.py", dest)
    diff = DIFFICULTY[p.meta.difficulty](args.lang)
    print(paint(f"#{p.number} {title(p, args.lang)}（{diff}）", "1"))
    print(p.statement(args.lang))
    shown = dest.relative_to(Path.cwd()) if dest.is_relative_to(Path.cwd()) else dest
    print(paint(T(f"\n模板已复制到 {shown}", f"\nThe starter is in {shown}")(args.lang), "36"))
    say(args.lang, f"写完后运行：python practice/judge.py test {p.number}",
        f"When ready: python practice/judge.py test {p.number}")
    return 0


def cmd_test(args: argparse.Namespace) -> int:
    from judge.expected import FILE, load_recording
    from judge.grader import Options, grade
    from sandbox.launch import PlainLauncher

    p = find(problems(), args.id)
    path = Path(args.file) if args.file else workspace_file(p)
    if not path.is_file():
        say(args.lang, f"没有找到你的代码 {path}：先运行 python practice/judge.py start {p.number}",
            f"No code at {path}: run python practice/judge.py start {p.number} first")
        return 2
    try:
        code = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        say(args.lang, f"{path} 不是 UTF-8 文本", f"{path} is not UTF-8 text")
        return 2
    expected = None
    if not (p.dir / "reference.py").is_file():
        expected = load_recording(p.dir / FILE)
    options = Options(public_only=True, examples_only=args.run, throughput=False,
                      cuda=_cuda(), expected=expected)
    # Your own code on your own machine: a plain child process, no sandbox needed.
    report = grade(p, code, PlainLauncher(), options)
    print(paint(f"#{p.number} {title(p, args.lang)} ← {path}", "1"))
    print(render(report, args.lang))
    if not args.run and report.verdict == "accepted":
        say(args.lang, "公开用例全部通过。隐藏用例和速度检查请在网站上提交。",
            "All public cases pass. Submit online for the hidden cases and the speed check.")
    return 0 if report.verdict == "accepted" else 1


def cmd_check(args: argparse.Namespace) -> int:
    from sandbox.launch import PlainLauncher

    chosen = [find(problems(), i) for i in args.ids] if args.ids else problems()
    launcher = PlainLauncher()
    bad = 0
    for p in chosen:
        if not (p.dir / "reference.py").is_file():
            say(args.lang, f"- {p.slug}：练习包里没有参考解答，无法检查",
                f"- {p.slug}: the practice pack has no reference; nothing to check")
            continue
        from judge.check import check_problem  # the repository's, not the pack's

        result = check_problem(p, launcher)
        if result.ok:
            if args.verbose:
                print(paint(f"✓ {p.slug}", "32"))
        else:
            bad += 1
            print(paint(f"✗ {p.slug}", "31"))
            for line in result.problems():
                print("   " + line.replace("\n", "\n   "))
    say(args.lang, f"{len(chosen) - bad} / {len(chosen)} 道题检查通过",
        f"{len(chosen) - bad} / {len(chosen)} problems pass")
    return 1 if bad else 0


def cmd_submit(args: argparse.Namespace) -> int:
    from practice.remote import submit

    p = find(problems(), args.id)
    path = Path(args.file) if args.file else workspace_file(p)
    if not path.is_file():
        say(args.lang, f"没有找到你的代码 {path}", f"No code at {path}")
        return 2
    return submit(p, path, args.server, args.lang, args.username, args.token,
                  what="runs" if args.cmd == "run" else "submissions")


def _cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:
        return False


# ---------------------------------------------------------------- main


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python practice/judge.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lang", choices=("zh", "en"), default=os.environ.get("JUDGE_LANG", "zh"))
    # --lang also works after the verb (test 1 --lang en).
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--lang", choices=("zh", "en"), default=argparse.SUPPRESS)
    sub = ap.add_subparsers(dest="cmd", required=True)
    add = sub.add_parser

    def parser(*args, **kwargs):
        return add(*args, parents=[common], **kwargs)

    sub.add_parser = parser  # type: ignore[method-assign]
    sub.add_parser("doctor", help="本机能判哪些题 / what this machine can judge"
                   ).set_defaults(fn=cmd_doctor)
    sub.add_parser("list", help="题目列表 / the problems").set_defaults(fn=cmd_list)
    s = sub.add_parser("start", help="复制模板并打印题目 / copy the starter, show the statement")
    s.add_argument("id")
    s.set_defaults(fn=cmd_start)
    s = sub.add_parser("test", help="用公开用例判题 / judge with the public cases")
    s.add_argument("id")
    s.add_argument("file", nargs="?")
    s.add_argument("--run", action="store_true", help="只跑样例 / the examples only")
    s.set_defaults(fn=cmd_test)
    s = sub.add_parser("check", help="（维护者）检查题目包 / (maintainers) check packages")
    s.add_argument("ids", nargs="*")
    s.add_argument("-v", "--verbose", action="store_true")
    s.set_defaults(fn=cmd_check)
    for verb, what in (("submit", "提交到评测网站 / submit to a judge server"),
                       ("run", "在网站上只跑公开用例，不算提交 / run the public cases on a "
                               "judge server, not a submission")):
        s = sub.add_parser(verb, help=what)
        s.add_argument("id")
        s.add_argument("file", nargs="?")
        s.add_argument("--server", required=True, help="e.g. http://127.0.0.1:8000")
        s.add_argument("--username", help="(or JUDGE_USERNAME; the password is asked for)")
        s.add_argument("--token", help="an API token (or JUDGE_TOKEN) instead of a password")
        s.set_defaults(fn=cmd_submit)
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.fn(args)
    except PackageError as e:
        text = e.text(args.lang) if isinstance(e, UnknownProblem) else str(e)
        print(T(f"错误：{text}", f"error: {text}")(args.lang), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
