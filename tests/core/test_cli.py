"""``python -m judge`` as a user runs it: exit statuses, --json, usage errors."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from tests.conftest import ROOT, write_problem

ENV = {**os.environ, "JUDGE_NO_SANDBOX": "1"}


def judge(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "judge", *args], cwd=cwd, env=ENV,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture
def problem_dir(tmp_path):
    return write_problem(tmp_path / "problems")


def test_grade_json_accepted_exit_0(problem_dir, tmp_path):
    sol = tmp_path / "sol.py"
    sol.write_text("def double(x):\n    return 2 * x\n")
    out = judge("grade", str(problem_dir), str(sol), "--json", "--seed", "42", "--lang", "en")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["verdict"] == "accepted" and report["problem"] == "double-it"
    assert report["seed"] == 42 and report["isolation"] == "none"
    assert set(report["tests"][0]) >= {"name", "visibility", "verdict", "message", "time_ms"}
    assert "SANDBOX DISABLED" in out.stderr  # development mode is loud


def test_grade_wrong_answer_exit_1_and_text_output(problem_dir, tmp_path):
    sol = tmp_path / "sol.py"
    sol.write_text("def double(x):\n    return x\n")
    out = judge("grade", str(problem_dir), str(sol), "--lang", "en")
    assert out.returncode == 1
    assert "✗ example_small" in out.stdout and "Wrong answer: 0 / 3" in out.stdout


def test_grade_by_number_and_slug_in_a_bank(problem_dir, tmp_path):
    sol = tmp_path / "sol.py"
    sol.write_text("def double(x):\n    return 2 * x\n")
    bank = str(problem_dir.parent)
    for ident in ("7", "double-it"):
        out = judge("--problems", bank, "grade", ident, str(sol), "--public-only", "--json")
        assert out.returncode == 0 and len(json.loads(out.stdout)["tests"]) == 1


def test_usage_errors_exit_2(problem_dir, tmp_path):
    out = judge("--problems", str(problem_dir.parent), "grade", "nope", "x.py")
    assert out.returncode == 2 and "no problem 'nope'" in out.stderr
    out = judge("grade", str(problem_dir), str(tmp_path / "missing.py"))
    assert out.returncode == 2 and "cannot read" in out.stderr
    bad = tmp_path / "bad.py"
    bad.write_bytes(b"\xff\xfe not utf-8")
    out = judge("grade", str(problem_dir), str(bad))
    assert out.returncode == 2 and "cannot read" in out.stderr
    good = tmp_path / "good.py"
    good.write_text("def double(x):\n    return x * 2\n")
    out = judge("grade", str(problem_dir), str(good), "--case", "exmaple_small")
    assert out.returncode == 2 and "no case exmaple_small" in out.stderr  # not "accepted"


def test_check_reports_a_fixture_with_the_wrong_verdict(problem_dir):
    subs = problem_dir / "submissions"
    (subs / "accepted").mkdir(parents=True)
    (subs / "accepted" / "times_two.py").write_text("def double(x):\n    return x + x\n")
    (subs / "wrong_answer").mkdir()
    (subs / "wrong_answer" / "actually_right.py").write_text("def double(x):\n    return 2*x\n")
    out = judge("check", str(problem_dir))
    assert out.returncode == 1
    assert "submissions/wrong_answer/actually_right.py: expected wrong_answer, got accepted" \
        in out.stdout
    (subs / "wrong_answer" / "actually_right.py").write_text("def double(x):\n    return x\n")
    out = judge("check", str(problem_dir))
    assert out.returncode == 0, out.stdout
    assert "1 / 1 packages pass" in out.stdout


BUNDLED = sorted(p.parent.name for p in (ROOT / "problems").glob("*/problem.toml"))


@pytest.mark.slow
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("slug", BUNDLED)
def test_bundled_problem_passes_check(slug):
    """Each bundled problem (the template included) passes ``check --strict``: every
    fixture gets its verdict, each wrong_answer and runtime_error fixture is caught by a
    hidden case, and no lint warning. In the sandbox when this machine has it (as
    ``serve`` would judge), else as plain child processes."""
    from judge.isolation import sandbox_unavailable

    sandboxed = sandbox_unavailable() is None
    env = {k: v for k, v in os.environ.items() if k != "JUDGE_NO_SANDBOX"}
    if not sandboxed:
        if os.environ.get("JUDGE_REQUIRE_SANDBOX") == "1":
            pytest.fail(f"the sandbox is required here: {sandbox_unavailable()}")
        env["JUDGE_NO_SANDBOX"] = "1"
    folder = str(ROOT / "problems" / slug)  # by folder: the template is not in the list
    out = subprocess.run([sys.executable, "-m", "judge", "check", "--strict", folder],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=1100)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 / 1 packages pass" in out.stdout
    if slug == "_template":  # its check's output, read again: no run of its own
        assert_calibration_printed(out.stdout)


def assert_calibration_printed(stdout: str) -> None:
    """The template's ``check`` prints each file's measured speed ratio (with its interval
    when it has one) and the bar it suggests: its accepted fixtures are many times faster
    than its too_slow one, so a bar always separates them (docs/writing-problems.md §6)."""
    rows = {line.split()[1]: line for line in stdout.splitlines()
            if line.strip()[:1] in ("✓", "✗") and len(line.split()) > 1}
    timed = ["reference", "submissions/accepted/loop_over_rows.py",
             "submissions/accepted/masked_fill.py", "submissions/too_slow/loop_over_elements.py"]
    for label in timed:
        assert re.search(r"large_batch [0-9.e+-]+x", rows[label]), rows[label]
    assert re.search(r"large_batch [0-9.e+-]+x \[[0-9.]+, [0-9.]+\]", rows["reference"])
    bar = next(line for line in stdout.splitlines() if line.strip().startswith("bar "))
    assert re.search(r"bar large_batch \(min_ratio 0\.1\): slowest accepted \S+ >= "
                     r"[0-9.]+; fastest too_slow submissions/too_slow/loop_over_elements\.py "
                     r"<= [0-9.]+; suggested min_ratio [0-9.]+$", bar.strip()), bar


def test_the_core_cli_and_the_worker_load_nothing_of_the_web_app():
    """A remote worker installs the worker extra only: making the CLI's parser (which
    finds the web's commands through an entry point) and importing the worker must not
    import the web app's libraries."""
    code = ("import sys, judge.worker, judge.cli; judge.cli.build_parser(); "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'fastapi', 'starlette', "
            "'sqlalchemy', 'uvicorn', 'jinja2', 'alembic', 'pydantic'}))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_grade_speed_ranking_measures_the_ratio_precisely(tmp_path):
    from tests.conftest import TESTS
    from tests.core.test_throughput import THROUGHPUT_TOML, WORKLOAD

    toml = THROUGHPUT_TOML.format(slug="double-it", number=7, wall=5.0, memory=2048)
    folder = write_problem(tmp_path / "problems", toml=toml, tests=TESTS + WORKLOAD)
    sol = tmp_path / "sol.py"
    sol.write_text("def double(x):\n    return x * 2\n")
    for speed, refined in (("ranking", True), ("verdict", False)):
        out = judge("grade", str(folder), str(sol), "--json", "--speed", speed)
        assert out.returncode == 0, out.stderr
        (tp,) = json.loads(out.stdout)["throughput"]
        assert tp["refined"] is refined and tp["interval"] and tp["pair_ratios"]
    out = judge("grade", str(folder), str(sol), "--speed", "fast")
    assert out.returncode == 2 and "invalid choice" in out.stderr


def add_fixtures(folder, files):
    for name, code in files.items():
        path = folder / "submissions" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(code)


def test_check_prints_a_calibration_table_naming_the_case_that_catches_each(problem_dir):
    add_fixtures(problem_dir, {
        "accepted/plus.py": "def double(x):\n    return x + x\n",
        "wrong_answer/identity.py": "# bug: returns x\ndef double(x):\n    return x\n",
        # right on the public example (1, 2, 3) only: hidden cases must catch it
        "wrong_answer/table.py": "# bug: a lookup table\nimport torch\n"
                                 "def double(x):\n    return torch.tensor([2, 4, 6])\n"})
    out = judge("check", str(problem_dir))
    assert out.returncode == 0, out.stdout
    lines = out.stdout.splitlines()
    header = next(line for line in lines if "caught by" in line)
    assert "expected" in header and "speed ratio [interval]" in header
    row = next(line for line in lines if "wrong_answer/identity.py" in line)
    assert "random_values" in row  # its first failing hidden case, not example_small
    row = next(line for line in lines if "wrong_answer/table.py" in line)
    assert "random_values" in row and "public only" not in row


def test_check_strict_fails_on_a_wrong_fixture_that_only_a_public_case_catches(problem_dir):
    """``check --strict`` (CI runs it on every bundled problem) fails when a wrong_answer or
    runtime_error fixture is caught by a public case alone; ``lint --grade`` too."""
    add_fixtures(problem_dir, {
        "wrong_answer/first_only.py": (
            "# bug: wrong on the public example's input [1, 2, 3] only\n"
            "def double(x):\n    return x * 2 + int(x.tolist() == [1, 2, 3])\n"),
        "runtime_error/example_only.py": (
            "# bug: raises on the public example's input [1, 2, 3] only\n"
            "def double(x):\n    if x.tolist() == [1, 2, 3]:\n"
            "        raise ValueError('one two three')\n    return x * 2\n")})
    out = judge("check", "--strict", str(problem_dir))
    assert out.returncode == 1, out.stdout
    for label in ("wrong_answer/first_only.py", "runtime_error/example_only.py"):
        assert (f"warning: submissions/{label}: only public case example_small catches it; "
                f"a hidden case should too") in out.stdout
        row = next(line for line in out.stdout.splitlines() if f"✓ submissions/{label}" in line)
        assert "example_small (public only!)" in row
    assert "warnings, and --strict fails on warnings" in out.stdout  # lint's count ones too
    out = judge("lint", str(problem_dir), "--grade")
    assert out.returncode == 1
    assert out.stdout.count("only public case example_small catches it; a hidden case must "
                            "too") == 2


def test_check_passes_with_warnings_unless_strict(problem_dir, capsys):
    """Without --strict a warning is printed and the package passes (an upload is not
    refused for it: the version page shows it)."""
    from judge.check import CheckResult
    from judge.cli import print_check
    from judge.package import load_problem

    result = CheckResult(load_problem(problem_dir),
                         warnings=["submissions/wrong_answer/x.py: only public case ..."])
    assert print_check(result.problem, result, False) is True
    assert print_check(result.problem, result, False, strict=True) is False
    out = capsys.readouterr().out
    assert out.count("warning: submissions/wrong_answer/x.py") == 2
    assert "✓ double-it" in out and "✗ double-it" in out


def test_a_crashing_reference_is_one_error_naming_reference_py(problem_dir):
    (problem_dir / "reference.py").write_text("def double(x):\n    raise KeyError('oops')\n")
    add_fixtures(problem_dir, {f"accepted/a{i}.py": "def double(x):\n    return x + x\n"
                               for i in range(5)})
    out = judge("check", str(problem_dir))
    assert out.returncode == 1
    assert "the reference is not accepted, so no other file was judged" in out.stdout
    assert "reference.py" in out.stdout and "submission.py" not in out.stdout
    assert "accepted/a0.py" not in out.stdout  # not five identical failures


def test_a_wrong_reference_is_not_shown_as_accepted(problem_dir):
    (problem_dir / "reference.py").write_text("def double(x):\n    return x * 3\n")
    add_fixtures(problem_dir, {f"accepted/a{i}.py": "def double(x):\n    return x + x\n"
                               for i in range(2)})
    out = judge("check", str(problem_dir))
    assert out.returncode == 1
    assert "✓ reference" not in out.stdout
    assert ("reference: accepted only because every expected value comes from it: all 2 "
            "accepted fixtures fail, so the reference (or the tests) may be wrong") in out.stdout


def test_grade_with_case_says_the_speed_checks_were_skipped(problem_dir, tmp_path):
    with (problem_dir / "problem.toml").open("a") as f:
        f.write('\n[[throughput]]\nname = "big"\nworkload = "big"\n')
    sol = tmp_path / "sol.py"
    sol.write_text("def double(x):\n    return 2 * x\n")
    out = judge("grade", str(problem_dir), str(sol), "--case", "negatives", "--lang", "en",
                "--json")
    assert out.returncode == 0, out.stderr
    assert "the speed checks (big) were skipped" in out.stderr
    assert json.loads(out.stdout)["verdict"] == "accepted"
