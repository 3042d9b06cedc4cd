"""Throughput checks: the submission's speed relative to the reference, measured honestly.

For every timed call the grader makes fresh inputs and stages them in both runners
(untimed); then it times, from outside, a RUN until the whole result has arrived. The
submission and the reference run the same inputs back to back, alternating who goes first
(A B, B A, ...), in the same kind of sandbox. Every timed result is checked against the
reference's, so skipping work or replaying an earlier answer fails. The first calls are a
warm-up and are discarded. The ratio is the median over pairs of ``ref_time / sub_time``
(for a workload whose inputs come in kinds that cost differently by design, such as left
and right padding, the geometric mean of each kind's median). Repetitions go on until the
speed mode is satisfied (judge.measurement: ``verdict`` until the bar is decided by a
sequential sign test, ``ranking`` until the ratio is precise), or the budget is spent. A
ratio just under the bar is measured once more before ``too_slow``. The inputs of a pair
are encoded once and the same frame sent to both runners. Clocks inside the
sandbox are never read.

While one side is timed the other side's runner is frozen (the cgroup freezer, confirmed
before the clock starts), kept off the timing core (its cpuset) and its CPU time counted: a
pair in which it ran anyway is thrown away, and a submission whose helpers keep doing that
is ``too_slow`` (``DISTURBED_LIMIT``). Staging a call is untimed but not free: what the
submission's staging of a call took (its cgroup's CPU time) beyond the reference's staging
of the same inputs is charged to that call (``stage_charge``). Every runner fixes glibc's
malloc thresholds first (``sandbox.runner.steady_malloc``), so that how fast the same code
allocates does not depend on what its runner happened to free before. The figures and
how they are read are in judge/measurement.py.
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import os
import secrets
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from judge.events import Event, Phase, Running, ThroughputMeasured
from judge.i18n import T
from judge.jobfiles import JobFiles, JobFolderFull
from judge.measurement import (
    BORDERLINE,
    GENERATION_PAIRS,
    GENERATIONS,
    SPEED_MODES,
    Measurement,
    Pair,
    budget,
    pair_cap,
)
from judge.measurement import Workload as Workload  # problems' tests.py import it from here
from judge.package import Problem, Throughput

# the machine-wide lock, here for its callers (judge/broker.py) and judge/boxed.py's swap
from judge.quiet import measuring_alone
from judge.report import MAX_PAIR_RATIOS, KindTime, Report, ThroughputResult
from judge.session import RunnerLost, SubmissionError, stage_frame
from judge.testing import case_seed
from judge.verdict import Verdict

# Both sides are timed on one core: the grader's highest allowed CPU (None: anywhere).
TIMING_CPU = max(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
SLOWEST = 25.0  # a call this many times slower than the reference's median is cut short
# The side not being timed is frozen: its cgroup may count this much CPU time in a timed
# window (a rounding), more means it ran and the pair is thrown away; this many such
# windows while the reference is timed, and the submission is too_slow.
IDLE_CPU_S = 0.0002
DISTURBED_LIMIT = 5
HEARTBEAT_S = 0.2  # a ranking measurement's pulse between pairs (see heartbeat)


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
            budget_s: float, mode: str = "verdict",
            beat: Callable[[], None] | None = None) -> Measurement:
    """Time pairs until the measurement is settled in ``mode`` (judge.measurement:
    "verdict" stops once the bar is decided, "ranking" once the ratio is precise).
    ``beat`` is called after every pair: a rank job's heartbeat, through which its worker
    stops it when live work arrives (it raises there)."""
    sub, ref = sessions.get("sub"), sessions.get("ref")
    files = JobFiles({"sub": Path(sub.job.dir), "ref": Path(ref.job.dir)},
                     secrets.token_hex(8)) if workload.files else None
    try:
        return _measure(workload, spec, sessions, rng, budget_s, files, mode,
                        beat or (lambda: None))
    except JobFolderFull as e:  # the submission filled (or replaced) its own folder
        return Measurement([], [], [], verdict=Verdict.WRONG_ANSWER, message=e.message)
    finally:
        if files is not None:
            files.remove_all()


class _SubmissionFailed(Exception):
    """The submission's side of a pair ended in ``error`` (the reference's errors pass as
    they are: the package is broken)."""

    def __init__(self, error: RunnerLost | SubmissionError, limit: float,
                 ref_s: float | None) -> None:
        super().__init__(str(error))
        self.error = error
        self.limit = limit  # the submission's call limit
        self.ref_s = ref_s  # the reference's call in the same pair, when it went first


def _time_pair(workload: Workload, sessions, args: list, kwargs: dict, kind: str | None,
               sub_first: bool, sub_limit: float | Callable[[float], float],
               ref_limit: float) -> Pair:
    """Time one call of each side on the same inputs, the other side paused meanwhile.
    ``sub_limit`` may depend on the reference's call (a function of its seconds: the
    reference then goes first). Raises _SubmissionFailed when the submission's call
    fails."""
    sub, ref = sessions.get("sub"), sessions.get("ref")
    order = (("sub", sub, ref), ("ref", ref, sub))
    results: dict[str, Any] = {}
    times: dict[str, float] = {}
    stages: dict[str, float] = {}
    disturbed: dict[str, bool] = {}
    run_cpu: dict[str, float | None] = {}
    staging_cpu = True
    # The inputs are encoded once and the same bytes sent to both runners.
    frame = stage_frame(workload.target, workload.fn, args, kwargs, workload.prepare,
                        TIMING_CPU)
    if callable(sub_limit):
        sub_first = False
    for role, session, other in order if sub_first else order[::-1]:
        limit = ref_limit
        if role == "sub":
            limit = sub_limit(times["ref"]) if callable(sub_limit) else sub_limit
        try:
            with paused(other, away_from=TIMING_CPU) as window:
                res, elapsed = session.timed_run(workload.target, workload.fn, args, kwargs,
                                                 limit, prepare=workload.prepare,
                                                 cpu=TIMING_CPU, staged=frame)
        except (RunnerLost, SubmissionError) as e:
            if role == "ref":
                raise
            raise _SubmissionFailed(e, limit, times.get("ref")) from None
        results[role], times[role] = res.value, elapsed
        cpu = session.last_stage_cpu_s
        staging_cpu = staging_cpu and cpu is not None
        stages[role] = cpu if cpu is not None else session.last_stage_s
        run_cpu[role] = getattr(session, "last_run_cpu_s", None)
        disturbed[role] = window.disturbed
    return Pair(kind, results, times, stages, disturbed, staging_cpu, run_cpu)


def _measure(workload: Workload, spec: Throughput, sessions, rng: torch.Generator,
             budget_s: float, files: JobFiles | None, mode: str,
             beat: Callable[[], None]) -> Measurement:
    m = Measurement([], [], [])
    deadline = time.monotonic() + budget(budget_s, mode)
    cap = pair_cap(workload, mode)
    call_limit = max(5.0, budget_s)
    i = 0
    warm_from = workload.warmup  # pairs before this index are warm-up, discarded
    stalled = False  # one timed call of the submission was cut short already
    generations = _Generations(sessions, mode)
    while True:
        if files is not None:
            files.remove_all()  # the previous call's
            args, kwargs = workload.make(rng, files.put)
        else:
            args, kwargs = workload.make(rng)
        kind = workload.stratum(args, kwargs) if workload.stratum is not None else None
        # A call SLOWEST times the reference's median is cut short; before any pair, the
        # reference goes first and its call sets the limit (a submission that never
        # returns then costs seconds, not the whole budget).
        sub_limit: float | Callable[[float], float] = functools.partial(
            _sub_limit, call_limit)
        if m.ref_s:
            sub_limit = _sub_limit(call_limit, statistics.median(m.ref_s))
        try:
            pair = _time_pair(workload, sessions, args, kwargs, kind, i % 2 == 0, sub_limit,
                              call_limit)
        except _SubmissionFailed as failed:
            e = failed.error
            if (isinstance(e, RunnerLost) and e.verdict is Verdict.TIME_LIMIT_EXCEEDED
                    and not stalled and m.ratios and m.ratio >= spec.min_ratio):
                # One call cut short while the calls before ran fast enough: a stall of a
                # loaded machine or a slow path? Measure on in a fresh runner (the next
                # pair starts it, warmed up again); a second cut call is final.
                stalled, warm_from = True, i + workload.warmup
                continue
            if not m.ref_s and failed.ref_s is not None:
                m.ref_s.append(failed.ref_s)  # what the message compares it with
            return _failed(m, e, kind, failed.limit, sessions.code)
        wrong = _wrong(workload, pair, sessions)
        if wrong is not None:
            return wrong
        beat()
        i += 1
        if pair.disturbed["ref"]:
            m.disturbed += 1
        if m.disturbed >= DISTURBED_LIMIT:
            return _disturbed(m)
        if i > warm_from and not any(pair.disturbed.values()):
            m.add(pair)
            generations.kept += 1
        n = len(m.ratios)
        if ((m.settled(workload, spec.min_ratio, mode) and not generations.young)
                or n >= cap):
            return m
        if time.monotonic() > deadline and n >= 3:
            return m
        if generations.renewed():
            warm_from = i + workload.warmup


class _Generations:
    """Ranking mode's generations of runner processes (judge.measurement: GENERATIONS):
    new runners on both sides every GENERATION_PAIRS kept pairs, where the sessions can
    start them cheaply."""

    def __init__(self, sessions: Any, mode: str) -> None:
        self.refresh = getattr(sessions, "refresh", None) if mode == "ranking" else None
        self.number, self.kept = 1, 0

    @property
    def young(self) -> bool:
        """Too few generations yet for a ranking measurement to stop."""
        return self.refresh is not None and self.number < GENERATIONS

    def renewed(self) -> bool:
        """Start the next generation if this one has its pairs: True when it did (its
        warm-up pairs follow)."""
        if self.refresh is None or self.kept < GENERATION_PAIRS:
            return False
        if not self.refresh():  # no cheap new runners here: one generation it is
            self.refresh = None
            return False
        self.number, self.kept = self.number + 1, 0
        return True


def _sub_limit(call_limit: float, ref_s: float) -> float:
    """How long one timed call of the submission may take: SLOWEST times the reference's
    (at least 2 s), at most ``call_limit``."""
    return min(call_limit, max(2.0, SLOWEST * ref_s))


def _failed(m: Measurement, e: RunnerLost | SubmissionError, kind: str | None,
            limit: float, code: str) -> Measurement:
    """The measurement ended by the submission's failing call."""
    if isinstance(e, RunnerLost):
        if e.verdict is not Verdict.TIME_LIMIT_EXCEEDED:
            m.verdict, m.message = e.verdict, e.message
            return m
        m.verdict = Verdict.TOO_SLOW
        m.message = T(f"一次计时调用超过 {limit:.1f} 秒（参考解答约 "
                      f"{_ms_text(m.ref_s)} 毫秒）",
                      f"one timed call took over {limit:.1f} s (the reference "
                      f"takes about {_ms_text(m.ref_s)} ms)")
        m.ratios.append(0.0)
        if kind is not None:
            m.strata.append(kind)
        return m
    m.verdict = Verdict.MEMORY_LIMIT_EXCEEDED if e.is_memory else Verdict.RUNTIME_ERROR
    m.message = _hidden_error(e, code)
    m.detail = T("速度测试中", "during the speed test: ") + e.describe()
    return m


def _wrong(workload: Workload, pair: Pair, sessions) -> Measurement | None:
    """A measurement ended as wrong_answer when the pair's results disagree, else None."""
    if workload.check_folders:
        folders = {role: Path(job.dir) for role, job in sessions.jobs.items()}
        verdict = workload.check(pair.results["sub"], pair.results["ref"], folders)
    else:
        verdict = workload.check(pair.results["sub"], pair.results["ref"])
    if verdict is not False and not isinstance(verdict, T):
        return None
    m = Measurement([], [], [], verdict=Verdict.WRONG_ANSWER)
    m.message = T("速度测试中的一次调用结果不正确（输入是隐藏的）",
                  "a timed call returned a wrong result (its inputs are hidden)")
    if isinstance(verdict, T):
        m.detail = m.message + T("：", ": ") + verdict
    return m


def _disturbed(m: Measurement) -> Measurement:
    m.verdict = Verdict.TOO_SLOW
    m.message = T(
        f"参考解答计时的时候，你的代码留下的线程或进程仍在运行（{m.disturbed} 次计时因此作废），"
        "这样无法公平地测速。请在函数返回之前结束你启动的所有线程和进程。",
        f"threads or processes your code left behind kept running while the reference was "
        f"being timed ({m.disturbed} timed calls thrown away), so its speed cannot be "
        f"measured fairly. End every thread and process you start before your function "
        f"returns.")
    return m


@dataclass
class Window:
    """What the side that was not being timed did meanwhile."""

    stopped: bool = False  # the freezer reported it stopped
    ran_s: float | None = None  # the CPU time it used meanwhile; None: not known

    @property
    def disturbed(self) -> bool:
        return self.ran_s is not None and self.ran_s > IDLE_CPU_S


@contextlib.contextmanager
def paused(session: Any, away_from: int | None = None) -> Iterator[Window]:
    """The other side's runner stopped while one side is timed (frozen, and kept off the
    CPU ``away_from``), so that whatever it left running cannot slow the side being timed
    down; the window says whether it ran all the same (its cgroup's CPU time)."""
    window = Window()
    process = getattr(session, "process", None)  # a practice pack's replay has none
    if process is None or not process.alive:
        yield window
        return
    window.stopped = process.pause(True, away_from)
    before = process.cpu_time_ns()
    try:
        yield window
    finally:
        after = process.cpu_time_ns()
        process.pause(False)
        if before is not None and after is not None:
            window.ran_s = (after - before) / 1e9


def _median_ms(values: list[float]) -> float:
    return statistics.median(values) * 1000 if values else 0.0


def _ms_text(values: list[float]) -> str:
    """The median in milliseconds as a message shows it: two figures below 10 ms (a call
    of 0.02 ms is not "0 ms")."""
    ms = _median_ms(values)
    return f"{ms:.2g}" if ms < 10 else f"{ms:.0f}"


def run_checks(problem: Problem, sessions, report: Report, seed: int, device: str,
               emit: Callable[[Event], None], speed: str = "verdict") -> None:
    """Run every throughput check of the problem and record them in the report. ``speed``
    is the mode (judge.measurement.SPEED_MODES): "verdict" decides each bar as soon as it
    can, "ranking" measures each ratio precisely (the leaderboard's)."""
    if speed not in SPEED_MODES:
        raise ValueError(f"speed must be one of {SPEED_MODES}, not {speed!r}")
    if not any(spec.device != "cuda" or device == "cuda" for spec in problem.meta.throughput):
        _run_checks(problem, sessions, report, seed, device, emit, speed)  # all skipped
        return
    emit(Phase("waiting_for_quiet_machine"))
    with measuring_alone():
        emit(Phase("ranking" if speed == "ranking" else "measuring"))
        _run_checks(problem, sessions, report, seed, device, emit, speed)


def _run_checks(problem: Problem, sessions, report: Report, seed: int, device: str,
                emit: Callable[[Event], None], speed: str) -> None:
    suite = problem.tests
    for spec in problem.meta.throughput:
        if spec.device == "cuda" and device != "cuda":
            report.throughput.append(ThroughputResult(spec.name, "cuda", Verdict.SKIPPED,
                                                      spec.min_ratio))
            continue
        emit(Running(f"throughput:{spec.name}"))
        workload = suite.workloads[spec.workload].fn(spec.device)
        rng = torch.Generator().manual_seed(case_seed(seed, f"throughput:{spec.name}"))
        beat = heartbeat(emit) if speed == "ranking" else None
        m = measure(workload, spec, sessions, rng, spec.budget_s, speed, beat)
        rounds = 1
        if (m.verdict is Verdict.ACCEPTED and m.ratio < spec.min_ratio
                and m.ratio >= spec.min_ratio * BORDERLINE):
            again = measure(workload, spec, sessions, rng, spec.budget_s, speed, beat)
            rounds = 2
            if again.verdict is not Verdict.ACCEPTED or again.ratio > m.ratio:
                m = again
        if m.verdict is Verdict.ACCEPTED and m.ratio < spec.min_ratio:
            m.verdict = Verdict.TOO_SLOW
        entry = _result(spec, m, rounds, refined=speed == "ranking")
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


def heartbeat(emit: Callable[[Event], None], every_s: float = HEARTBEAT_S) -> Callable[[], None]:
    """A ranking measurement's pulse: ``Phase("ranking")`` again at most every ``every_s``
    between pairs. A rank job's worker does not post these repeats; it uses them to stop
    the job as soon as the server has asked it to give way to live work."""
    last = [time.monotonic()]

    def beat() -> None:
        now = time.monotonic()
        if now - last[0] >= every_s:
            last[0] = now
            emit(Phase("ranking"))

    return beat


def _result(spec: Throughput, m: Measurement, rounds: int, refined: bool) -> ThroughputResult:
    """What the report keeps of a check's measurement."""
    interval = None
    if m.groups():
        lo, hi = m.interval()
        interval = (round(lo, 4), round(hi, 4))
    kinds = tuple(KindTime(kind, round(sub * 1000, 3), round(ref * 1000, 3))
                  for kind, sub, ref in m.kinds())
    return ThroughputResult(
        spec.name, spec.device, m.verdict, spec.min_ratio, ratio=round(m.ratio, 4),
        torch=torch.__version__, spread=round(m.spread, 4), pairs=len(m.ratios),
        rounds=rounds, sub_ms=round(_median_ms(m.sub_s), 3),
        ref_ms=round(_median_ms(m.ref_s), 3), disturbed=m.disturbed,
        title=T(spec.title.zh, spec.title.en) if spec.title is not None else None,
        interval=interval, pair_ratios=tuple(round(r, 4) for r in m.ratios[:MAX_PAIR_RATIOS]),
        kinds=kinds, refined=refined)
