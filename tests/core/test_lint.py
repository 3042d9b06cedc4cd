"""``python -m judge lint``: every rule of docs/writing-problems.md, checked without running
the package; CI lints every bundled problem and the template strictly."""

from __future__ import annotations

from pathlib import Path

import pytest

from judge import lint
from judge.cli import main
from judge.package import BUNDLED
from tests.conftest import TESTS, write_problem

PACKAGES = sorted(p for p in BUNDLED.iterdir() if (p / "problem.toml").is_file())


@pytest.mark.parametrize("folder", PACKAGES, ids=lambda p: p.name)
def test_every_bundled_package_and_the_template_pass_lint_strictly(folder):
    assert [str(f) for f in lint.lint_folder(folder, folder_name=folder.name)] == []


def test_ci_lints_them_all_from_the_command_line(capsys):
    assert main(["lint", "--strict"]) == 0
    out = capsys.readouterr().out
    assert "✓ _template" in out and "✓ padding-collate" in out


def fixtures(folder: Path, accepted: int = 2, wrong: int = 6) -> Path:
    for verdict, count, body in (("accepted", accepted, "return x * 2"),
                                 ("wrong_answer", wrong, "return x * 3")):
        (folder / "submissions" / verdict).mkdir(parents=True, exist_ok=True)
        for i in range(count):
            (folder / "submissions" / verdict / f"f{i}.py").write_text(
                f"# bug {i}\ndef double(x):\n    {body}\n")
    return folder


def findings(folder: Path, name: str | None = None) -> list[str]:
    return [str(f) for f in lint.lint_folder(folder, folder_name=name)]


def test_a_package_following_the_guide_has_no_findings(tmp_path):
    folder = fixtures(write_problem(tmp_path))
    assert findings(folder, "double-it") == []


def test_fixture_counts_and_commented_bugs_are_warnings(tmp_path):
    folder = fixtures(write_problem(tmp_path), accepted=1, wrong=2)
    (folder / "submissions/wrong_answer/f0.py").write_text("def double(x):\n    return x\n")
    got = findings(folder)
    assert got == [
        "warning: submissions/accepted: 1 correct solution(s); write at least 2, each "
        "differently from the reference",
        "warning: submissions/wrong_answer: 2 wrong solution(s); write at least 6 (the bugs "
        "learners really write, one per file)",
        "warning: submissions/wrong_answer/f0.py: start with a comment saying which bug it is"]
    assert lint.errors(lint.lint_folder(folder)) == []  # an upload is not refused for them


LATE_PUBLIC = TESTS + '\n@case(public=True, zh="晚", en="late")\ndef example_late(t):\n    pass\n'


@pytest.mark.parametrize(("change", "expected"), [
    ({"tests": LATE_PUBLIC}, "error: tests.py:22: public case example_late comes after hidden "
                             "case random_values; put public cases first"),
    ({"tests": TESTS.replace("public=True, ", "")},
     "error: tests.py: has no public example_* case (the examples)"),
    ({"tests": TESTS.replace('en="random"', 'en=""')},
     "error: tests.py:11: case random_values needs its category in Chinese (zh=) and "
     "English (en=)"),
    ({"tests": "def broken(:\n"}, "error: tests.py: does not load: SyntaxError"),
    ({"toml_extra": "\n[[throughput]]\nname = \"fast\"\nworkload = \"nope\"\n"},
     "error: problem.toml: throughput 'fast': tests.py has no @workload 'nope'"),
])
def test_errors_name_the_file_the_line_and_the_fix(tmp_path, change, expected):
    folder = fixtures(write_problem(tmp_path, tests=change.get("tests", TESTS)))
    if "toml_extra" in change:
        with (folder / "problem.toml").open("a") as f:
            f.write(change["toml_extra"])
    got = findings(folder)
    assert any(line.startswith(expected) for line in got), got


def test_the_folder_must_be_named_after_the_slug(tmp_path):
    folder = fixtures(write_problem(tmp_path))
    assert findings(folder, "my-problem") == [
        "error: package: the folder 'my-problem' must be named after the slug 'double-it'"]
    assert findings(folder, "_template") == []  # the template's folder starts with '_'


def test_missing_keys_and_statements_are_errors(tmp_path):
    folder = fixtures(write_problem(tmp_path))
    (folder / "statement.en.md").write_text("  \n")
    assert findings(folder) == [
        "error: statement.en.md: the statement is empty: write both languages"]
    text = (folder / "problem.toml").read_text().replace('difficulty = "easy"\n', "")
    (folder / "problem.toml").write_text(text)
    [only] = findings(folder)
    assert only.startswith("error: package: the package does not load") and "difficulty" in only


def test_a_line_break_inside_a_chinese_sentence_is_found_and_fixed(tmp_path):
    text = ("# 标题\n\n第一句话，\n接着说。`code`\n说完。\n\n"
            "```python\nx = 1  # 注释，\n# 接着\n```\n"
            "- 列表项，\n  续行。\n")
    assert lint.cjk_breaks(text) == [3, 11]  # not after `code`, a heading, or in code
    fixed = lint.join_cjk_breaks(text)
    assert "第一句话，接着说。`code`\n说完。" in fixed and "- 列表项，续行。" in fixed
    assert "# 注释，\n# 接着" in fixed and lint.cjk_breaks(fixed) == []
    folder = fixtures(write_problem(tmp_path))
    (folder / "statement.zh.md").write_text(text)
    assert findings(folder) == [
        f"warning: statement.zh.md:{n}: a line break inside a Chinese sentence (Markdown "
        f"shows it as a stray space): join the two lines" for n in (3, 11)]
    assert main(["lint", str(folder), "--fix", "--strict"]) == 0
    assert (folder / "statement.zh.md").read_text() == fixed


def test_the_lint_command_exits_1_on_errors_and_on_warnings_when_strict(tmp_path, capsys):
    folder = fixtures(write_problem(tmp_path), accepted=1)
    assert main(["lint", str(folder)]) == 0
    assert main(["lint", str(folder), "--strict"]) == 1
    late = fixtures(write_problem(tmp_path / "b", tests=LATE_PUBLIC))
    assert main(["lint", str(late), "--lang", "zh"]) == 1
    out = capsys.readouterr().out
    assert "✗ double-it" in out and "公开用例 example_late 在隐藏用例 random_values 之后" in out
    assert main(["lint", str(tmp_path / "nowhere")]) == 2
