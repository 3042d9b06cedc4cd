"""A problem with CUDA cases judged where there is no GPU: the CPU cases decide the verdict,
the CUDA parts are counted as not run (never as passed), and an acceptance says it covers
the CPU cases only (the web then queues the submission for a GPU worker:
tests/web/test_gpu_follow_up.py)."""

from __future__ import annotations

from judge import report as rep
from judge.grader import Options, grade
from judge.i18n import T
from judge.render import render
from judge.verdict import Verdict

WITH_A_CUDA_CASE = '''
import torch
from judge.testing import case


@case(public=True, zh="样例", en="example")
def example_small(t):
    x = torch.tensor([1, 2, 3])
    t.expect_equal(t.sub.double(x), t.ref.double(x), "double(x)")


@case(zh="GPU 上", en="on the GPU", device="cuda")
def on_gpu(t):
    x = torch.tensor([1, 2, 3])
    t.expect_equal(t.sub.double(x), t.ref.double(x), "double(x)")
'''


def test_an_acceptance_without_the_cuda_cases_says_it_covers_the_cpu_cases_only(
        make_problem, launcher):
    problem = make_problem(tests=WITH_A_CUDA_CASE)
    good = grade(problem, "def double(x):\n    return x * 2\n", launcher,
                 Options(cuda=False, throughput=False))
    assert good.verdict is Verdict.ACCEPTED and good.cpu_only
    assert good.cuda_not_run == 1 and good.to_json("en")["cuda_not_run"] == 1
    assert "covers the CPU cases only" in good.message("en")
    assert "只代表 CPU 用例" in good.message("zh")
    assert [t.verdict for t in good.tests] == [Verdict.ACCEPTED, Verdict.SKIPPED]
    bad = grade(problem, "def double(x):\n    return x * 3\n", launcher,
                Options(cuda=False, throughput=False))
    assert bad.verdict is Verdict.WRONG_ANSWER and not bad.cpu_only
    assert "CPU cases only" not in bad.message("en")


def test_the_summary_line_says_so_too():
    cat = T("类别", "category")
    tests = [rep.TestResult("small", "public", cat, Verdict.ACCEPTED),
             rep.TestResult("on_cuda", "hidden", cat, Verdict.SKIPPED, rep.NEEDS_CUDA,
                            skip=rep.SkipReason.NEEDS_CUDA)]
    report = rep.Report(Verdict.ACCEPTED, "p", 1, "none", tests=tests, throughput=[
        rep.ThroughputResult("overlap", "cuda", Verdict.SKIPPED, 0.8)])
    assert report.cuda_not_run == 2  # the case and the speed check
    assert "; the verdict covers the CPU cases only" in render(report, "en")
    assert "结果只代表 CPU 用例" in render(report, "zh")
    report.tests[1] = rep.TestResult("on_cuda", "hidden", cat, Verdict.ACCEPTED)
    report.throughput = []
    assert not report.cpu_only and "CPU cases only" not in render(report, "en")
