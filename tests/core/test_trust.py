"""Which packages run confined (judge.trust), what the worker reads of them without
running them (judge.check.suite_errors), and what a grader box's broker refuses or checks
(judge.broker, judge.graderbox) — without a sandbox; tests/attacks/test_hostile_package.py
judges for real."""

from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path

import pytest

from judge.broker import BoxFailed, Broker, Refused
from judge.check import suite_errors
from judge.events import Done, Running, TestJudged
from judge.graderbox import adopt
from judge.i18n import T
from judge.package import load_problem
from judge.report import Report, TestResult
from judge.trust import is_bundled, runs_confined
from judge.verdict import Verdict
from sandbox.launch import Limits
from tests.conftest import TESTS, write_problem

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = sorted(p.parent for p in (ROOT / "problems").glob("*/problem.toml"))


def test_bundled_packages_are_trusted_and_any_change_is_not(tmp_path):
    bundled = load_problem(ROOT / "problems" / "padding-collate")
    assert is_bundled(bundled) and not runs_confined(bundled, "bwrap")
    copy = tmp_path / "padding-collate"
    shutil.copytree(bundled.dir, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert is_bundled(load_problem(copy))  # the same bytes: the same, trusted, code
    (copy / "tests.py").write_text((copy / "tests.py").read_text() + "\n# edited\n")
    edited = load_problem(copy)
    assert not is_bundled(edited) and runs_confined(edited, "bwrap")
    assert not runs_confined(edited, "none")  # no sandbox: development, said loudly


def test_an_edited_solution_makes_a_bundled_package_untrusted_too(tmp_path):
    """The solution's explanation is hashed with the code: a server that edits it has a
    new version, not the bundled one."""
    copy = tmp_path / "padding-collate"
    shutil.copytree(ROOT / "problems" / "padding-collate", copy,
                    ignore=shutil.ignore_patterns("__pycache__"))
    assert (copy / "solution.en.md").is_file() and is_bundled(load_problem(copy))
    (copy / "solution.en.md").write_text("edited\n")
    assert not is_bundled(load_problem(copy))


@pytest.mark.parametrize("folder", BUNDLED, ids=lambda p: p.name)
def test_the_syntax_tree_finds_what_the_import_finds(folder):
    problem = load_problem(folder, named_by_slug=False)
    assert suite_errors(problem, confined=True) == suite_errors(problem, confined=False) == []


@pytest.mark.parametrize(("tests", "error"), [
    (TESTS.replace("public=True, ", ""), "no public example_* case"),
    (TESTS + '\n@case(public=True, zh="晚", en="late")\ndef late(t):\n    pass\n',
     "public case late comes after hidden case random_values"),
    ("from judge.testing import case\n", "declares no @case"),
    ("def broken(:\n", "does not load: SyntaxError"),
])
def test_a_broken_suite_is_reported_without_importing_it(tmp_path, tests, error):
    problem = load_problem(write_problem(tmp_path, tests=tests))
    assert any(error in e for e in suite_errors(problem, confined=True))


class FakeLauncher:
    isolation = "bwrap"

    def start(self, job):
        raise AssertionError("must not start")


def broker(events=None, lock_s: float = 60.0) -> Broker:
    folders = {"sub": Path("/nonexistent/sub"), "ref": Path("/nonexistent/ref")}
    return Broker(FakeLauncher(), folders, Limits(), "cpu",
                  (events if events is not None else []).append, lock_s)


@pytest.mark.parametrize("request_", [
    {"op": "start", "role": "../../etc"}, {"op": "start", "role": "sub", "hash_seed": True},
    {"op": "start", "role": "sub", "hash_seed": -1}, {"op": "kill", "id": 1},
    {"op": "mount", "id": 1},
])
def test_the_broker_refuses_what_a_box_may_not_ask(request_):
    with pytest.raises(Refused):
        broker().answer(request_["op"], request_)


def test_a_problem_without_speed_checks_never_takes_the_throughput_lock():
    with pytest.raises(Refused):
        broker(lock_s=0).answer("lock", {})


def test_the_broker_holds_the_throughput_lock_for_the_box(tmp_path, monkeypatch):
    from judge import throughput

    path = tmp_path / "throughput.lock"  # not the machine's: other judgings may hold it
    real = throughput.measuring_alone
    monkeypatch.setattr(throughput, "measuring_alone", lambda: real(path))
    b = broker()
    b.answer("lock", {})
    try:
        fd = os.open(path, os.O_RDWR)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            b.close()  # a box that dies holding it: the worker lets go
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
    finally:
        b.close()


def test_only_grading_events_that_read_as_such_are_passed_on():
    events: list = []
    b = broker(events)
    result = TestResult("x", "public", T("a", "a"), Verdict.ACCEPTED)
    for data in (Running("x", 0).to_json(), TestJudged(0, result).to_json(),
                 Done(Verdict.ACCEPTED, 1, 1).to_json(), {"event": "files", "files": []},
                 {"event": "test", "index": "not a number"}, "junk", None):
        b._event(data)
    assert [type(e).__name__ for e in events] == ["Running", "TestJudged"]


def test_a_report_is_adopted_for_its_verdicts_only():
    ours = Report(Verdict.ACCEPTED, "double-it", 42, "bwrap", problem_version="abc",
                  torch="2.x", device="cpu")
    theirs = Report(Verdict.WRONG_ANSWER, "other", 7, "none", problem_version="forged",
                    message=T("错", "wrong"))
    adopt(ours, theirs.to_json())
    assert (ours.verdict, ours.message.en) == (Verdict.WRONG_ANSWER, "wrong")
    assert (ours.problem, ours.seed, ours.isolation, ours.problem_version) == (
        "double-it", 42, "bwrap", "abc")
    for junk in ({"verdict": "pwned"}, [], {"verdict": "accepted"}, "x"):
        with pytest.raises(BoxFailed):
            adopt(ours, junk)
