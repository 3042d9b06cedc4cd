"""The grader end to end on tiny problems: every verdict, seeds, redaction, progress."""

from __future__ import annotations

import time

import pytest

from judge.events import Event
from judge.grader import Options, grade
from judge.testing import case_seed
from judge.verdict import Verdict

GOOD = "def double(x):\n    return x * 2\n"


def run(problem, code, launcher, **options):
    events: list[Event] = []
    report = grade(problem, code, launcher, Options(**options), on_progress=events.append)
    return report, events


def test_reference_like_code_is_accepted(make_problem, launcher):
    problem = make_problem()
    report, events = run(problem, GOOD, launcher, seed=5)
    assert report.verdict is Verdict.ACCEPTED
    assert [t.verdict for t in report.tests] == [Verdict.ACCEPTED] * 3
    assert [t.visibility for t in report.tests] == ["public", "hidden", "hidden"]
    assert report.seed == 5 and report.isolation == "none" and report.torch
    kinds = [e.kind for e in events]
    assert kinds[0] == "start" and kinds[-1] == "done"
    assert kinds.count("test") == 3 and kinds.count("running") == 3


@pytest.mark.parametrize("code, verdict, needle", [
    ("def double(x):\n    return x * 3\n", Verdict.WRONG_ANSWER,
     "double(x)[0]: expected 2, got 3"),
    ("def double(x):\n    raise ValueError('nope')\n", Verdict.RUNTIME_ERROR,
     "raised ValueError: nope"),
    ("def double(x):\n    raise MemoryError()\n", Verdict.MEMORY_LIMIT_EXCEEDED, "MemoryError"),
    ("import sys\ndef double(x):\n    sys.exit(0)\n", Verdict.RUNTIME_ERROR, "SystemExit"),
    ("import os\ndef double(x):\n    os._exit(0)\n", Verdict.RUNTIME_ERROR,
     "ended unexpectedly (exit status 0)"),
    ("import os, signal\ndef double(x):\n    os.kill(os.getpid(), signal.SIGSEGV)\n",
     Verdict.RUNTIME_ERROR, "SIGSEGV"),
    ("def double(x):\n    return [1, 2]\n", Verdict.WRONG_ANSWER,
     "expected a torch.Tensor, got list"),
])
def test_verdicts_of_the_first_failing_case(make_problem, launcher, code, verdict, needle):
    report, _ = run(make_problem(), code, launcher)
    assert report.verdict is verdict
    first = report.tests[0]
    assert first.verdict is verdict and needle in first.message.en
    assert report.message.en.startswith("example_small: ")


@pytest.mark.parametrize("code, needle", [
    ("def double(x)\n    return x\n", "SyntaxError"),
    ("def triple(x):\n    return x * 3\n", "does not define double"),
    ("import no_such_module_here\n", "ModuleNotFoundError"),
    ("raise SystemExit(3)\n", "SystemExit"),
])
def test_files_that_do_not_import_are_compile_errors(make_problem, launcher, code, needle):
    report, _ = run(make_problem(), code, launcher)
    assert report.verdict is Verdict.COMPILE_ERROR
    assert needle in report.message.en
    assert all(t.verdict is Verdict.SKIPPED for t in report.tests)


def test_a_busy_loop_is_cut_at_the_case_wall_clock(make_problem, launcher):
    problem = make_problem(wall=1.0)
    start = time.monotonic()
    report, _ = run(problem, "def double(x):\n    while True:\n        pass\n", launcher)
    assert time.monotonic() - start < 15
    assert report.verdict is Verdict.TIME_LIMIT_EXCEEDED
    assert "did not finish within 1 s" in report.tests[0].message.en
    # A case that hit a limit ends the job: the rest are skipped, not run for 1 s each.
    assert [t.verdict for t in report.tests[1:]] == [Verdict.SKIPPED] * 2


def test_flooding_output_is_output_limit_exceeded(make_problem, launcher):
    code = "def double(x):\n    while True:\n        print('spam' * 1000)\n"
    report, _ = run(make_problem(), code, launcher)
    assert report.verdict is Verdict.OUTPUT_LIMIT_EXCEEDED


def test_a_later_crash_does_not_hide_earlier_results(make_problem, launcher):
    code = ("import os\ndef double(x):\n    if (x < 0).any():\n        os._exit(1)\n"
            "    return x * 2\n")
    report, _ = run(make_problem(), code, launcher)
    assert [t.verdict for t in report.tests] == [
        Verdict.ACCEPTED, Verdict.ACCEPTED, Verdict.RUNTIME_ERROR]
    assert report.verdict is Verdict.RUNTIME_ERROR
    assert "hidden case negatives (negatives) failed" in report.message.en


def test_a_broken_reference_is_an_internal_error(make_problem, launcher):
    problem = make_problem(reference="def double(x):\n    raise RuntimeError('bug')\n")
    report, _ = run(problem, GOOD, launcher)
    assert report.verdict is Verdict.INTERNAL_ERROR
    assert "reference solution failed" in report.tests[0].message.en
    assert "RuntimeError: bug" in report.tests[0].to_json("en")["details"]["en"]


def test_a_crashing_test_is_an_internal_error_not_the_learners(make_problem, launcher):
    tests = '''
from judge.testing import case

@case(public=True, zh="样例", en="example")
def example_broken(t):
    t.sub.double(1)
    1 / 0
'''
    report, _ = run(make_problem(tests=tests), GOOD, launcher)
    assert report.verdict is Verdict.INTERNAL_ERROR
    assert "the test itself crashed: ZeroDivisionError" in report.tests[0].message.en


NOTE_TESTS = '''
import torch
from judge.testing import case

@case(public=True, zh="样例", en="example")
def example_print(t):
    t.sub.double(torch.tensor([1]))

@case(zh="随机", en="random")
def random_values(t):
    x = torch.randint(0, 10**9, (4,), generator=t.rng)
    t.sub.double(x)
    t.note(str(x.tolist()), str(x.tolist()))
'''

PRINTING = "def double(x):\n    print('saw', x.tolist())\n    return x * 2\n"


def test_hidden_inputs_follow_the_seed(make_problem, launcher):
    problem = make_problem(tests=NOTE_TESTS)
    a, _ = run(problem, GOOD, launcher, seed=11)
    b, _ = run(problem, GOOD, launcher, seed=11)
    c, _ = run(problem, GOOD, launcher, seed=12)
    assert a.tests[1].message == b.tests[1].message != c.tests[1].message
    assert case_seed(11, "x") == case_seed(11, "x") != case_seed(11, "y")


def test_learners_never_see_hidden_messages_or_output(make_problem, launcher):
    problem = make_problem(tests=NOTE_TESTS)
    report, events = run(problem, PRINTING, launcher, seed=3)
    full = report.to_json("en")
    assert full["tests"][1]["message"]  # admins see the hidden note
    learner = report.for_learner("en")
    public, hidden = learner["tests"]
    assert "saw [1]" in public["output"]
    assert hidden["message"] == "" and "output" not in hidden and "messages" not in hidden
    assert hidden["category"] == "random"
    hidden_input = full["tests"][1]["message"]
    assert hidden_input not in str(learner)
    learner_events = [e.to_json("en", learner=True) for e in events if e.kind == "test"]
    assert hidden_input not in str(learner_events)


def test_public_only_and_examples_only(make_problem, launcher):
    problem = make_problem()
    report, _ = run(problem, GOOD, launcher, public_only=True)
    assert [t.name for t in report.tests] == ["example_small"]


MANY_PUBLIC = '''
import torch
from judge.testing import case, SubmissionError


def call(t, k):
    try:
        t.sub.call("double", torch.tensor([k]))
    except SubmissionError:
        pass

''' + "".join(f'''
@case(public=True, zh="例{k}", en="example {k}")
def example_{k:02d}(t):
    call(t, {k})
''' for k in range(12))

SAYS_WHICH_CALL = '''
import sys

def double(x):
    k = int(x[0])
    print(f"call {k} stdout " + "o" * 150)
    print(f"call {k} stderr " + "e" * 150, file=sys.stderr)
    if k % 3 == 0:
        raise ValueError(f"call {k} fails")
    return x * 2
'''


def assert_each_case_shows_its_own_output(report):
    for k, test in enumerate(report.tests):
        lines = test.output.splitlines()
        assert [line.split(" ")[:3] for line in lines] == [
            ["call", str(k), "stdout"], ["call", str(k), "stderr"]], (k, test.output[:300])


def test_what_a_public_case_printed_is_shown_under_that_case(make_problem, launcher):
    """Output is attributed to the case whose call printed it, not to the next one, even
    when the grader reads the pipe on another thread (an auditor saw it split)."""
    problem = make_problem(tests=MANY_PUBLIC)
    for _ in range(3):
        report, _ = run(problem, SAYS_WHICH_CALL, launcher, throughput=False)
        assert_each_case_shows_its_own_output(report)


def test_a_cpu_problem_on_a_gpu_worker_runs_on_the_cpu(make_problem, launcher):
    """A worker with a GPU grades with cuda=True; a problem without CUDA cases or checks
    still gets CPU runners (warm, address-space limited, no GPU lease)."""
    report, _ = run(make_problem(), GOOD, launcher, cuda=True, throughput=False)
    assert report.verdict is Verdict.ACCEPTED, report.message
    assert report.device == "cpu"


SKIP_AND_EXPLAIN_TESTS = '''
import torch
from judge.i18n import T
from judge.testing import case

@case(public=True, zh="样例", en="example")
def example_doubles(t):
    t.expect_equal(t.sub.double(torch.tensor([1])), torch.tensor([2]), "double(x)")

@case(zh="需要更新的 torch", en="needs a newer torch")
def needs_a_feature(t):
    t.skip("本机的 torch 没有这个功能", "this torch lacks the feature")
    t.sub.double(torch.tensor([1]))

@case(zh="带提示的异常", en="an exception with a hint")
def explained(t):
    t.explain_errors(lambda e: T("提示：先调用 setup()", "hint: call setup() first")
                     if "not set up" in e.message else None)
    t.sub.double(torch.tensor([1]))
'''


def test_a_skipped_case_is_neither_a_failure_nor_counted(make_problem, launcher):
    from judge.render import summary

    report, _ = run(make_problem(tests=SKIP_AND_EXPLAIN_TESTS), GOOD, launcher)
    assert report.verdict is Verdict.ACCEPTED
    skipped = report.tests[1]
    assert skipped.verdict is Verdict.SKIPPED and skipped.unavailable
    assert skipped.message.en == "this torch lacks the feature"
    assert skipped.to_json("en")["skip"] == "unavailable"
    assert (report.passed, report.total, report.skipped) == (2, 2, 1)
    assert "this machine cannot run them" in summary(report, "en")


def test_explain_errors_adds_a_hint_to_a_runtime_error(make_problem, launcher):
    code = "def double(x):\n    raise RuntimeError('double is not set up')\n"
    report, _ = run(make_problem(tests=SKIP_AND_EXPLAIN_TESTS), code, launcher,
                    cases=("explained", "example_doubles"))
    assert report.verdict is Verdict.RUNTIME_ERROR
    by_name = {t.name: t for t in report.tests}
    hinted, plain = by_name["explained"].message, by_name["example_doubles"].message
    assert "RuntimeError: double is not set up — hint: call setup() first" in hinted.en
    assert "提示：先调用 setup()" in hinted.zh
    assert "hint" not in plain.en  # only the case that asked for it


def test_the_verdict_is_handed_over_before_the_runners_are_stopped(make_problem, launcher,
                                                                  monkeypatch):
    """``on_verdict`` gets the final report (verdict, tests, time) once, before any runner
    is stopped or job folder removed: a worker posts it there, and the learner does not
    wait for the clean-up. ``grade`` itself returns after the clean-up."""
    from judge.grader import Sessions

    order: list[str] = []
    real_close = Sessions.close
    monkeypatch.setattr(Sessions, "close", lambda self: (order.append("close"),
                                                         real_close(self))[1])
    handed: list = []

    def on_verdict(report):
        order.append("verdict")
        handed.append((report.verdict, len(report.tests), report.time_ms))

    events: list[Event] = []
    problem = make_problem()
    report = grade(problem, GOOD, launcher, Options(seed=3), on_progress=events.append,
                   on_verdict=on_verdict)
    assert order == ["verdict", "close"]
    assert handed == [(Verdict.ACCEPTED, 3, report.time_ms)] and report.time_ms > 0
    assert [e.kind for e in events].count("done") == 1 and events[-1].kind == "done"
    handed.clear()
    grade(problem, "def double(x)\n", launcher, on_verdict=on_verdict)
    assert [v for v, _, _ in handed] == [Verdict.COMPILE_ERROR]  # once, whatever the verdict


def test_the_submission_and_the_reference_runners_start_at_the_same_time(make_problem,
                                                                          launcher, monkeypatch):
    """Both shared runners are started together (each start waits for its sandbox's
    handshake): two in flight at once, not one after the other."""
    import threading

    from judge.session import RunnerSession

    in_flight, most = [0], [0]
    lock = threading.Lock()
    real_start = RunnerSession.start

    def start(self, **kwargs):
        with lock:
            in_flight[0] += 1
            most[0] = max(most[0], in_flight[0])
        time.sleep(0.3)  # a slow handshake
        try:
            real_start(self, **kwargs)
        finally:
            with lock:
                in_flight[0] -= 1

    monkeypatch.setattr(RunnerSession, "start", start)
    report, _ = run(make_problem(), GOOD, launcher)
    assert report.verdict is Verdict.ACCEPTED and most[0] == 2


def test_a_check_stops_judging_a_file_at_its_first_failing_hidden_case(make_problem, launcher):
    """Options(stop_at_hidden_failure=True), as judge check judges fixtures: a failing
    public case does not stop it, the first failing hidden one does (the verdict and the
    case that catches the file are known then); the cases after it show as not run."""
    problem = make_problem()
    wrong = "def double(x):\n    return x * 3\n"
    full, _ = run(problem, wrong, launcher, seed=4)
    cut, _ = run(problem, wrong, launcher, seed=4, stop_at_hidden_failure=True)
    assert full.verdict is cut.verdict is Verdict.WRONG_ANSWER
    assert [t.verdict for t in full.tests] == [Verdict.WRONG_ANSWER] * 3
    assert [t.verdict for t in cut.tests] == [Verdict.WRONG_ANSWER, Verdict.WRONG_ANSWER,
                                              Verdict.SKIPPED]
    assert "a hidden case failed already" in cut.tests[2].message.en
