"""The learners' CLI and the practice pack: public cases only, no reference, no hidden case."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import sysconfig
import zipfile

import pytest

from judge.pack import build_practice_pack, public_tests_source, zip_pack
from judge.package import load_problem
from tests.conftest import ROOT, write_problem

STARTER_FAIL = "✗ example_small"


def practice(*args, cwd, env=None):
    return subprocess.run([sys.executable, "practice/judge.py", *args], cwd=cwd,
                          env={**os.environ, **(env or {})}, capture_output=True, text=True,
                          timeout=300)


def as_a_learner(*args, cwd):
    """practice/judge.py as on a learner's machine: torch installed, the judge not. The
    test environment's editable install of the judge (a .pth file's import hook) would
    find any module the pack forgot in the repository, and did: the pack shipped without
    judge/calls.py, judge/events.py, judge/quiet.py and judge/workdirs.py, and its tests
    passed. ``-S`` skips the .pth files; torch comes from the site-packages on PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = sysconfig.get_paths()["purelib"]
    return subprocess.run([sys.executable, "-S", "practice/judge.py", *args], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=300)


def test_the_pack_ships_every_module_its_code_imports():
    """Every judge/sandbox/practice module a shipped module imports (at any depth, lazily
    too) is shipped, but for the two a pack never reaches."""
    import ast

    from judge.pack import CORE_MODULES

    never_reached = {
        "judge.graderbox": "grader boxes confine uploaded packages under the sandbox; the "
                           "pack judges its bundled problems with PlainLauncher",
        "judge.check": "`check` imports it only for a problem with reference.py, which "
                       "the pack does not have",
    }
    shipped = {rel[:-3].replace("/", ".").removesuffix(".__init__")
               for rel in CORE_MODULES if rel.endswith(".py")}
    missing = []
    for rel in CORE_MODULES:
        if not rel.endswith(".py"):
            continue
        for node in ast.walk(ast.parse((ROOT / rel).read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            missing += [f"{rel}:{node.lineno} imports {name}" for name in names
                        if name.split(".")[0] in ("judge", "sandbox", "practice", "web")
                        and name not in shipped and name not in never_reached]
    assert missing == []


@pytest.fixture
def tree(tmp_path):
    """A copy of the practice CLI next to a tiny problem bank."""
    for rel in ("judge", "sandbox", "practice"):
        subprocess.run(["cp", "-r", str(ROOT / rel), str(tmp_path / rel)], check=True)
    write_problem(tmp_path / "problems")
    return tmp_path


def test_list_start_test_flow(tree):
    out = practice("list", cwd=tree)
    assert "7. 加倍" in out.stdout and "id=double-it" in out.stdout
    out = practice("start", "7", cwd=tree)
    assert out.returncode == 0 and "# 加倍" in out.stdout
    mine = tree / "practice" / "workspace" / "007-double-it.py"
    assert mine.read_text().startswith("def double")
    out = practice("test", "double-it", cwd=tree)
    assert out.returncode == 1 and STARTER_FAIL in out.stdout and "运行错误" in out.stdout
    mine.write_text("def double(x):\n    return x * 2\n")
    out = practice("--lang", "en", "test", "7", cwd=tree)
    assert out.returncode == 0, out.stdout
    assert "✓ example_small" in out.stdout and "1 / 1 cases passed" in out.stdout
    assert "random_values" not in out.stdout  # hidden cases never run or show


def test_test_run_and_errors(tree):
    sol = tree / "sol.py"
    sol.write_text("def double(x):\n    return x\n")
    out = practice("test", "7", str(sol), "--run", "--lang", "en", cwd=tree)
    assert out.returncode == 1 and "expected 2, got 1" in out.stdout
    out = practice("test", "99", cwd=tree)
    assert out.returncode == 2 and "错误：没有题目 '99'（现有：7 double-it）" in out.stderr
    out = practice("test", "99", "--lang", "en", cwd=tree)
    assert out.returncode == 2 and "error: no problem '99'" in out.stderr
    bad = tree / "bad.py"
    bad.write_bytes(b"\xff\xfe not utf-8")
    out = practice("test", "7", str(bad), cwd=tree)
    assert out.returncode == 2 and "bad.py" in out.stdout + out.stderr
    out = practice("test", "7", cwd=tree)  # nothing started yet
    assert out.returncode == 2 and "start 7" in out.stdout


def test_doctor_reports_torch(tree):
    out = practice("doctor", "--lang", "en", cwd=tree)
    assert out.returncode == 0 and "PyTorch" in out.stdout
    assert "problems this machine can judge: 1 / 1" in out.stdout


def test_check_proves_a_package_and_names_a_broken_one(tree):
    out = practice("check", "--lang", "en", cwd=tree)
    assert out.returncode == 0, out.stdout + out.stderr
    (tree / "problems" / "double-it" / "reference.py").write_text(
        "def double(x):\n    raise RuntimeError('broken reference')\n")
    out = practice("check", "7", "--lang", "en", cwd=tree)
    assert out.returncode == 1 and "double-it" in out.stdout + out.stderr


def test_public_tests_source_cuts_hidden_cases_only():
    source = (ROOT / "problems" / "padding-collate" / "tests.py").read_text()
    public = public_tests_source(source)
    assert "def example_basic" in public and "def diagnose" in public
    assert "def real_token_equals_pad" not in public and "def larger_batch" not in public


def test_the_pack_judges_public_cases_without_the_reference(tmp_path, launcher):
    problem = load_problem(write_problem(tmp_path / "src"))
    data = build_practice_pack([problem], launcher)
    names = zipfile.ZipFile(io.BytesIO(data)).namelist()
    assert "torch-judge-practice/practice/judge.py" in names
    assert not [n for n in names if n.endswith("reference.py") or "/submissions/" in n]
    zipfile.ZipFile(io.BytesIO(data)).extractall(tmp_path / "pack")
    home = tmp_path / "pack" / "torch-judge-practice"
    assert "random_values" not in (home / "problems" / "double-it" / "tests.py").read_text()
    sol = tmp_path / "sol.py"
    sol.write_text("def double(x):\n    return x + x\n")
    out = as_a_learner("test", "7", str(sol), cwd=home)
    assert out.returncode == 0, out.stdout + out.stderr
    sol.write_text("def double(x):\n    return x * 3\n")
    out = as_a_learner("test", "7", str(sol), "--lang", "en", cwd=home)
    assert out.returncode == 1 and "expected 2, got 3" in out.stdout
    checked = as_a_learner("check", "--lang", "en", cwd=home)  # nothing to check, no crash
    assert "the practice pack has no reference" in checked.stdout, checked.stderr


def test_the_pack_never_holds_the_solution(tmp_path):
    """A package's solution (solution.*.md) and reference open on the site only after an
    accepted submission: the practice pack leaves both out."""
    folder = write_problem(tmp_path / "src")
    (folder / "solution.zh.md").write_text("SOLUTION-ZH\n")
    (folder / "solution.en.md").write_text("SOLUTION-EN\n")
    problem = load_problem(folder)
    archive = zipfile.ZipFile(io.BytesIO(zip_pack([(problem, "# public cases\n", b"rec")])))
    names = [n.rsplit("/", 1)[-1] for n in archive.namelist()
             if "/problems/double-it/" in n]
    assert sorted(names) == ["expected.bin", "problem.toml", "starter.py", "statement.en.md",
                             "statement.zh.md", "tests.py"]
    assert not [n for n in archive.namelist() if archive.read(n).find(b"SOLUTION-") >= 0]


@pytest.mark.slow
@pytest.mark.timeout(1200)  # fourteen problems recorded, then judged twice each
def test_the_pack_holds_every_bundled_problem_and_judges_it(tmp_path, quick_launcher):
    """The downloadable pack with the real problems: each one is in it, a correct solution
    passes its public cases there, the starter does not, and no hidden case came along.
    (The pack is built as the server builds it, in the sandbox where this machine has it;
    the learner's CLI then judges with its own plain launcher.)"""
    from judge.package import load_all

    problems = load_all(ROOT / "problems")
    pack = build_practice_pack(problems, quick_launcher)
    zipfile.ZipFile(io.BytesIO(pack)).extractall(tmp_path)
    home = tmp_path / "torch-judge-practice"
    listed = as_a_learner("list", "--lang", "en", cwd=home)
    assert listed.returncode == 0, listed.stderr
    for problem in problems:
        assert problem.slug in listed.stdout
        tests = (home / "problems" / problem.slug / "tests.py").read_text()
        hidden = [c.name for c in problem.tests.cases if c.visibility == "hidden"]
        assert hidden and not [name for name in hidden if f"def {name}(" in tests]
        solution = tmp_path / f"{problem.slug}.py"
        solution.write_text(problem.read("reference.py"))
        out = as_a_learner("test", problem.slug, str(solution), "--lang", "en", cwd=home)
        assert out.returncode == 0, out.stdout + out.stderr
        starter = as_a_learner("test", str(problem.number), str(problem.dir / "starter.py"),
                               cwd=home)
        assert starter.returncode == 1, starter.stdout + starter.stderr


def test_submit_prints_passing_cases_as_passed(tmp_path, monkeypatch, capsys):
    """`practice/judge.py submit` after an accepted run: every case is listed live with ✓,
    and a public case that passed with a note is shown again with ✓ and its note."""
    from judge.events import Done, PlannedTest, Started, TestJudged
    from judge.i18n import T
    from judge.report import Report, TestResult
    from judge.verdict import Verdict
    from practice import remote

    cat = T("样例", "example")
    tests = [TestResult("example_basic", "public", cat, Verdict.ACCEPTED,
                        T("input_ids = [[5, 6, 7]]", "input_ids = [[5, 6, 7]]"), 1.0),
             TestResult("larger_batch", "hidden", cat, Verdict.ACCEPTED, T("", ""), 2.0)]
    report = Report(Verdict.ACCEPTED, "double-it", 1, "none", tests=tests)
    events = [Started(2, tuple(PlannedTest(t.name, t.visibility) for t in tests), 1),
              *(TestJudged(i, t) for i, t in enumerate(tests)), Done.of(report)]
    monkeypatch.setattr(remote, "create_submission", lambda *a: 12)
    monkeypatch.setattr(remote, "events",
                        lambda *a: iter([e.to_json("en", learner=True) for e in events]))
    monkeypatch.setattr(remote, "fetch", lambda *a: {
        "id": 12, "status": "done", **report.to_json("en", learner=True)})
    problem = load_problem(write_problem(tmp_path / "problems"))
    code = tmp_path / "sol.py"
    code.write_text("def double(x):\n    return 2 * x\n")
    assert remote.submit(problem, code, "http://judge.test", "en", token="t") == 0
    out = capsys.readouterr().out
    assert "✗" not in out, out
    assert out.count("✓ example_basic") == 2 and "input_ids = [[5, 6, 7]]" in out
    assert "✓ larger_batch" in out and "Accepted: 2 / 2 cases passed" in out
