"""Hidden generator cases begun ahead (judge/pipeline.py): the next case's calls go out
while the grader checks the current one, and nothing a learner sees changes for it."""

from __future__ import annotations

import pytest

from judge.grader import Options, grade
from judge.pipeline import run_body
from judge.report import SkipReason
from judge.verdict import Verdict

GOOD = "def double(x):\n    return x * 2\n"
# Wrong on inputs holding 7, and ends its process on inputs holding 999.
PICKY = """
import os

def double(x):
    if (x == 999).any():
        os._exit(3)
    return x * 3 if (x == 7).any() else x * 2
"""

# Each case logs its parts in the tests module's LOG (the grader's process holds it).
TESTS = '''
import torch
from judge.testing import case

LOG = []
INPUTS = {}  # set by each test
LOSE = set()  # cases whose first call is lost once, as if sent to a runner just ended


def begun(t, name):
    LOG.append(f"{name} begun")
    if name in LOSE:
        from judge.i18n import T
        from judge.runner_errors import RunnerLost
        from judge.verdict import Verdict

        LOSE.discard(name)
        raise RunnerLost(Verdict.RUNTIME_ERROR, T("进程意外结束", "the process ended unexpectedly"))
    x = torch.tensor(INPUTS[name])
    return t.sub.begin("double", x), t.ref.begin("double", x)


def checked(t, name, calls):
    got, exp = calls
    LOG.append(f"{name} checked")
    t.expect_equal(got.value, exp.value, "double(x)")


@case(public=True, zh="样例", en="example")
def example_p(t):
    calls = begun(t, "p")
    yield
    checked(t, "p", calls)


@case(zh="甲", en="a")
def hidden_a(t):
    calls = begun(t, "a")
    yield
    checked(t, "a", calls)


@case(zh="乙", en="b")
def hidden_b(t):
    calls = begun(t, "b")
    yield
    checked(t, "b", calls)


@case(zh="普通", en="plain")
def hidden_x(t):
    checked(t, "x", begun(t, "x"))


@case(zh="丙", en="c")
def hidden_c(t):
    calls = begun(t, "c")
    yield
    checked(t, "c", calls)


@case(zh="丁", en="d")
def hidden_d(t):
    calls = begun(t, "d")
    yield
    checked(t, "d", calls)
'''


def judged(make_problem, launcher, code=GOOD, inputs=None, lose=(), **options):
    problem = make_problem(tests=TESTS)
    spec = problem.tests.select()[0]
    log, given = spec.fn.__globals__["LOG"], spec.fn.__globals__["INPUTS"]
    log.clear()  # the tests module is imported once per process: all three outlive a test
    given.clear()
    spec.fn.__globals__["LOSE"].clear()
    spec.fn.__globals__["LOSE"].update(lose)
    given.update({"p": [1], "a": [1, 2], "b": [3, 4], "x": [8, 9], "c": [5, 6], "d": [2, 2],
                  **(inputs or {})})
    report = grade(problem, code, launcher, Options(throughput=False, **options))
    return report, log


def test_the_next_hidden_case_is_begun_before_the_current_one_is_checked(
        make_problem, launcher):
    report, log = judged(make_problem, launcher)
    assert report.verdict is Verdict.ACCEPTED, report.message
    assert [t.verdict for t in report.tests] == [Verdict.ACCEPTED] * 6
    assert log == [
        "p begun", "p checked",  # public: whole, in its turn (its output is shown)
        "a begun", "b begun", "a checked",  # b's call is out while a is checked
        "b checked",  # the next is a plain function: run whole in its turn
        "x begun", "x checked",
        "c begun", "d begun", "c checked", "d checked",
    ]


def test_a_case_begun_ahead_is_not_run_once_a_limit_stops_the_judging(
        make_problem, launcher):
    # c's input sends the submission into a busy loop: time limit, and the judging stops.
    busy = "def double(x):\n    while (x == 5).any():\n        pass\n    return x * 2\n"
    report, log = judged(make_problem, launcher, code=busy)
    by_name = {t.name: t for t in report.tests}
    assert by_name["hidden_c"].verdict is Verdict.TIME_LIMIT_EXCEEDED
    assert by_name["hidden_d"].verdict is Verdict.SKIPPED
    assert by_name["hidden_d"].skip is SkipReason.NOT_RUN
    assert "d begun" in log and "d checked" not in log  # begun ahead, never judged
    assert report.verdict is Verdict.TIME_LIMIT_EXCEEDED


def test_a_wrong_answer_is_reported_for_the_case_that_got_it(make_problem, launcher):
    report, _ = judged(make_problem, launcher, code=PICKY, inputs={"b": [7, 1], "d": [7]})
    verdicts = {t.name: t.verdict for t in report.tests}
    assert verdicts == {"example_p": Verdict.ACCEPTED, "hidden_a": Verdict.ACCEPTED,
                        "hidden_b": Verdict.WRONG_ANSWER, "hidden_x": Verdict.ACCEPTED,
                        "hidden_c": Verdict.ACCEPTED, "hidden_d": Verdict.WRONG_ANSWER}
    assert "hidden case hidden_b" in report.message.en


def test_with_stop_at_hidden_failure_the_case_begun_ahead_is_skipped(make_problem, launcher):
    report, log = judged(make_problem, launcher, code=PICKY, inputs={"c": [7]},
                         stop_at_hidden_failure=True)
    verdicts = {t.name: t.verdict for t in report.tests}
    assert verdicts["hidden_c"] is Verdict.WRONG_ANSWER
    assert verdicts["hidden_d"] is Verdict.SKIPPED
    assert "d begun" in log and "d checked" not in log


def test_a_case_begun_on_a_runner_that_crashed_since_runs_again_whole(make_problem, launcher):
    # a's input ends the submission's process; b's calls went to that process too.
    report, log = judged(make_problem, launcher, code=PICKY, inputs={"a": [999]})
    verdicts = {t.name: t.verdict for t in report.tests}
    assert verdicts["hidden_a"] is Verdict.RUNTIME_ERROR
    assert "ended unexpectedly" in report.tests[1].message.en
    assert verdicts["hidden_b"] is Verdict.ACCEPTED  # judged on the new process
    assert log.count("b begun") == 2 and log.count("b checked") == 1
    assert all(v is Verdict.ACCEPTED for name, v in verdicts.items() if name != "hidden_a")


@pytest.mark.parametrize("lost", ["a", "b"])
def test_a_runner_lost_while_a_first_part_sends_is_not_a_broken_reference(
        make_problem, launcher, lost):
    """A submission's runner that crashed a moment ago can still look alive: the first
    part of a case then fails to send its call (the segfault attack read "internal error:
    the reference failed" once in a full run). The case runs again whole in its turn:
    a, in its turn; b, begun ahead while a is checked."""
    report, log = judged(make_problem, launcher, lose={lost})
    assert report.verdict is Verdict.ACCEPTED, report.message
    assert [t.verdict for t in report.tests] == [Verdict.ACCEPTED] * 6
    assert log.count(f"{lost} begun") == 2 and log.count(f"{lost} checked") == 1


def test_a_first_part_that_raises_runs_again_whole_and_is_the_tests_fault(
        make_problem, launcher):
    report, log = judged(make_problem, launcher, inputs={"b": "not a list"})
    by_name = {t.name: t for t in report.tests}
    assert by_name["hidden_a"].verdict is Verdict.ACCEPTED
    assert by_name["hidden_b"].verdict is Verdict.INTERNAL_ERROR
    assert "the test itself crashed" in by_name["hidden_b"].message.en
    assert log.count("b begun") == 2  # ahead, then whole in its turn: not a third time
    assert by_name["hidden_x"].verdict is Verdict.ACCEPTED


@pytest.mark.parametrize("yields", [0, 1, 2])
def test_run_body_runs_a_case_to_its_end(yields):
    seen = []

    def plain(t):
        seen.append(t)

    def generator(t):
        for i in range(yields):
            seen.append(i)
            yield
        seen.append(t)

    run_body(plain, "ctx")
    run_body(generator, "ctx")
    assert seen == ["ctx", *range(yields), "ctx"]
