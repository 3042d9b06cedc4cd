"""``python -m judge lint``: the rules of docs/writing-problems.md, checked without running
anything.

Lint reads a package's files (``problem.toml``, the statements, ``tests.py``'s syntax tree,
``submissions/``); it never imports or runs them, so it is quick and safe on an upload. A
finding is an **error** (the judge would refuse or mishandle the package: a missing key, a
public case after a hidden one, a folder not named after its slug, a statement missing in
one language) or a **warning** (a rule of the guide for a good package: at least two
accepted and six wrong_answer fixtures, no line break inside a Chinese sentence, a
commented bug per wrong fixture). Uploads are refused on errors; ``lint --strict`` (and CI,
for the bundled problems) fails on warnings too.

Whether each wrong fixture (wrong_answer, runtime_error) is caught by a *hidden* case can
only be known by running it: ``python -m judge check`` does (its calibration table names
the case that catches each fixture, and it warns about a fixture that only public cases
catch; ``check --strict``, which CI runs on the bundled problems, fails on it);
``lint --grade`` runs the wrong fixtures alone, without the speed checks, to report it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from judge.case_reader import read_cases, read_workloads
from judge.i18n import T
from judge.package import PackageError, Problem, load_problem

MIN_ACCEPTED = 2
MIN_WRONG = 6
# CJK ideographs, CJK punctuation and full-width forms: a newline between two of them is a
# line break inside a Chinese sentence, which Markdown renders as a stray space.
CJK = "\u2e80-\u2fff\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef"
CJK_BREAK = re.compile(f"[{CJK}]\n[ \t]*[{CJK}]")
HAS_CJK = re.compile(f"[{CJK}]")
FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass(frozen=True)
class Finding:
    level: str  # "error" or "warning"
    where: str  # a file (and line), or "package"
    text: T

    def __str__(self) -> str:
        return f"{self.level}: {self.where}: {self.text.en}"

    def to_json(self) -> dict[str, object]:
        return {"level": self.level, "where": self.where, "text": self.text.as_dict()}


def error(where: str, zh: str, en: str) -> Finding:
    return Finding("error", where, T(zh, en))


def warning(where: str, zh: str, en: str) -> Finding:
    return Finding("warning", where, T(zh, en))


def lint_folder(folder: Path, *, folder_name: str | None = None) -> list[Finding]:
    """Every finding about the package in ``folder``. ``folder_name`` is the name the
    package came under (a zip's top folder, a folder given on the command line; None when
    its files came without one): it must be the slug, unless it starts with ``_`` (the
    template)."""
    try:
        problem = load_problem(Path(folder), named_by_slug=False)
    except PackageError as e:
        return [error("package", f"题目包无法加载：{e}", f"the package does not load: {e}")]
    except UnicodeDecodeError as e:
        return [error("problem.toml", f"不是 UTF-8 文本：{e}", f"not UTF-8 text: {e}")]
    return lint_problem(problem, folder_name=folder_name)


def lint_problem(problem: Problem, *, folder_name: str | None = None) -> list[Finding]:
    found: list[Finding] = []
    if (folder_name is not None and folder_name != problem.slug
            and not folder_name.startswith("_")):
        found.append(error("package", f"文件夹名 {folder_name!r} 必须与 slug "
                           f"{problem.slug!r} 相同", f"the folder {folder_name!r} must be "
                           f"named after the slug {problem.slug!r}"))
    found += lint_tests(problem)
    found += lint_statements(problem)
    found += lint_fixtures(problem)
    return found


def lint_tests(problem: Problem) -> list[Finding]:
    """tests.py, read from its syntax tree: cases declared, public ones first, at least one
    example, both languages in every category, a @workload for every speed check."""
    try:
        source = problem.read("tests.py")
        cases = read_cases(source)
        workloads = set(read_workloads(source))
    except (SyntaxError, ValueError, UnicodeDecodeError) as e:
        return [error("tests.py", f"无法加载：{type(e).__name__}: {e}",
                      f"does not load: {type(e).__name__}: {e}")]
    if not cases:
        return [error("tests.py", "没有声明任何 @case", "declares no @case")]
    found = []
    first_hidden = next((c for c in cases if not c.public), None)
    if first_hidden is not None:
        late = [c for c in cases if c.public and c.first_line > first_hidden.first_line]
        if late:
            found.append(error(
                f"tests.py:{late[0].first_line}",
                f"公开用例 {late[0].name} 在隐藏用例 {first_hidden.name} 之后；公开用例要放在"
                f"所有隐藏用例前面",
                f"public case {late[0].name} comes after hidden case {first_hidden.name}; "
                f"put public cases first"))
    if not any(c.is_example for c in cases):
        found.append(error("tests.py", "没有公开的 example_* 用例（样例）",
                           "has no public example_* case (the examples)"))
    for c in cases:
        if not (c.category.zh.strip() and c.category.en.strip()):
            found.append(error(f"tests.py:{c.first_line}",
                               f"用例 {c.name} 的类别要有中文（zh=）和英文（en=）",
                               f"case {c.name} needs its category in Chinese (zh=) and "
                               f"English (en=)"))
    for tp in problem.meta.throughput:
        if tp.workload not in workloads:
            found.append(error("problem.toml", f"速度检查 {tp.name!r}：tests.py 里没有 "
                               f"@workload {tp.workload!r}", f"throughput {tp.name!r}: "
                               f"tests.py has no @workload {tp.workload!r}"))
    return found


def cjk_breaks(markdown: str) -> list[int]:
    """The line numbers (1-based) that end inside a Chinese sentence: a newline between two
    CJK characters, outside fenced code blocks."""
    lines = markdown.splitlines()
    fenced, found = False, []
    for i, line in enumerate(lines[:-1]):
        if FENCE.match(line):
            fenced = not fenced
        if fenced or FENCE.match(lines[i + 1]) or line.lstrip().startswith("#"):
            continue
        if CJK_BREAK.search(line.rstrip()[-1:] + "\n" + lines[i + 1].lstrip()[:1]):
            found.append(i + 1)
    return found


def join_cjk_breaks(markdown: str) -> str:
    """The statement with every line break inside a Chinese sentence removed (the lines
    :func:`cjk_breaks` finds are joined with the next one, its indentation dropped):
    ``lint --fix``."""
    lines = markdown.split("\n")
    breaks = set(cjk_breaks(markdown))
    out: list[str] = []
    joining = False
    for number, line in enumerate(lines, 1):
        if joining:
            out[-1] = out[-1].rstrip() + line.lstrip()
        else:
            out.append(line)
        joining = number in breaks
    return "\n".join(out)


def fix_statements(folder: Path) -> list[str]:
    """Join the line breaks inside Chinese sentences of the statements in ``folder``;
    the files changed."""
    changed = []
    for name in ("statement.zh.md", "statement.en.md"):
        path = Path(folder) / name
        text = path.read_text(encoding="utf-8")
        fixed = join_cjk_breaks(text)
        if fixed != text:
            path.write_text(fixed, encoding="utf-8")
            changed.append(name)
    return changed


def lint_statements(problem: Problem) -> list[Finding]:
    found = []
    for lang in ("zh", "en"):
        name = f"statement.{lang}.md"
        try:
            text = problem.statement(lang)
        except (OSError, UnicodeDecodeError) as e:
            found.append(error(name, f"无法读取：{e}", f"cannot be read: {e}"))
            continue
        if not text.strip():
            found.append(error(name, "题面是空的：两种语言都要写",
                               "the statement is empty: write both languages"))
            continue
        if lang == "zh" and not HAS_CJK.search(text):
            found.append(warning(name, "中文题面里没有中文", "the Chinese statement has no "
                                 "Chinese in it"))
        for line in cjk_breaks(text):
            found.append(warning(f"{name}:{line}", "中文句子中间换行了（Markdown 会把它显示成"
                                 "一个多余的空格）：把这两行连成一行",
                                 "a line break inside a Chinese sentence (Markdown shows it "
                                 "as a stray space): join the two lines"))
    return found


def lint_fixtures(problem: Problem) -> list[Finding]:
    """submissions/: enough accepted and wrong_answer fixtures, each bug commented, and a
    too_slow fixture for every speed check to be seen rejecting."""
    subs = problem.submissions()
    by_verdict: dict[str, list[Path]] = {}
    for verdict, path in subs:
        by_verdict.setdefault(verdict, []).append(path)
    found = []
    accepted, wrong = len(by_verdict.get("accepted", [])), by_verdict.get("wrong_answer", [])
    if accepted < MIN_ACCEPTED:
        found.append(warning(
            "submissions/accepted", f"有 {accepted} 个正确解答，至少要 {MIN_ACCEPTED} 个与参考"
            f"解答写法不同的", f"{accepted} correct solution(s); write at least "
            f"{MIN_ACCEPTED}, each differently from the reference"))
    if len(wrong) < MIN_WRONG:
        found.append(warning(
            "submissions/wrong_answer", f"有 {len(wrong)} 个错误解答，至少要 {MIN_WRONG} 个"
            f"（学员真会写出的 bug，每个文件一个）", f"{len(wrong)} wrong solution(s); write "
            f"at least {MIN_WRONG} (the bugs learners really write, one per file)"))
    for path in wrong:
        if not _starts_with_comment(path):
            found.append(warning(f"submissions/wrong_answer/{path.name}",
                                 "开头要有一行注释说明是哪个 bug",
                                 "start with a comment saying which bug it is"))
    if problem.meta.throughput and not by_verdict.get("too_slow"):
        found.append(warning("submissions/too_slow", "有速度检查，却没有 too_slow 解答证明它"
                             "能拒绝慢的写法", "the package has speed checks but no too_slow "
                             "fixture showing that they reject a wasteful solution"))
    return found


def _starts_with_comment(path: Path) -> bool:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return False
    first = next((line.strip() for line in lines if line.strip()), "")
    return first.startswith(("#", '"""', "'''"))


def errors(found: list[Finding]) -> list[Finding]:
    return [f for f in found if f.level == "error"]


def summary(found: list[Finding]) -> T:
    """One text listing the findings (what an upload refused on errors says)."""
    return T.join([T(f"{f.where}：{f.text.zh}", f"{f.where}: {f.text.en}") for f in found])
