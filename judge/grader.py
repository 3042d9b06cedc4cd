"""Judge one submission against a problem's tests: ``grade(problem, code, launcher)``.

The submission and the reference each run in a runner process of their own, started by
the same launcher (the same kind of sandbox). Cases run in the grader, in test order; the
secret seed makes every input, and every comparison happens here. A submission's verdict
is its first failing test's.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import torch

from judge import pipeline
from judge.events import Done, Event, PlannedTest, Running, Started, TestJudged
from judge.expected import ReplayMismatch
from judge.i18n import T
from judge.measurement import SPEED_MODES
from judge.package import Problem
from judge.report import EMPTY, NEEDS_CUDA, Report, SkipReason, TestResult, cpu_only_message
from judge.session import (
    Budget,
    ImportFailed,
    RunnerLost,
    SubmissionError,
)
from judge.sessions import HeadStart, Sessions
from judge.testing import (
    CaseFailed,
    CaseSkipped,
    CaseSpec,
    Ctx,
    ReferenceFailed,
    as_reference,
    case_seed,
)
from judge.trust import runs_confined
from judge.verdict import Verdict
from judge.workdirs import job_root
from sandbox.launch import Launcher

log = logging.getLogger(__name__)

MAX_RESTARTS = 3
PUBLIC_SEED = 0
LIMIT_VERDICTS = {Verdict.TIME_LIMIT_EXCEEDED, Verdict.MEMORY_LIMIT_EXCEEDED,
                  Verdict.OUTPUT_LIMIT_EXCEEDED}

Progress = Callable[[Event], None]


@dataclass(frozen=True)
class Options:
    seed: int | None = None
    public_only: bool = False
    examples_only: bool = False
    cases: tuple[str, ...] = ()
    throughput: bool = True
    cuda: bool = False  # a CUDA device is available to the runners
    jobs_root: Path | None = None
    # Recorded reference answers for public cases (a practice pack has no reference.py).
    expected: dict[str, list] | None = None
    # How the speed checks stop (judge.measurement.SPEED_MODES): "verdict" as soon as the
    # bar is decided (a live judging), "ranking" once the ratio is precise (the leaderboard).
    speed: str = "verdict"
    # False: no correctness case, the speed checks only (bench/throughput_stability.py
    # --checks-only, to time known-correct files many times)
    correctness: bool = True
    # True: the cases after the first hidden case that fails are not run (judge check:
    # a wrong fixture's verdict and the case that catches it are known by then)
    stop_at_hidden_failure: bool = False

    def __post_init__(self) -> None:
        if self.speed not in SPEED_MODES:
            raise ValueError(f"speed must be one of {SPEED_MODES}, not {self.speed!r}")


def grade(problem: Problem, code: str, launcher: Launcher, options: Options = Options(),
          on_progress: Progress | None = None,
          on_verdict: Callable[[Report], None] | None = None,
          head_start: HeadStart | None = None) -> Report:
    """Judge ``code`` against ``problem``. Never raises for anything the code does.

    ``on_verdict(report)`` is called once the report is final, before the runners are
    stopped and the job folders removed (tens of milliseconds a learner need not wait
    for: a worker posts the verdict there); ``grade`` returns after that clean-up. With a
    worker's ``head_start`` (judge.sessions), the runners started for this problem at the
    end of the last judging are used, and this one's end starts the next one's."""
    started = time.monotonic()
    seed = options.seed if options.seed is not None else secrets.randbits(62)
    # Runners get the GPU (and start cold, without the warm template) only for a problem
    # that has CUDA cases or checks; a CPU problem on a GPU worker stays warm and CPU-only.
    device = "cuda" if options.cuda and problem.uses_cuda else "cpu"
    report = Report(Verdict.ACCEPTED, problem.slug, seed, launcher.isolation,
                    problem_version=problem.content_hash[:12], torch=torch.__version__,
                    device=device)
    emit = on_progress or (lambda event: None)
    known: list[bool] = []

    def verdict_known() -> None:
        if known:
            return
        known.append(True)
        finish(report)
        report.time_ms = (time.monotonic() - started) * 1000
        emit(Done.of(report))
        if on_verdict is not None:
            on_verdict(report)

    try:
        with one_thread():
            _grade_in_place_or_box(problem, code, launcher, options, report, emit,
                                   verdict_known, head_start)
    except Exception as e:  # making the folder failed (the clean-up itself never raises)
        log.exception("no job folder for %s", problem.slug)
        report.verdict = Verdict.INTERNAL_ERROR
        report.message = T(f"评测系统内部错误：{type(e).__name__}: {e}",
                           f"internal error: {type(e).__name__}: {e}")
    verdict_known()  # a grader box's judging, or a failure before any runner started
    return report


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """The grader's own tensor work (making inputs, comparing results) on one thread while
    it judges. Its results are small and the runners take the other cores: torch's pool of
    one thread per core then only waits for a busy machine (comparing a padding-collate
    result took 49 ms with two threads on a loaded 2-core machine, 0.9 ms with one)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _grade_in_place_or_box(problem: Problem, code: str, launcher: Launcher, options: Options,
                           report: Report, emit: Progress, known: Callable[[], None],
                           head_start: HeadStart | None) -> None:
    if runs_confined(problem, launcher.isolation):
        # A package that did not ship with the judge: its tests.py runs in a grader
        # box of its own, never in this process (judge/graderbox.py).
        from judge.graderbox import grade_in_box

        grade_in_box(problem, code, launcher, options, report, emit)
        return
    if report.device != "cpu" or options.expected is not None:
        head_start = None  # CUDA runners start cold; a replay has no reference runner
    started = head_start.take(problem, options.jobs_root) if head_start else None
    with job_root(launcher, options.jobs_root,
                  existing=started.root if started else None) as root:
        _grade(problem, code, launcher, options, report, root, emit, known, started)
    if head_start is not None:
        head_start.prepare(problem, options.jobs_root)


def finish(report: Report) -> None:
    """What a judged report says last: an accepted verdict on the CPU cases only says so."""
    if report.cpu_only and report.message == EMPTY:
        report.message = cpu_only_message(report.cuda_not_run)


def _grade(problem: Problem, code: str, launcher: Launcher, options: Options, report: Report,
           root: Path, emit: Progress, known: Callable[[], None],
           started: Sessions | None = None) -> None:
    """Judge into ``report``, say the verdict is ``known``, then close every runner (also
    on the way out of an exception that is not the code's doing: no verdict then)."""
    opened: list[Sessions] = []
    try:
        _judge(problem, code, launcher, options, report, root, emit, opened, started)
        known()
    finally:
        for sessions in opened:
            sessions.close()


def _judge(problem: Problem, code: str, launcher: Launcher, options: Options, report: Report,
           root: Path, emit: Progress, opened: list[Sessions],
           started: Sessions | None) -> None:
    """Judge into ``report``; the runners it starts are in ``opened`` (``started``: a
    head start's, which take on ``code``)."""
    device, seed = report.device, report.seed
    try:
        cases = problem.tests.select(public_only=options.public_only,
                                     examples_only=options.examples_only,
                                     names=list(options.cases) or None
                                     ) if options.correctness else []
        emit(Started(len(cases), tuple(PlannedTest(c.name, c.visibility) for c in cases),
                     seed))
        sessions = started or Sessions(launcher, problem, root, code, device, options.expected)
        opened.append(sessions)  # closed whatever happens next
        if started is not None:
            started.adopt(code)
        sessions.start_shared()
        sub, ref = sessions.get("sub"), sessions.get("ref")
        try:
            sub.ready()
        except ImportFailed as e:
            report.verdict = Verdict.COMPILE_ERROR
            report.message = e.describe()
            report.tests = [_skipped(c, SkipReason.NOT_RUN) for c in cases]
            return
        except RunnerLost as e:
            report.verdict, report.message = e.verdict, e.message
            report.tests = [_skipped(c, SkipReason.NOT_RUN) for c in cases]
            return
        ref.ready()
        _run_cases(problem, cases, sessions, report, options, emit)
        if (report.verdict is Verdict.ACCEPTED and options.throughput and problem.meta.throughput
                and not options.public_only and not options.cases):
            from judge.throughput import run_checks

            run_checks(problem, sessions, report, seed, device, emit, options.speed)
    except (ImportFailed, ReferenceFailed, RunnerLost) as e:
        # Only the reference's session gets here: the package is broken.
        report.verdict = Verdict.INTERNAL_ERROR
        report.message = REFERENCE_BROKE
        why = as_reference(str(e) if not isinstance(e, ImportFailed) else e.describe().en)
        report.detail = T(f"参考解答无法运行：{why}", f"the reference could not run: {why}")
        log.error("reference failed for %s: %s", problem.slug, e)
    except Exception as e:
        log.exception("internal error grading %s", problem.slug)
        report.verdict = Verdict.INTERNAL_ERROR
        report.message = T(f"评测系统内部错误：{type(e).__name__}: {e}",
                           f"internal error: {type(e).__name__}: {e}")


# What a learner reads when the problem's own reference fails: its traceback (the
# reference's code) goes to the report's admin-only detail.
REFERENCE_BROKE = T("评测系统内部错误：这道题的参考解答出错了，不是你的代码的问题。"
                    "管理员可以在评测详情里看到原因。",
                    "internal error: this problem's reference solution failed; this is not "
                    "your code's fault. Admins can see why in the report's details.")


def _skipped(spec: CaseSpec, reason: SkipReason, why: T | None = None) -> TestResult:
    return TestResult(spec.name, spec.visibility, spec.category, Verdict.SKIPPED,
                      why or T("", ""), skip=reason)


def _run_cases(problem: Problem, cases: list[CaseSpec], sessions: Sessions, report: Report,
               options: Options, emit: Progress) -> None:
    stop: T | None = None
    begun: dict[int, pipeline.Begun | None] = {}  # cases whose first part has run
    for index, spec in enumerate(cases):
        tried = index in begun  # its first part ran ahead (None: and raised)
        early = begun.pop(index, None)
        if stop is None and spec.device == "cuda" and not options.cuda:
            result = _skipped(spec, SkipReason.NEEDS_CUDA, NEEDS_CUDA)
        elif stop is not None:
            result = _skipped(spec, SkipReason.NOT_RUN, stop)
        else:
            emit(Running(spec.name, index))
            if _ahead(spec, sessions, options):
                # This case's first part (unless it ran already), then the next case's,
                # then this case's second part: the runners compute meanwhile
                # (judge/pipeline.py).
                if not tried:
                    early = _begin(problem, spec, sessions, report.seed)
                after = cases[index + 1] if index + 1 < len(cases) else None
                if early is not None and after is not None and _ahead(after, sessions, options):
                    begun[index + 1] = _begin(problem, after, sessions, report.seed)
            result = run_case(problem, spec, sessions, report.seed, options, early)
            early = None
            if result.verdict in LIMIT_VERDICTS:
                stop = T("之前的用例超出了限制，未运行", "not run: an earlier case hit a limit")
            elif (options.stop_at_hidden_failure and not spec.public
                  and result.verdict not in (Verdict.ACCEPTED, Verdict.SKIPPED)):
                stop = T("一个隐藏用例已经未通过，未运行", "not run: a hidden case failed already")
            elif sessions.restarts > MAX_RESTARTS:
                stop = T("进程多次崩溃，未运行", "not run: the process crashed too often")
        if early is not None:
            early.drop()
        report.tests.append(result)
        if (report.verdict is Verdict.ACCEPTED
                and result.verdict not in (Verdict.ACCEPTED, Verdict.SKIPPED)):
            report.verdict = result.verdict
            if result.visibility == "public":
                report.message = T(f"{result.name}：", f"{result.name}: ") + result.message
            else:
                report.message = T(f"隐藏用例 {result.name}（{result.category.zh}）未通过",
                                   f"hidden case {result.name} ({result.category.en}) failed")
        emit(TestJudged(index, result))


def _ahead(spec: CaseSpec, sessions: Sessions, options: Options) -> bool:
    """Whether a case may be begun while the one before is checked (judge/pipeline.py):
    a hidden generator case, run here against live runners."""
    return (pipeline.begins_ahead(spec.fn, spec.public) and sessions.replay is None
            and (spec.device != "cuda" or options.cuda))


def _begin(problem: Problem, spec: CaseSpec, sessions: Sessions,
           seed: int) -> pipeline.Begun | None:
    """Run a case's first part (None: it raised, and runs again whole in its turn).

    A runner lost while the first part sends its calls is such a failure too: the
    submission's runner can end (a crash in the case before) a moment before its reaper
    marks it so, and a call sent then fails. RunnerLost is a BaseException (a test's
    ``except Exception`` must not swallow it), so pipeline.begin lets it through; out of
    here it would end the judging as a broken reference. In its turn the case runs whole,
    on a new runner, and is judged there."""
    try:
        return pipeline.begin(spec.fn, _context(problem, spec, sessions, seed),
                              sessions.current)
    except RunnerLost:
        return None


def _context(problem: Problem, spec: CaseSpec, sessions: Sessions, seed: int) -> Ctx:
    # Public cases are the same for everyone (and reproducible offline); hidden ones are
    # drawn from the submission's secret seed.
    case_base = PUBLIC_SEED if spec.public else seed
    return Ctx(seed=case_seed(case_base, spec.name), public=spec.public,
               budget=Budget(spec.timeout_s or problem.meta.limits.case_wall_s),
               sessions=sessions.get, workdirs={r: j.dir for r, j in sessions.jobs.items()},
               device=sessions.device)


def run_case(problem: Problem, spec: CaseSpec, sessions: Sessions, seed: int,
             options: Options, early: pipeline.Begun | None = None) -> TestResult:
    """Run one case and turn how it ended into a TestResult. ``early``: its first part,
    run ahead (judge/pipeline.py); thrown away, and the case run whole, when a runner it
    began its calls on has ended since."""
    sub = sessions.get("sub")
    out_before = sub.output_mark()
    if sessions.replay is not None:
        sessions.replay.start_case(spec.name)
    if early is not None and not early.usable(sessions.current):
        early.drop()
        early = None
    ctx = early.ctx if early is not None else _context(problem, spec, sessions, seed)
    budget = ctx.budget
    verdict, message = Verdict.ACCEPTED, T.join(ctx.notes)
    detail, skip = T("", ""), None
    try:
        if early is not None:
            early.finish()
        else:
            pipeline.run_body(spec.fn, ctx)
        message = T.join(ctx.notes)
    except CaseFailed as e:
        verdict, message = Verdict.WRONG_ANSWER, e.message
    except CaseSkipped as e:
        verdict, message, skip = Verdict.SKIPPED, e.message, SkipReason.UNAVAILABLE
    except SubmissionError as e:
        verdict = Verdict.MEMORY_LIMIT_EXCEEDED if e.is_memory else Verdict.RUNTIME_ERROR
        message = e.describe(None if e.is_memory else ctx.error_hint(e))
    except RunnerLost as e:
        verdict, message = e.verdict, e.message
    except ImportFailed as e:
        verdict, message = Verdict.COMPILE_ERROR, e.describe()
    except ReplayMismatch as e:
        verdict, skip = Verdict.SKIPPED, SkipReason.OFFLINE
        message = T(f"无法离线检查：{e}（这台机器生成的输入与录制时不同，请在线提交）",
                    f"cannot be checked offline: {e} (this machine builds different inputs "
                    f"than the recording; submit online)")
    except ReferenceFailed as e:
        log.error("reference failed in %s/%s: %s", problem.slug, spec.name, e)
        verdict = Verdict.INTERNAL_ERROR
        message = REFERENCE_BROKE
        detail = T(f"参考解答出错：{e}", f"the reference failed: {e}")
    except Exception as e:
        log.exception("test %s/%s crashed", problem.slug, spec.name)
        verdict = Verdict.INTERNAL_ERROR
        message = T(f"测试代码出错：{type(e).__name__}: {e}",
                    f"the test itself crashed: {type(e).__name__}: {e}")
    output = ""
    if spec.public:
        output = sub.output_since(out_before) if sessions.current.get("sub") is sub else ""
    if verdict is Verdict.SKIPPED and skip is None:  # a runner the judge ended
        skip = SkipReason.NOT_RUN
    return TestResult(spec.name, spec.visibility, spec.category, verdict, message,
                      budget.used * 1000, output, detail, skip)
