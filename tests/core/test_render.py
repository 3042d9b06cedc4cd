"""The terminal report: what a learner reads after `judge grade` or `practice/judge.py test`."""

from judge import report as rep
from judge.i18n import T
from judge.render import render
from judge.verdict import Verdict


def report_with_a_cuda_case() -> rep.Report:
    cat = T("类别", "category")
    tests = [rep.TestResult("small", "public", cat, Verdict.ACCEPTED, time_ms=3),
             rep.TestResult("big", "hidden", cat, Verdict.ACCEPTED, time_ms=5),
             rep.TestResult("on_cuda", "hidden", cat, Verdict.SKIPPED, rep.NEEDS_CUDA,
                            skip=rep.SkipReason.NEEDS_CUDA)]
    throughput = [rep.ThroughputResult("epoch_cpu", "cpu", Verdict.ACCEPTED, 0.5, 1.02),
                  rep.ThroughputResult("epoch_cuda", "cuda", Verdict.SKIPPED, 0.5)]
    return rep.Report(Verdict.ACCEPTED, "p", 1, "none", tests=tests, throughput=throughput)


def test_cases_this_machine_cannot_run_are_not_counted_as_failures():
    out = render(report_with_a_cuda_case(), "en")
    assert "Accepted: 2 / 2 cases passed (1 skipped: they need CUDA" in out
    assert "✗" not in out  # nothing the learner did wrong is marked as failed
    assert "epoch_cuda" in out and "not measured: needs CUDA, none here" in out
    assert "1.02× the reference (at least 0.50×)" in out


def test_chinese_summary_names_the_skipped_cases():
    out = render(report_with_a_cuda_case(), "zh")
    assert "通过：2 / 2 个用例通过（1 个未运行" in out
    assert "未测：需要 CUDA，本机没有" in out


def test_a_failed_case_is_marked_and_its_message_shown():
    report = report_with_a_cuda_case()
    report.verdict = Verdict.WRONG_ANSWER
    report.tests[0] = rep.TestResult("small", "public", T("类别", "category"),
                                 Verdict.WRONG_ANSWER, T("期望 1，得到 2", "expected 1, got 2"))
    out = render(report, "en")
    assert "✗ small" in out and "expected 1, got 2" in out
    assert "Wrong answer: 1 / 2 cases passed" in out


def test_cases_not_run_after_a_failure_are_not_blamed_on_cuda():
    cat = T("类别", "category")
    tests = [rep.TestResult("small", "public", cat, Verdict.SKIPPED),
             rep.TestResult("big", "hidden", cat, Verdict.SKIPPED,
                            T("之前的用例超出了限制，未运行",
                              "not run: an earlier case hit a limit"))]
    report = rep.Report(Verdict.COMPILE_ERROR, "p", 1, "none", tests=tests,
                        message=T("语法错误", "syntax error"))
    out = render(report, "en")
    assert "Compile error: 0 / 2 cases passed" in out and "CUDA" not in out
    assert report.to_json("en")["total"] == 2 and report.to_json("en")["skipped"] == 0


def test_after_live_lines_only_failures_and_the_summary_follow():
    report = report_with_a_cuda_case()
    report.verdict = Verdict.WRONG_ANSWER
    report.tests[0] = rep.TestResult("small", "public", T("类别", "category"),
                                     Verdict.WRONG_ANSWER, T("期望 1，得到 2", "expected 1, got 2"))
    out = render(report, "en", show_hidden_messages=False, case_lines=False)
    assert "✗ small" in out and "expected 1, got 2" in out
    assert "big" not in out and "on_cuda" not in out  # already shown live, no message
    assert out.rstrip().endswith("Wrong answer: 1 / 2 cases passed (1 skipped: they need CUDA, "
                                 "which this machine lacks)")


def test_a_report_round_trips_its_skip_reasons_and_speed_checks():
    report = report_with_a_cuda_case()
    again = rep.Report.from_json(report.to_json("en"))
    assert [t.skip for t in again.tests] == [None, None, rep.SkipReason.NEEDS_CUDA]
    assert again.throughput == report.throughput and again.ratio == 1.02
    assert again.skipped == 1 and again.total == 2


def test_a_report_stored_before_skip_reasons_still_counts_its_cuda_cases():
    stored = report_with_a_cuda_case().to_json("en")
    for t in stored["tests"]:
        t.pop("skip", None)
    again = rep.Report.from_json(stored)
    assert again.tests[2].skip is rep.SkipReason.NEEDS_CUDA and again.total == 2


def test_after_live_lines_a_passing_case_with_a_note_stays_marked_as_passed():
    """`practice/judge.py submit` after an accepted run: a public case that passed with a
    note (padding-collate's example_basic shows the ids it got) is listed again under a
    ✓ with its note, never under a ✗."""
    report = report_with_a_cuda_case()
    report.tests[0] = rep.TestResult("example_basic", "public", T("类别", "category"),
                                     Verdict.ACCEPTED, T("得到 [[7, 0]]", "got [[7, 0]]"), 2.0)
    out = render(report, "en", show_hidden_messages=False, case_lines=False)
    assert "✓ example_basic" in out and "got [[7, 0]]" in out
    assert "✗" not in out
