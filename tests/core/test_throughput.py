"""Throughput checks: timed from outside, every result verified, clocks inside ignored."""

from __future__ import annotations

import re
import statistics

import pytest

from judge.events import Phase, ThroughputMeasured
from judge.grader import Options, grade
from judge.measurement import (
    VERDICT_ALPHA,
    Measurement,
    Pair,
    Workload,
    looks,
    median_interval,
    sign_bounds,
    stage_charge,
)
from judge.session import SubmissionError
from judge.verdict import Verdict
from tests.conftest import TESTS, TOML

THROUGHPUT_TOML = TOML + """
[[throughput]]
name = "big"
workload = "big"
min_ratio = 0.4
budget_s = 8.0
title = {{ zh = "大张量", en = "a big tensor" }}
"""

WORKLOAD = '''
from judge.testing import workload
from judge.throughput import Workload

@workload
def big(device):
    def make(rng):
        return [torch.randint(0, 100, (20_000,), generator=rng)], {}
    return Workload(fn="double", make=make, check=lambda got, exp: torch.equal(got, exp),
                    min_pairs=5, max_pairs=12)
'''

FAST = "def double(x):\n    return x * 2\n"
SLOW = """
import torch

def double(x):
    out = x.clone()
    for _ in range(3000):  # the same work thousands of times over: ~20 ms
        out = x * 2
    return out
"""
CLOCK_TAMPERING = """
import time
import torch

_real = time.perf_counter
time.perf_counter = lambda: 0.0
time.monotonic = lambda: 0.0
time.time = lambda: 0.0

def double(x):
    for _ in range(3000):
        out = x * 2
    return out
"""
REPLAY = """
import torch

_seen = []

def double(x):
    if x.numel() > 1000 and _seen:
        return _seen[0]  # replay the first big answer: no work at all
    out = x * 2
    if x.numel() > 1000:
        _seen.append(out)
    return out
"""


@pytest.fixture
def problem(make_problem):
    toml = THROUGHPUT_TOML.format(slug="double-it", number=7, wall=5.0, memory=2048)
    return make_problem(toml=toml, tests=TESTS + WORKLOAD)


def judge(problem, code, launcher):
    return grade(problem, code, launcher, Options(seed=1))


def test_reference_speed_is_accepted_and_recorded(problem, launcher):
    report = judge(problem, FAST, launcher)
    assert report.verdict is Verdict.ACCEPTED, report.message.en
    (tp,) = report.throughput
    assert tp.verdict is Verdict.ACCEPTED and tp.ratio is not None and tp.ratio > 0.4
    assert set(tp.to_json()) >= {"device", "torch", "ratio", "spread", "min_ratio", "pairs",
                                 "interval", "pair_ratios", "kinds", "refined"}
    assert tp.device == "cpu" and tp.pairs >= 3
    assert tp.interval is not None and tp.interval[0] <= tp.ratio <= tp.interval[1]
    assert len(tp.pair_ratios) == tp.pairs and not tp.refined
    ((kind, sub_ms, ref_ms),) = [(k.kind, k.sub_ms, k.ref_ms) for k in tp.kinds]
    assert kind is None and sub_ms == tp.sub_ms and ref_ms == tp.ref_ms


def test_ranking_mode_is_refined_and_says_which_phase_it_is_in(problem, launcher):
    events = []
    report = grade(problem, FAST, launcher, Options(seed=1, speed="ranking"),
                   on_progress=events.append)
    (tp,) = report.throughput
    assert report.verdict is Verdict.ACCEPTED and tp.refined
    phases = [e.phase for e in events if isinstance(e, Phase)]
    # then the measurement's heartbeat: "ranking" again between pairs (at most 5 a second)
    assert phases[:2] == ["waiting_for_quiet_machine", "ranking"]
    assert set(phases[2:]) <= {"ranking"}
    measured = events.index(next(e for e in events if isinstance(e, ThroughputMeasured)))
    assert events.index(Phase("ranking")) < measured
    verdict_events = []
    grade(problem, FAST, launcher, Options(seed=1), on_progress=verdict_events.append)
    assert [e.phase for e in verdict_events if isinstance(e, Phase)] == [
        "waiting_for_quiet_machine", "measuring"]
    with pytest.raises(ValueError):
        Options(speed="fast")


class _Stop(BaseException):
    """What a rank job's worker raises from a heartbeat when live work waits."""


def test_a_ranking_measurement_can_be_stopped_between_pairs(problem, launcher, monkeypatch):
    """The heartbeat reaches the caller between timed pairs, and what it raises leaves the
    grader (no verdict is made of it) with every runner closed: that is how a rank job
    gives way to a live submission within a pair's time instead of at the check's end."""
    import judge.throughput as throughput
    from judge.session import RunnerSession

    monkeypatch.setattr(throughput, "HEARTBEAT_S", 0.0)
    monkeypatch.setattr(throughput.heartbeat, "__defaults__", (0.0,))
    closed: list[bool] = []
    real_close = RunnerSession.close
    monkeypatch.setattr(RunnerSession, "close", lambda self: (closed.append(True),
                                                              real_close(self))[1])
    beats: list[int] = []

    def on_progress(event):
        if event == Phase("ranking"):
            beats.append(1)
            if len(beats) == 3:  # the phase itself, then two pairs' heartbeats
                raise _Stop

    with pytest.raises(_Stop):
        grade(problem, FAST, launcher, Options(seed=1, speed="ranking"), on_progress=on_progress)
    assert len(beats) == 3 and closed and len(closed) >= 2


def test_the_heartbeat_beats_at_most_once_per_period(monkeypatch):
    import judge.throughput as throughput

    clock = [100.0]
    monkeypatch.setattr(throughput.time, "monotonic", lambda: clock[0])
    emitted: list = []
    beat = throughput.heartbeat(emitted.append, every_s=0.2)
    for _ in range(10):  # ten pairs of 50 ms: two periods of 0.2 s
        clock[0] += 0.05
        beat()
    assert emitted == [Phase("ranking")] * 2


@pytest.mark.parametrize("code", [SLOW, CLOCK_TAMPERING], ids=["slow", "patches-clocks"])
def test_slow_code_is_too_slow_whatever_it_does_to_its_clocks(problem, launcher, code):
    report = judge(problem, code, launcher)
    assert report.verdict is Verdict.TOO_SLOW, (report.message.en, report.throughput)
    (tp,) = report.throughput
    assert tp.ratio is not None and tp.ratio < 0.4 and tp.verdict is Verdict.TOO_SLOW
    assert "at least 0.40× is required" in report.message.en
    assert "要求至少 0.40 倍" in report.message.zh


def test_replaying_an_earlier_answer_fails_the_timed_check(problem, launcher):
    report = judge(problem, REPLAY, launcher)
    assert report.verdict is Verdict.WRONG_ANSWER
    assert "timed call returned a wrong result" in report.message.en


def test_public_only_runs_no_throughput(problem, launcher):
    report = grade(problem, SLOW, launcher, Options(public_only=True))
    assert report.verdict is Verdict.ACCEPTED and report.throughput == []


def test_median_interval_brackets_the_median():
    values = [float(v) for v in range(1, 102)]
    lo, hi = median_interval(values)
    assert lo < statistics.median(values) < hi
    assert hi - lo < 30


def _mixture(lefts: int, rights: int, kinds: bool) -> Measurement:
    """Pair ratios of a submission at 0.6x the reference on left padding, 0.9x on right."""
    ratios = [0.6 + 0.001 * (i % 7) for i in range(lefts)] + \
        [0.9 + 0.001 * (i % 7) for i in range(rights)]
    strata = ["left"] * lefts + ["right"] * rights if kinds else []
    return Measurement(ratios, [1.0] * len(ratios), [1.0] * len(ratios), strata=strata)


def test_a_mixture_of_kinds_is_rated_by_each_kinds_median_whatever_the_mix():
    # Without kinds the median jumps from one mode to the other as the mix drawn changes.
    assert _mixture(30, 20, kinds=False).ratio < 0.61 < 0.9 < _mixture(20, 30, kinds=False).ratio
    expected = (0.603 * 0.903) ** 0.5  # the geometric mean of the two kinds' medians
    for lefts, rights in ((30, 20), (20, 30), (10, 40)):
        m = _mixture(lefts, rights, kinds=True)
        assert m.ratio == pytest.approx(expected, rel=1e-3)
        assert m.spread < 0.02  # measured within each kind, not across the two modes
        lo, hi = m.interval()
        assert lo <= m.ratio <= hi and (hi - lo) / m.ratio < 0.01


def _workload(stratum=None) -> Workload:
    return Workload(fn="f", make=lambda rng: ([], {}), check=lambda got, exp: True,
                    min_pairs=5, stratum=stratum)


def test_a_measurement_with_kinds_settles_only_once_it_has_seen_two_of_three_pairs_each():
    from judge.measurement import RANKING_MIN_PAIRS

    n = RANKING_MIN_PAIRS  # a ranking's floor of pairs
    tight = [1.0] * n
    assert Measurement(tight, tight, tight).settled(_workload(), 0.5, "ranking")
    kinded = _workload(stratum=lambda args, kwargs: "x")
    one_kind = Measurement(tight, tight, tight, strata=["left"] * n)
    assert not one_kind.settled(kinded, 0.5, "ranking")
    two_short = Measurement(tight, tight, tight, strata=["left"] * (n - 2) + ["right"] * 2)
    assert not two_short.settled(kinded, 0.5, "ranking")
    enough = Measurement(tight, tight, tight, strata=["left"] * (n - 3) + ["right"] * 3)
    assert enough.settled(kinded, 0.5, "ranking")
    assert not Measurement(tight[:4], tight[:4], tight[:4]).settled(_workload(), 0.5, "ranking")


def test_a_ranking_never_settles_before_its_floor_of_pairs_however_narrow():
    """Ranking mode: the interval of a few dozen noisy pairs can look narrow by luck, so
    a ranking measures at least RANKING_MIN_PAIRS pairs, whatever the workload's max_pairs
    (sized for a live verdict): its cap is never below that floor."""
    import dataclasses

    from judge.measurement import RANKING_MIN_PAIRS, ranking_cap

    workload = _workload()  # max_pairs 80
    assert ranking_cap(dataclasses.replace(workload, max_pairs=12)) == RANKING_MIN_PAIRS
    assert ranking_cap(workload) >= RANKING_MIN_PAIRS
    short = [1.0] * (RANKING_MIN_PAIRS - 1)
    assert not Measurement(short, short, short).settled(workload, 0.5, "ranking")
    enough = [1.0] * RANKING_MIN_PAIRS
    assert Measurement(enough, enough, enough).settled(workload, 0.5, "ranking")
    slow = [0.1] * 12  # clearly below the bar: stops at once, as before
    assert Measurement(slow, [1.0] * 12, [0.1] * 12).settled(workload, 0.5, "ranking")


def _pairs(ratios: list[float], strata: list[str] | None = None) -> Measurement:
    return Measurement(list(ratios), [1.0] * len(ratios), [1.0] * len(ratios),
                       strata=strata or [])


def _first_stop(ratios: list[float], workload: Workload, bar: float, mode: str = "verdict",
                strata: list[str] | None = None) -> int | None:
    """After how many pairs a measurement of these pair ratios stops (None: never)."""
    for n in range(1, len(ratios) + 1):
        if _pairs(ratios[:n], strata and strata[:n]).settled(workload, bar, mode):
            return n
    return None


def _noisy(center: float, n: int, width: float = 0.2) -> list[float]:
    return [center * (1 + width * (((i * 37) % 11) / 10 - 0.5)) for i in range(n)]


def test_the_verdict_stops_as_soon_as_the_ratio_is_clearly_above_or_below_the_bar():
    wide = Workload(fn="f", make=lambda rng: ([], {}), check=lambda got, exp: True,
                    min_pairs=9, max_pairs=200)
    # The sign test's bound needs n pairs with 2**-n below each look's share of alpha.
    share = VERDICT_ALPHA / (2 * len(looks(9, 200)))
    need = min(n for n in sorted(looks(9, 200)) if 0.5 ** n <= share)
    fast, slow = _noisy(1.0, 200), _noisy(0.05, 200)
    assert _first_stop(fast, wide, 0.25) == need < 20
    assert _pairs(fast[:need], None).decision(wide, 0.25) is Verdict.ACCEPTED
    assert _first_stop(slow, wide, 0.25) == need
    assert _pairs(slow[:need], None).decision(wide, 0.25) is Verdict.TOO_SLOW
    # Ranking mode wants the interval within REL_WIDTH: a 20 % wide spread takes longer.
    ranked = _first_stop(fast, wide, 0.25, "ranking")
    assert ranked is not None and ranked > need
    assert (lambda m: m.settled(wide, 0.25, "ranking"))(_pairs(fast[:ranked]))


def test_the_verdict_waits_for_the_minimum_and_for_both_kinds():
    late = Workload(fn="f", make=lambda rng: ([], {}), check=lambda got, exp: True,
                    min_pairs=40, max_pairs=200)
    assert _first_stop(_noisy(1.0, 200), late, 0.25) in looks(40, 200)
    assert _first_stop(_noisy(1.0, 200), late, 0.25) >= 40
    kinded = Workload(fn="f", make=lambda rng: ([], {}), check=lambda got, exp: True,
                      min_pairs=9, max_pairs=200, stratum=lambda args, kwargs: "x")
    one_kind = _noisy(1.0, 200)
    assert _first_stop(one_kind, kinded, 0.25, strata=["left"] * 200) is None
    mixed = ["left", "right"] * 100
    stop = _first_stop(one_kind, kinded, 0.25, strata=mixed)
    plain = Workload(fn="f", make=lambda rng: ([], {}), check=lambda got, exp: True,
                     min_pairs=9, max_pairs=200)
    # Two kinds: each kind's bound needs its own pairs (and its share of alpha).
    assert stop is not None and stop > 2 * _first_stop(one_kind, plain, 0.25) - 9


def test_a_ratio_at_the_bar_is_never_decided_by_the_sequential_rule():
    wide = Workload(fn="f", make=lambda rng: ([], {}), check=lambda got, exp: True,
                    min_pairs=9, max_pairs=200)
    assert _first_stop(_noisy(0.25, 200), wide, 0.25) is None
    assert _first_stop(_noisy(0.27, 200, width=0.4), wide, 0.25) is None


def _timed(ratios: list[float], ref_s: float = 0.003) -> Measurement:
    """Pairs whose submission call took the reference's time over its pair ratio."""
    return Measurement(list(ratios), [ref_s / r for r in ratios], [ref_s] * len(ratios))


def test_a_hopeless_submission_is_told_after_the_minimum_of_pairs_not_the_first_look():
    wide = Workload(fn="f", make=lambda rng: ([], {}), check=lambda got, exp: True,
                    min_pairs=9, max_pairs=200)
    first = min(looks(9, 200))
    crawl = _noisy(0.01, 200)  # a token-by-token loop: each of its calls 100 times slower
    stops = [n for n in range(1, 201) if _timed(crawl[:n]).settled(wide, 0.25)]
    assert stops and stops[0] == 9 < first  # the minimum, then read by its median
    m = _timed(crawl[:9])
    assert m.decision(wide, 0.25) is None and m.hopeless(wide, 0.25) and m.ratio < 0.25
    # At the bar or above, the calls add up to it after 4 times the first look at best.
    for ratio in (0.25, 0.3, 1.0):
        steady = _noisy(ratio, 200, width=0.4)
        assert not any(_timed(steady[:n]).hopeless(wide, 0.25) for n in range(3 * first))
    assert not _timed(_noisy(1.0, 200)).hopeless(wide, 0.25)


@pytest.mark.parametrize("kinds", [False, True], ids=["one-kind", "two-kinds"])
def test_the_sequential_rule_is_wrong_at_most_at_its_designed_rate(request, monkeypatch, kinds):
    """At the worst case (pair ratios whose median is the bar itself, so either verdict is
    wrong) each side's verdict comes at most VERDICT_ALPHA / 2 of the time, over every
    look of a measurement. Simulated with a large alpha, so that a rule spending it wrongly
    (a look tested twice, more looks than counted, a kind's bound not counted) shows."""
    import math
    import random

    import judge.measurement as measurement

    monkeypatch.setattr(measurement, "VERDICT_ALPHA", 0.2)
    measurement.looks.cache_clear()
    request.addfinalizer(measurement.looks.cache_clear)  # however the test ends
    rng = random.Random(7)
    workload = Workload(fn="f", make=lambda r: ([], {}), check=lambda got, exp: True,
                        min_pairs=5, max_pairs=60,
                        stratum=(lambda args, kwargs: "x") if kinds else None)
    bar = 0.5 * math.sqrt(1.3) if kinds else 0.5  # the geometric mean of the kinds' medians
    decided = {Verdict.ACCEPTED: 0, Verdict.TOO_SLOW: 0}
    trials = 1000
    for _ in range(trials):
        m = Measurement([], [], [])
        for _ in range(workload.max_pairs):
            kind = rng.choice("lr")
            m.ratios.append(0.5 * math.exp(rng.gauss(0, 0.3)) * (1.3 if kinds and kind == "r"
                                                                  else 1))
            if kinds:
                m.strata.append(kind)
            verdict = m.decision(workload, bar)
            if verdict is not None:
                decided[verdict] += 1
                break
    assert all(count / trials <= 0.1 for count in decided.values()), decided


def test_sign_bounds_are_order_statistics_with_the_exact_binomial_tail():
    values = [float(v) for v in range(1, 21)]
    assert sign_bounds(values[:3], 0.01) == (0.0, float("inf"))  # 2**-3 > 0.01
    lo, hi = sign_bounds(values, 0.01)
    # P(Binomial(20, 1/2) <= 4) = 0.0059 <= 0.01 < P(<= 5) = 0.0207: the 5th from each end
    assert (lo, hi) == (5.0, 16.0)


LEAKS_INPUTS = """
def double(x):
    if x.numel() > 1000:  # only the speed check's inputs, which are hidden
        raise ValueError("inputs " + str(x[:8].tolist()))
    return x * 2
"""

LEAKS_IN_THE_TYPE = """
def double(x):
    if x.numel() > 1000:
        raise type("In" + "_".join(map(str, x[:8].tolist())), (Exception,), {})()
    return x * 2
"""


@pytest.mark.parametrize("code", [LEAKS_INPUTS, LEAKS_IN_THE_TYPE], ids=["message", "type"])
def test_an_error_in_the_speed_check_does_not_show_its_hidden_inputs(problem, launcher, code):
    report = judge(problem, code, launcher)
    assert report.verdict is Verdict.RUNTIME_ERROR
    learner = report.for_learner("en")
    assert "during the speed test: raised" in learner["message"]
    assert "line 4 of your file" in learner["message"]
    full = report.to_json("en")
    inputs = re.search(r"\d+[, _]+\d+[, _]+\d+", full["details"]["en"])
    assert inputs  # admins see the whole exception, hidden inputs included ...
    assert not re.search(r"\d+[, _]+\d+[, _]+\d+", str(learner))  # ... learners never do
    assert "details" not in learner


# Lines 2-9 hold code; the chosen line is one of them: a line number "in the file" that
# still carries the hidden input, unless only frames of the file's own code count.
LEAKS_IN_THE_LINE = """
def double(x):
    if x.numel() > 1000:
        line = [3, 4, 6, 7, 8, 9][int(x[0]) % 6]
        exec(compile("\\n" * (line - 1) + "raise ValueError()", __file__, "exec"))
    return x * 2
y = 1
z = 2
w = 3
"""


def test_a_line_number_the_submission_chose_is_not_shown(problem, launcher):
    report = judge(problem, LEAKS_IN_THE_LINE, launcher)
    assert report.verdict is Verdict.RUNTIME_ERROR
    # The frame of the file itself: the exec on line 5, whatever the input.
    assert "(line 5 of your file)" in report.for_learner("en")["message"]


@pytest.mark.parametrize(("line", "shown"), [(1, 1), (2, 2), (3, None), (4, None), (5, 5),
                                             (0, None), (6, None), (True, None)])
def test_a_line_is_shown_only_where_the_file_holds_code(line, shown):
    code = "import torch\ndef f(x):\n\n    # a comment\n    return x\n"
    assert SubmissionError({"type": "ValueError", "line": line}).line_in(code) == shown


def test_a_broken_reference_shows_learners_no_reference_code(make_problem, launcher):
    problem = make_problem(reference="def double(x):\n    raise RuntimeError('secret')\n")
    report = grade(problem, FAST, launcher, Options(seed=1))
    assert report.verdict is Verdict.INTERNAL_ERROR
    learner = str(report.for_learner("en"))
    assert "not your code's fault" in learner and "secret" not in learner
    assert "secret" in str(report.to_json("en"))  # the admins' details


STALLS_ONCE = """
import os
import time

_calls = 0

def double(x):
    global _calls
    if x.numel() > 1000:
        _calls += 1
        if _calls == 6 and not os.path.exists("stalled"):  # the job folder outlives runners
            open("stalled", "w").close()
            time.sleep(2.5)  # a machine stall: longer than a timed call may take
    return x * 2
"""

STALLS_EVERY_RUNNER = STALLS_ONCE.replace(' and not os.path.exists("stalled")', "")


def test_one_stalled_call_is_measured_again_not_too_slow(make_problem, launcher):
    """A loaded machine can stall one call past the per-call limit: a submission whose
    other calls ran fast enough is measured on in a fresh runner. (The bar is low here:
    these sub-millisecond calls on a loaded CI machine read 0.22-0.47 against the
    reference's own code once, below the usual 0.4, and a stall after calls below the bar
    is final, as it should be.)"""
    toml = THROUGHPUT_TOML.format(slug="double-it", number=7, wall=5.0, memory=2048)
    problem = make_problem(toml=toml.replace("min_ratio = 0.4", "min_ratio = 0.05"),
                           tests=TESTS + WORKLOAD)
    report = judge(problem, STALLS_ONCE, launcher)
    assert report.verdict is Verdict.ACCEPTED, (report.message.en, report.throughput)


def test_a_second_cut_call_is_too_slow(problem, launcher):
    report = judge(problem, STALLS_EVERY_RUNNER, launcher)
    assert report.verdict is Verdict.TOO_SLOW, (report.message.en, report.throughput)
    assert "one timed call took over 2.0 s" in report.message.en


NEVER_RETURNS = """
import time

def double(x):
    if x.numel() > 1000:  # the speed check's inputs only
        time.sleep(600)
    return x * 2
"""


def test_a_first_timed_call_that_never_returns_costs_seconds_not_the_budget(problem, launcher):
    """Before any pair the reference goes first, and its call sets the submission's limit
    (at least 2 s): not the budget (8 s here, 30 s for some problems), which a first call
    that never returned used to wait out."""
    report = judge(problem, NEVER_RETURNS, launcher)
    assert report.verdict is Verdict.TOO_SLOW, (report.message.en, report.throughput)
    assert "one timed call took over 2.0 s" in report.message.en  # 8.0 s before
    assert "the reference takes about 0 ms" not in report.message.en


WORKS_WHILE_STAGED = SLOW + """
# The cheat: do the work while the call is staged (untimed), answer RUN from a cache.
import sys as _sys

_R = next(m.Runner for m in list(_sys.modules.values())  # __main__ or sandbox.runner
          if hasattr(getattr(m, "Runner", None), "stage"))
_orig_stage = _R.stage


def _stage(self, body):
    value = double(*list(body.get("args") or [])) if body.get("target") == "sub" else None
    _orig_stage(self, body)
    if value is not None and body.get("id") in self.staged:
        self.staged[body.get("id")] = (lambda: value, [], {})


_R.stage = _stage
"""


def test_work_done_while_the_inputs_are_staged_is_charged(problem, launcher):
    report = judge(problem, WORKS_WHILE_STAGED, launcher)
    assert report.verdict is Verdict.TOO_SLOW, (report.message.en, report.throughput)


def test_a_call_whose_work_moved_into_staging_reads_the_ratio_it_would_have_had():
    honest = Pair(None, {}, {"sub": 0.020, "ref": 0.010}, {"sub": 0.005, "ref": 0.005},
                  {"sub": False, "ref": False})
    moved = Pair(None, {}, {"sub": 0.0001, "ref": 0.010}, {"sub": 0.0249, "ref": 0.005},
                 {"sub": False, "ref": False})
    m = Measurement([], [], [])
    m.add(honest)
    m.add(moved)
    assert m.ratios[0] == pytest.approx(0.5)
    # charged all but the tolerance: 15 % of the reference's staging and half a millisecond
    assert m.ratios[1] == pytest.approx(0.010 / (0.0001 + 0.0249 - 0.005 * 1.15 - 0.0005))
    assert m.ratios[1] < 0.7
    assert stage_charge(0.005, 0.005) == 0.0  # honest staging is not charged
    # (judged for real, in the sandbox: tests/attacks/submissions/work_in_patched_stage.py)


def test_on_a_loaded_machine_work_moved_into_staging_is_charged_at_the_wall_clock_rate():
    """The timed calls wait for a busy core (wall time 4x their CPU time here), staging's
    CPU time does not: the charge is scaled by the reference's wall/CPU rate, so moving
    work into staging gains nothing on a loaded machine either."""
    def pair(sub_s, sub_stage, load):
        return Pair(None, {}, {"sub": sub_s, "ref": 0.040}, {"sub": sub_stage, "ref": 0.005},
                    {"sub": False, "ref": False}, run_cpu={"sub": None, "ref": 0.040 / load})

    quiet, loaded = Measurement([], [], []), Measurement([], [], [])
    for _ in range(3):
        quiet.add(pair(0.040, 0.005, 1.0))
        loaded.add(pair(0.040, 0.005, 4.0))
    quiet.add(pair(0.0001, 0.015, 1.0))  # the work (10 ms of CPU) moved into staging
    loaded.add(pair(0.0001, 0.015, 4.0))  # the same CPU, which timed would take 40 ms
    charge = 0.015 - 0.005 * 1.15 - 0.0005
    assert quiet.load_factor() == 1.0 and loaded.load_factor() == pytest.approx(4.0)
    assert quiet.ratios[-1] == pytest.approx(0.040 / (0.0001 + charge))
    assert loaded.ratios[-1] == pytest.approx(0.040 / (0.0001 + 4 * charge))
    assert loaded.ratios[:3] == quiet.ratios[:3] == [1.0] * 3  # honest calls: no charge
    assert Measurement([], [], []).load_factor() == 1.0  # not known: CPU time as it is


def test_staging_timed_by_the_wall_clock_is_charged_as_one_median():
    """Without a cgroup counting the runner's CPU, staging waits for a busy machine by
    several times a short call: one median over all calls is charged, not each call."""
    pairs = [Pair(None, {}, {"sub": 0.010, "ref": 0.010},
                  {"sub": 0.005 + (0.050 if i % 4 == 0 else 0.0), "ref": 0.005},
                  {"sub": False, "ref": False}, staging_cpu=False) for i in range(8)]
    m = Measurement([], [], [])
    for pair in pairs:
        m.add(pair)
    assert m.wall_staging and m.ratios == [pytest.approx(1.0)] * 8


SPIN_OR_NAP = FAST + """
import time

def spin(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass
    return True

def nap(seconds):
    time.sleep(seconds)
    return True
"""


def test_a_runner_without_cgroups_has_its_staging_read_in_cpu_time(launcher, tmp_path):
    """The learner's own machine (the plain launcher, no cgroups) charges staging by the
    runner's CPU clock as the sandbox does by its cgroup's: on the wall clock, which waits
    for whatever else the machine runs, a correct submission's staging of a sub-millisecond
    call came out milliseconds later than the reference's often enough to read as work
    moved into staging, and a correct solution was judged too slow (0.23x of a 0.4x bar).
    The runner's clock counts what it works, not what it waits, and stops with it."""
    from tests.conftest import double_it_sessions

    with double_it_sessions(launcher, tmp_path, SPIN_OR_NAP) as sessions:
        sub = sessions.get("sub")

        def cpu_s(fn: str, seconds: float) -> float:
            before = sub.process.cpu_time_ns()
            assert sub.call("sub", fn, [seconds], {}).value is True
            return (sub.process.cpu_time_ns() - before) / 1e9

        assert cpu_s("spin", 0.2) >= 0.2
        assert cpu_s("nap", 0.3) < 0.1
        sub.timed_run("sub", "nap", [0.0], {}, 5.0)
        assert sub.last_stage_cpu_s is not None and 0 <= sub.last_stage_cpu_s < 0.1
        process = sub.process
    process.wait(5.0)
    assert process.cpu_time_ns() is None  # never a clock of whatever reuses its pid


def test_pairs_in_which_the_idle_side_ran_are_thrown_away_and_too_many_are_too_slow(
        problem, launcher, monkeypatch):
    """A window in which the side not being timed used CPU is not a valid pair; a
    submission that keeps causing that is too slow, and the message says why."""
    import contextlib

    import judge.throughput as tp

    @contextlib.contextmanager
    def ran_anyway(session, away_from=None):
        # the submission's side always "ran" while the reference was timed
        yield tp.Window(stopped=False, ran_s=0.01 if session.job.dir.name == "sub" else 0.0)

    monkeypatch.setattr(tp, "paused", ran_anyway)
    report = judge(problem, FAST, launcher)
    assert report.verdict is Verdict.TOO_SLOW, report.message.en
    assert "kept running while the reference was being timed" in report.message.en
    (entry,) = report.throughput
    assert entry.disturbed == tp.DISTURBED_LIMIT and entry.pairs == 0
    assert entry.to_json()["disturbed"] == tp.DISTURBED_LIMIT


FOLDER_WORKLOAD = '''
from judge.testing import workload
from judge.throughput import Workload

@workload
def big(device):
    def make(rng):
        return [torch.randint(0, 100, (20_000,), generator=rng)], {}

    def check(got, exp, folders):
        # the host folders of the two runners' jobs, where a timed call's files would be
        if not (folders["sub"].is_dir() and folders["ref"].is_dir()
                and folders["sub"] != folders["ref"]):
            return False
        return torch.equal(got, exp)

    return Workload(fn="double", make=make, check=check, check_folders=True,
                    min_pairs=5, max_pairs=12)
'''


def test_a_check_can_look_at_the_runners_folders(make_problem, launcher):
    toml = THROUGHPUT_TOML.format(slug="double-it", number=7, wall=5.0, memory=2048)
    problem = make_problem(toml=toml, tests=TESTS + FOLDER_WORKLOAD)
    report = judge(problem, FAST, launcher)
    assert report.verdict is Verdict.ACCEPTED, (report.message.en, report.detail.en)


@pytest.mark.parametrize("speed", ["verdict", "ranking"])
@pytest.mark.parametrize(("first", "second", "verdict", "rounds"), [
    (0.36, 0.45, Verdict.ACCEPTED, 2),  # just under the bar (0.4): measured again, better
    (0.36, 0.35, Verdict.TOO_SLOW, 2),  # measured again, still under
    (0.2, None, Verdict.TOO_SLOW, 1),  # clearly under: not measured again
    (0.9, None, Verdict.ACCEPTED, 1),
])
def test_a_borderline_ratio_is_measured_again_in_either_mode(problem, launcher, monkeypatch,
                                                             speed, first, second, verdict,
                                                             rounds):
    import judge.throughput as tp

    script = [r for r in (first, second) if r is not None]
    modes = []

    def measure(workload, spec, sessions, rng, budget_s, mode="verdict", beat=None):
        modes.append(mode)
        return _pairs([script.pop(0)] * 20)

    monkeypatch.setattr(tp, "measure", measure)
    report = grade(problem, FAST, launcher, Options(seed=1, speed=speed))
    (result,) = report.throughput
    assert (result.verdict, result.rounds, report.verdict) == (verdict, rounds, verdict)
    assert modes == [speed] * rounds and not script
    assert result.refined is (speed == "ranking")


def test_speed_checks_alone_run_no_correctness_case(problem, launcher):
    """Options(correctness=False) (the stability bench's --checks-only): no case is run,
    the speed checks are, and a slow file is still too slow."""
    report = grade(problem, FAST, launcher, Options(seed=2, correctness=False))
    assert report.verdict is Verdict.ACCEPTED and report.tests == []
    assert [tp.name for tp in report.throughput] == ["big"]
    slow = grade(problem, SLOW, launcher, Options(seed=2, correctness=False))
    assert slow.verdict is Verdict.TOO_SLOW and slow.tests == []


def test_a_shard_on_a_busy_host_judges_a_file_without_a_speed_check_first(monkeypatch, tmp_path):
    import judge.quiet as quiet
    from judge.check import in_turn

    monkeypatch.setattr(quiet, "_lock_path", lambda: tmp_path / "speed.lock")
    assert not quiet.measuring_now()
    with quiet.measuring_alone():  # another worker of this machine measures
        assert quiet.measuring_now()
    assert not quiet.measuring_now()

    busy = [True, True, False]  # the host's lock, as each pick finds it
    ran: list[str] = []

    def run(job):
        ran.append(job)
        return None

    timed = {"accepted/a.py", "too_slow/b.py"}
    in_turn(["accepted/a.py", "too_slow/b.py", "wrong_answer/c.py", "wrong_answer/d.py"],
            run, lambda job: job in timed, lambda: busy[min(len(ran), 2)])
    # busy: c goes before the speed-checked files; busy again: d; then a and b in order
    assert ran == ["wrong_answer/c.py", "wrong_answer/d.py", "accepted/a.py", "too_slow/b.py"]
    ran.clear()
    in_turn(["accepted/a.py", "too_slow/b.py"], run, lambda job: True, lambda: True)
    assert ran == ["accepted/a.py", "too_slow/b.py"]  # all held back: the order stands


def test_a_ranking_measurement_times_its_pairs_in_generations_of_runners(
        make_problem, launcher, monkeypatch):
    """One process's luck holds for all its calls, so the leaderboard's ratio is timed in
    GENERATIONS generations of new runners at least, each a new process on both sides;
    a live verdict is not (it need not be precise)."""
    import judge.grader as grader
    from judge.measurement import GENERATION_PAIRS, GENERATIONS

    toml = THROUGHPUT_TOML.format(slug="double-it", number=7, wall=5.0, memory=2048)
    problem = make_problem(toml=toml, tests=TESTS + WORKLOAD.replace("max_pairs=12",
                                                                     "max_pairs=80"))
    pids: list[tuple[int, int]] = []
    real = grader.Sessions.refresh

    def refresh(self) -> bool:
        pids.append((self.current["sub"].process.pid, self.current["ref"].process.pid))
        done = real(self)
        pids.append((self.current["sub"].process.pid, self.current["ref"].process.pid))
        return done

    monkeypatch.setattr(grader.Sessions, "refresh", refresh)
    report = grade(problem, FAST, launcher, Options(seed=1, speed="ranking", correctness=False))
    (tp,) = report.throughput
    assert report.verdict is Verdict.ACCEPTED and tp.refined
    generations = set(pids)
    assert len(generations) >= GENERATIONS and len(pids) >= 2 * (GENERATIONS - 1)
    assert len({sub for sub, _ in generations}) == len({ref for _, ref in generations}) \
        == len(generations)  # both sides new each time
    assert tp.pairs >= (GENERATIONS - 1) * GENERATION_PAIRS
    pids.clear()
    verdict = grade(problem, FAST, launcher, Options(seed=1, correctness=False))
    assert verdict.verdict is Verdict.ACCEPTED and pids == []


def test_a_ranking_times_more_pairs_than_a_verdict_may(make_problem, launcher):
    """A ranking (a background job) times at least RANKING_MIN_PAIRS pairs however low the
    workload's max_pairs (sized for a live verdict): with max_pairs 12, a verdict times
    12 pairs at most and a ranking exactly RANKING_MIN_PAIRS (its floor and, with
    RANKING_SCALE times 12 below it, its cap)."""
    from judge.measurement import RANKING_MIN_PAIRS

    toml = THROUGHPUT_TOML.format(slug="double-it", number=7, wall=5.0, memory=2048)
    # a budget no loaded CI machine runs out of before 120 pairs (3 x 8 s did, at 100)
    problem = make_problem(toml=toml.replace("budget_s = 8.0", "budget_s = 60.0"),
                           tests=TESTS + WORKLOAD)
    (ranked,) = grade(problem, FAST, launcher,
                      Options(seed=1, speed="ranking", correctness=False)).throughput
    (told,) = grade(problem, FAST, launcher, Options(seed=1, correctness=False)).throughput
    assert ranked.refined and ranked.pairs == RANKING_MIN_PAIRS
    assert told.pairs <= 12


UNEVEN = """
import random
import time

def double(x):
    time.sleep(random.uniform(0.0005, 0.0015))  # each call 0.5-1.5 ms: a wide spread
    return x * 2
"""


def test_a_ranking_whose_interval_stays_wide_goes_on_to_its_cap(make_problem, launcher):
    """A ranking that caught a slow minute of the machine has pair ratios too spread to
    narrow to REL_WIDTH; it goes on to RANKING_SCALE times the workload's max_pairs (more
    than the twice max_pairs it had when one such minute could still move a file's ratio
    by 10 %), never stopping at a rough figure before."""
    from judge.measurement import RANKING_SCALE, ranking_cap

    toml = THROUGHPUT_TOML.format(slug="double-it", number=7, wall=5.0, memory=2048)
    # a low bar (the ratio is far below 0.4, and must not read as "clearly too slow") and a
    # budget no loaded CI machine runs out of
    problem = make_problem(toml=toml.replace("budget_s = 8.0", "budget_s = 60.0")
                           .replace("min_ratio = 0.4", "min_ratio = 0.0001"),
                           tests=TESTS + WORKLOAD.replace("max_pairs=12", "max_pairs=40"))
    (ranked,) = grade(problem, UNEVEN, launcher,
                      Options(seed=1, speed="ranking", correctness=False)).throughput
    assert ranked.refined and ranked.verdict is Verdict.ACCEPTED
    assert ranked.pairs == RANKING_SCALE * 40 == ranking_cap(
        Workload(fn="double", make=None, check=None, max_pairs=40)) > 2 * 40


def test_runners_that_cannot_start_again_keep_the_old_ones(make_problem, launcher):
    """A submission that will not import a second time (it left a mark in its folder) ends
    the generations, not the measurement."""
    once = ("import os\nif os.path.exists('mark'):\n    raise ImportError('once only')\n"
            "open('mark', 'w').close()\n\ndef double(x):\n    return x * 2\n")
    toml = THROUGHPUT_TOML.format(slug="double-it", number=7, wall=5.0, memory=2048)
    problem = make_problem(toml=toml, tests=TESTS + WORKLOAD.replace("max_pairs=12",
                                                                     "max_pairs=80"))
    report = grade(problem, once, launcher, Options(seed=1, speed="ranking", correctness=False))
    (tp,) = report.throughput
    assert report.verdict is Verdict.ACCEPTED and tp.refined and tp.ratio > 0.4, report.message
