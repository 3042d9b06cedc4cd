"""Throughput checks: the submission's speed relative to the reference, measured honestly.

For every timed call the grader makes fresh inputs and stages them in both runners
(untimed); then it times, from outside, a RUN until the whole result has arrived. The
submission and the reference run the same inputs back to back, alternating who goes first
(A B, B A, ...), in the same kind of sandbox. Every timed result is checked against the
reference's, so skipping work or replaying an earlier answer fails. The first calls are a
warm-up and are discarded. The ratio is the median over pairs of ``ref_time / sub_time``
(for a workload whose inputs come in kinds that cost differently by design, such as left
and right padding, the geometric mean of each kind's median). Repetitions go on until it
is known tightly enough (or clearly on one side of the bar), or the budget is spent. A
ratio just under the bar is measured once more before ``too_slow``. Clocks inside the
sandbox are never read. Every runner fixes glibc's malloc thresholds first
(``sandbox.runner.steady_malloc``), so that how fast the same code allocates does not
depend on what its runner happened to free before.
"""

from __future__ import annotations

import builtins
import collections
import contextlib
import fcntl
import math
import os
import secrets
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from judge.events import Event, Running, ThroughputMeasured
from judge.i18n import T
from judge.jobfiles import JobFiles, JobFolderFull
from judge.package import Problem, Throughput
from judge.report import Report, ThroughputResult
from judge.session import RunnerLost, SubmissionError
from judge.testing import case_seed
from judge.verdict import Verdict

BORDERLINE = 0.85  # a median within this factor of the bar is measured again
REL_WIDTH = 0.06  # stop once the median's confidence interval is this narrow (relative)
# Both sides are timed on one core: the grader's highest allowed CPU (None: anywhere).
TIMING_CPU = max(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
STAGE_SLACK = 0.15  # staging may take this much longer than the reference's, uncharged
SLOWEST = 25.0  # a call this many times slower than the reference's median is cut short


@dataclass(frozen=True)
class Workload:
    """What a throughput check times.

    ``make(rng)`` returns fresh ``(args, kwargs)`` for one timed call. ``fn`` is a
    submission name (``target="sub"``) or a fixture scenario (``target="fixture"``). With
    ``prepare`` (a fixture scenario), the runner first builds untimed state from the
    inputs, ``prepare(sol, ctx, *args, **kwargs)``, and the timed call is
    ``fn(sol, ctx, state)``. ``check(got, expected)`` returns True (or None) when the
    submission's result is right, False or a message otherwise (see ``check_folders``).

    ``stratum(args, kwargs)`` names the kind of a call's inputs when kinds differ in cost
    by design, so that a submission's ratio differs between them (``pad_sequence`` with
    flips pads on the left at 0.7x the reference, on the right at 0.9x). The median of such
    a mixture falls between its two modes and moves with the mix drawn; each kind's median
    does not. The ratio is then the geometric mean of the kinds' medians, and a measurement
    settles only once it has seen at least two kinds, three pairs each.
    """

    fn: str
    make: Callable[..., tuple[list, dict]]  # (rng) or, with files, (rng, put)
    check: Callable[..., Any]  # (got, expected) or, with check_folders, (got, expected, folders)
    target: str = "sub"
    prepare: str | None = None
    warmup: int = 2
    min_pairs: int = 9
    max_pairs: int = 80
    # With True, ``check(got, expected, folders)`` also gets the host folders of the two
    # runners' jobs ({"sub": Path, "ref": Path}), to verify from outside what a timed call
    # left on disk.
    check_folders: bool = False
    stratum: Callable[[list, dict], str] | None = None
    # With True, ``make(rng, put)`` also gets ``put(data, suffix="") -> name``, which
    # writes a data file into both runners' job folders (judge.jobfiles: by the grader,
    # never through a planted name) and returns the path the runners open it by; the
    # files of a timed call are removed once it is checked.
    files: bool = False


@dataclass
class Measurement:
    ratios: list[float]
    sub_s: list[float]
    ref_s: list[float]
    verdict: Verdict = Verdict.ACCEPTED
    message: T | None = None
    detail: T | None = None  # admins only: may quote the hidden inputs
    stage_sub_s: list[float] = field(default_factory=list)  # untimed staging, per side
    stage_ref_s: list[float] = field(default_factory=list)
    strata: list[str] = field(default_factory=list)  # each pair's kind (Workload.stratum)

    def groups(self) -> list[list[float]]:
        """The pair ratios by kind of input (one group for a workload without kinds)."""
        if len(set(self.strata)) < 2:
            return [self.ratios] if self.ratios else []
        by: dict[str, list[float]] = collections.defaultdict(list)
        for kind, r in zip(self.strata, self.ratios, strict=True):
            by[kind].append(r)
        return list(by.values())

    @property
    def ratio(self) -> float:
        return _geometric_mean([statistics.median(g) for g in self.groups()])

    def interval(self) -> tuple[float, float]:
        """A confidence interval for ``ratio``: each kind's median interval, combined."""
        ends = [median_interval(g) for g in self.groups()]
        return _geometric_mean([lo for lo, _ in ends]), _geometric_mean([hi for _, hi in ends])

    def settled(self, workload: Workload, min_ratio: float) -> bool:
        """Known tightly enough (or clearly below the bar) to stop measuring: at least
        ``min_pairs`` pairs (and, for a workload with kinds of input, two kinds of three
        pairs each), and a confidence interval of the ratio within ``REL_WIDTH``."""
        groups = self.groups()
        if len(self.ratios) < workload.min_pairs or (workload.stratum is not None and (
                len(groups) < 2 or min(len(g) for g in groups) < 3)):
            return False
        lo, hi = self.interval()
        return hi < min_ratio * BORDERLINE or (hi - lo) / max(self.ratio, 1e-9) <= REL_WIDTH

    @property
    def spread(self) -> float:
        """Interquartile range of the pair ratios (each relative to its kind's median)."""
        relative = [r / m for g in self.groups() if (m := statistics.median(g)) for r in g]
        if len(relative) < 4:
            return 0.0
        q = statistics.quantiles(relative, n=4)
        return q[2] - q[0]


def _geometric_mean(values: list[float]) -> float:
    """0.0 for no values or any zero (a cut-short call)."""
    return statistics.geometric_mean(values) if values and min(values) > 0 else 0.0


def median_interval(values: list[float], z: float = 1.96) -> tuple[float, float]:
    """A distribution-free confidence interval for the median (order statistics)."""
    xs = sorted(values)
    n = len(xs)
    half = z * math.sqrt(n) / 2
    lo = max(0, math.floor(n / 2 - half))
    hi = min(n - 1, math.ceil(n / 2 + half) - 1)
    return xs[lo], xs[hi]


def _hidden_error(e: SubmissionError, code: str) -> T:
    """What a learner may read of an exception raised on the speed check's hidden inputs.
    Everything in it comes from the sandbox, so nothing the submission could fill with
    those inputs passes: a built-in exception's name, and a line number only where it is
    a line of the submitted ``code`` (the runner reports a frame of the file itself only).
    The full text goes to the admins' detail."""
    kind = e.type if isinstance(getattr(builtins, e.type, None), type) else "an exception"
    line = e.line_in(code)
    where = (T(f"（你的代码第 {line} 行）", f" (line {line} of your file)") if line is not None
             else T("", ""))
    return T(f"速度测试中抛出了异常 {kind}", f"during the speed test: raised {kind}") + where \
        + T("。速度测试的输入是隐藏的：请用更大的输入在本地试试。",
            ". Its inputs are hidden: try your code on larger inputs yourself.")


def measure(workload: Workload, spec: Throughput, sessions, rng: torch.Generator,
            budget_s: float) -> Measurement:
    sub, ref = sessions.get("sub"), sessions.get("ref")
    files = JobFiles({"sub": Path(sub.job.dir), "ref": Path(ref.job.dir)},
                     secrets.token_hex(8)) if workload.files else None
    try:
        return _measure(workload, spec, sessions, rng, budget_s, files)
    except JobFolderFull as e:  # the submission filled (or replaced) its own folder
        return Measurement([], [], [], verdict=Verdict.WRONG_ANSWER, message=e.message)
    finally:
        if files is not None:
            files.remove_all()


def _measure(workload: Workload, spec: Throughput, sessions, rng: torch.Generator,
             budget_s: float, files: JobFiles | None) -> Measurement:
    sub, ref = sessions.get("sub"), sessions.get("ref")
    m = Measurement([], [], [])
    deadline = time.monotonic() + budget_s
    call_limit = max(5.0, budget_s)
    i = 0
    warm_from = workload.warmup  # pairs before this index are warm-up, discarded
    stalled = False  # one timed call of the submission was cut short already
    while True:
        if files is not None:
            files.remove_all()  # the previous call's
            args, kwargs = workload.make(rng, files.put)
        else:
            args, kwargs = workload.make(rng)
        kind = workload.stratum(args, kwargs) if workload.stratum is not None else None
        results: dict[str, Any] = {}
        times: dict[str, float] = {}
        order = (("sub", sub), ("ref", ref)) if i % 2 == 0 else (("ref", ref), ("sub", sub))
        retry = False
        stage: dict[str, float] = {}
        for role, session in order:
            limit = call_limit
            if role == "sub" and m.ref_s:
                limit = min(call_limit, max(2.0, SLOWEST * statistics.median(m.ref_s)))
            try:
                with paused(ref if role == "sub" else sub):
                    res, elapsed = session.timed_run(workload.target, workload.fn, args,
                                                     kwargs, limit, prepare=workload.prepare,
                                                     cpu=TIMING_CPU)
            except RunnerLost as e:
                if role == "ref":
                    raise
                if (e.verdict is Verdict.TIME_LIMIT_EXCEEDED and not stalled and m.ratios
                        and m.ratio >= spec.min_ratio):
                    # One call cut short while the calls before ran fast enough: a stall of
                    # a loaded machine or a slow path? Measure on in a fresh runner (warmed
                    # up again); a second cut call is final.
                    stalled, retry = True, True
                    sub = sessions.get("sub")
                    warm_from = i + workload.warmup
                    break
                if e.verdict is Verdict.TIME_LIMIT_EXCEEDED:
                    m.verdict = Verdict.TOO_SLOW
                    m.message = T(f"一次计时调用超过 {limit:.1f} 秒（参考解答约 "
                                  f"{_median_ms(m.ref_s):.0f} 毫秒）",
                                  f"one timed call took over {limit:.1f} s (the reference "
                                  f"takes about {_median_ms(m.ref_s):.0f} ms)")
                    m.ratios.append(0.0)
                    if kind is not None:
                        m.strata.append(kind)
                else:
                    m.verdict, m.message = e.verdict, e.message
                return m
            except SubmissionError as e:
                if role == "ref":
                    raise
                m.verdict = (Verdict.MEMORY_LIMIT_EXCEEDED if e.is_memory
                             else Verdict.RUNTIME_ERROR)
                m.message = _hidden_error(e, sessions.code)
                m.detail = T("速度测试中", "during the speed test: ") + e.describe()
                return m
            results[role], times[role] = res.value, elapsed
            stage[role] = session.last_stage_s
        if retry:
            continue
        if workload.check_folders:
            folders = {"sub": Path(sub.job.dir), "ref": Path(ref.job.dir)}
            verdict = workload.check(results["sub"], results["ref"], folders)
        else:
            verdict = workload.check(results["sub"], results["ref"])
        if verdict is False or isinstance(verdict, T):
            m.verdict = Verdict.WRONG_ANSWER
            m.message = T("速度测试中的一次调用结果不正确（输入是隐藏的）",
                          "a timed call returned a wrong result (its inputs are hidden)")
            if isinstance(verdict, T):
                m.detail = m.message + T("：", ": ") + verdict
            return m
        if i >= warm_from:
            m.sub_s.append(times["sub"])
            m.ref_s.append(times["ref"])
            m.stage_sub_s.append(stage["sub"])
            m.stage_ref_s.append(stage["ref"])
            if kind is not None:
                m.strata.append(kind)
            # Work done while staging counts: the submission's median staging time beyond
            # the reference's (the same inputs, so the same decoding) is charged to every
            # call. Medians, and a tolerance of STAGE_SLACK of the reference's staging,
            # so that the noise of staging (which can take several times as long as the
            # timed call: encoding, sending, decoding) does not bias honest ratios.
            ref_stage = statistics.median(m.stage_ref_s)
            extra = max(0.0, statistics.median(m.stage_sub_s) - ref_stage * (1 + STAGE_SLACK))
            m.ratios = [r / max(s_ + extra, 1e-9) for r, s_ in zip(m.ref_s, m.sub_s, strict=True)]
        i += 1
        n = len(m.ratios)
        if m.settled(workload, spec.min_ratio) or n >= workload.max_pairs:
            return m
        if time.monotonic() > deadline and n >= 3:
            return m


@contextlib.contextmanager
def paused(session: Any) -> Iterator[None]:
    """The other side's runner stopped while one side is timed: whatever it left running
    cannot slow the side being timed down."""
    process = getattr(session, "process", None)  # a practice pack's replay has none
    if process is None or not process.alive:
        yield
        return
    process.pause(True)
    try:
        yield
    finally:
        process.pause(False)


def _median_ms(values: list[float]) -> float:
    return statistics.median(values) * 1000 if values else 0.0


@contextlib.contextmanager
def measuring_alone(path: Path | None = None) -> Iterator[None]:
    """One throughput measurement at a time on this machine (all worker slots): two
    measurements sharing two cores would time each other, not the code."""
    path = path or Path(tempfile.gettempdir()) / "torch-judge-throughput.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def run_checks(problem: Problem, sessions, report: Report, seed: int, device: str,
               emit: Callable[[Event], None]) -> None:
    """Run every throughput check of the problem and record them in the report."""
    with measuring_alone():
        _run_checks(problem, sessions, report, seed, device, emit)


def _run_checks(problem: Problem, sessions, report: Report, seed: int, device: str,
                emit: Callable[[Event], None]) -> None:
    suite = problem.tests
    for spec in problem.meta.throughput:
        if spec.device == "cuda" and device != "cuda":
            report.throughput.append(ThroughputResult(spec.name, "cuda", Verdict.SKIPPED,
                                                      spec.min_ratio))
            continue
        emit(Running(f"throughput:{spec.name}"))
        workload = suite.workloads[spec.workload].fn(spec.device)
        rng = torch.Generator().manual_seed(case_seed(seed, f"throughput:{spec.name}"))
        m = measure(workload, spec, sessions, rng, spec.budget_s)
        rounds = 1
        if (m.verdict is Verdict.ACCEPTED and m.ratio < spec.min_ratio
                and m.ratio >= spec.min_ratio * BORDERLINE):
            again = measure(workload, spec, sessions, rng, spec.budget_s)
            rounds = 2
            if again.verdict is not Verdict.ACCEPTED or again.ratio > m.ratio:
                m = again
        if m.verdict is Verdict.ACCEPTED and m.ratio < spec.min_ratio:
            m.verdict = Verdict.TOO_SLOW
        entry = ThroughputResult(
            spec.name, spec.device, m.verdict, spec.min_ratio, ratio=round(m.ratio, 4),
            torch=torch.__version__, spread=round(m.spread, 4), pairs=len(m.ratios),
            rounds=rounds, sub_ms=round(_median_ms(m.sub_s), 3),
            ref_ms=round(_median_ms(m.ref_s), 3),
            title=T(spec.title.zh, spec.title.en) if spec.title is not None else None)
        report.throughput.append(entry)
        emit(ThroughputMeasured(entry))
        if m.verdict is not Verdict.ACCEPTED:
            report.verdict = m.verdict
            if m.verdict is Verdict.TOO_SLOW and m.message is None:
                m.message = T(f"速度只有参考解答的 {m.ratio:.2f} 倍，"
                              f"要求至少 {spec.min_ratio:.2f} 倍",
                              f"runs at {m.ratio:.2f}× the reference's speed; at least "
                              f"{spec.min_ratio:.2f}× is required")
            report.message = T(f"速度检查 {spec.name}：", f"throughput check {spec.name}: ") + (
                m.message or T("", ""))
            if m.detail is not None:
                report.detail = m.detail
            return
