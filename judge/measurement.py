"""What a speed check measures and how its figures are read: the :class:`Workload` a
problem's tests.py declares, one timed :class:`Pair`, and the :class:`Measurement` of a
judging (pair ratios, the staging charge, the ratio per kind of input, its confidence
interval, and when it is known well enough). No clock and no runner here:
judge/throughput.py times the pairs.

A measurement stops in one of two modes (``SPEED_MODES``):

* ``"verdict"`` (a live judging): a sequential test against the bar. At the looks
  (:func:`looks`: ``min_pairs``, then every ``LOOK_GROWTH`` times as many pairs), an exact
  sign-test bound on each kind's median (:func:`sign_bounds`) is taken; once the geometric
  mean of the lower bounds is above the bar the check is accepted, once that of the upper
  bounds is below it, too slow. Each bound is wrong with probability at most
  ``VERDICT_ALPHA / (2 * looks * kinds)``, so whatever the distribution of the pair ratios,
  a measurement whose true ratio (the kinds' population medians) lies on one side of the
  bar ends on the other side by this rule with probability at most ``VERDICT_ALPHA / 2``
  (union bound over the looks and the kinds). One undecided at ``max_pairs`` or the budget
  is read by its median, as before; so is a *hopeless* one (:meth:`Measurement.hopeless`):
  once the submission's timed calls alone have taken ``HOPELESS`` times what the first
  look's pairs would take at the bar, which only a submission far slower than the bar
  does (one at the bar or above gets there after about four times the first look's pairs,
  when the looks have mostly decided): a slow loop is told in seconds, not after the
  whole first look of slow calls.
* ``"ranking"`` (the precise ratio for the leaderboard): until the ratio's 95 % interval is
  within ``REL_WIDTH`` of it over at least ``RANKING_MIN_PAIRS`` pairs (up to
  ``RANKING_SCALE`` times the workload's ``max_pairs``, in ``RANKING_BUDGET_SCALE`` times
  the check's budget: a background job), or clearly below the bar, over pairs timed in at least
  ``GENERATIONS`` generations of runner processes, new ones every ``GENERATION_PAIRS``
  pairs (judge/throughput.py). One process's luck, such as where its memory landed, holds
  for all its calls: pairs of one process agree with each other, and their interval
  misses it; it was seen in one judging of twenty to forty, off by up to 14 %.
"""

from __future__ import annotations

import collections
import functools
import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from judge.i18n import T
from judge.verdict import Verdict

BORDERLINE = 0.85  # a median within this factor of the bar is measured again
REL_WIDTH = 0.045  # ranking: stop once the median's confidence interval is this narrow
GENERATION_PAIRS = 10  # ranking: new runner processes after this many pairs kept
GENERATIONS = 4  # ranking: never settled before pairs of this many generations
# Ranking: never settled before this many pairs (ranking_cap is never lower). The order
# statistics' interval of a few dozen noisy pairs is itself noisy: stopping as soon as it
# looked narrow let grad-accumulation's epochs stop at 30 pairs by luck, and 20 judgings
# of one file spread over 1.127 (max/min); at 80 pairs each, 1.045. At 60-80, token-
# accumulation's reference still spread over 1.104.
RANKING_MIN_PAIRS = 120
# Ranking (a background job, stopped for live work): this many times the workload's
# max_pairs (and RANKING_MIN_PAIRS at least) and the check's budget_s, which are sized for
# a live verdict. resumable-training's 30 pairs, doubled, still spread its reference over
# 1.102 in 20 judgings. Only a judging whose interval stays wide goes past twice max_pairs:
# one that caught a slow minute of the machine, where a ratio far from 1 moves towards 1
# (padding-collate's numpy_full_from_numpy, 1.6x the reference: 20 judgings' max/min,
# replayed by bench/ranking_rules.py on the same recordings, 1.089 with the cap at twice
# max_pairs and 1.076 at four times, 259 and 271 pairs a judging on average; another 20,
# 1.091 both). What is left is the machine: its ratio moved by 1.10 over ten minutes even
# at 800 pairs a judging.
RANKING_SCALE = 4
RANKING_BUDGET_SCALE = 3
# Verdict mode: the chance of a wrong verdict for a submission whose true ratio is on the
# other side of the bar (at most, at the bar itself; it falls off exponentially with the
# distance), per measurement and side: VERDICT_ALPHA / 2.
VERDICT_ALPHA = 0.001
HOPELESS = 4.0  # verdict mode: see Measurement.hopeless
LOOK_GROWTH = 1.5  # verdict mode looks at its first look (see looks), then 1.5x as many each time
SPEED_MODES = ("verdict", "ranking")
# A call's staging (CPU time of the runner's cgroup, else wall time) may take this much
# longer than the reference's staging of the same inputs, uncharged.
STAGE_SLACK = 0.15
STAGE_ABS_S = 0.0005
# A charge in CPU time is paid in wall time: times the reference's wall/CPU time of its
# timed calls (a loaded machine), at most this.
MAX_LOAD_FACTOR = 10.0


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
    disturbed: int = 0  # pairs thrown away: the submission's side ran while not timed
    wall_staging: bool = False  # some staging was timed by the wall clock (see add)
    ref_run_cpu_s: list[float] = field(default_factory=list)  # CPU time of its timed calls

    def add(self, pair: Pair) -> None:
        self.sub_s.append(pair.times["sub"])
        self.ref_s.append(pair.times["ref"])
        run_cpu = (pair.run_cpu or {}).get("ref")
        if run_cpu is not None and run_cpu > 0:
            self.ref_run_cpu_s.append(pair.times["ref"] / run_cpu)
        self.stage_sub_s.append(pair.stages["sub"])
        self.stage_ref_s.append(pair.stages["ref"])
        if pair.kind is not None:
            self.strata.append(pair.kind)
        self.wall_staging = self.wall_staging or not pair.staging_cpu
        if self.wall_staging:
            # Staging on the wall clock (no cgroup counts the runner's CPU: a degraded
            # sandbox, development) waits for a busy machine, by several times a short
            # call: charged as one median over all calls, which a submission that moves
            # its work into staging on a minority of calls escapes. The sandbox counts CPU.
            ref_stage = statistics.median(self.stage_ref_s)
            extra = stage_charge(statistics.median(self.stage_sub_s), ref_stage)
            self.ratios = [r / max(s + extra, 1e-9) for r, s in zip(self.ref_s, self.sub_s,
                                                                    strict=True)]
            return
        load = self.load_factor()
        self.ratios = [r / max(s + load * stage_charge(ss, rs), 1e-9) for r, s, ss, rs in zip(
            self.ref_s, self.sub_s, self.stage_sub_s, self.stage_ref_s, strict=True)]

    def load_factor(self) -> float:
        """What a second of CPU took of the wall clock in the timed calls: the median of
        the reference's timed calls' wall time over their CPU time (its runner's cgroup),
        between 1 and ``MAX_LOAD_FACTOR``; 1 where it is not known. Staging is charged in
        CPU time, which does not wait for a busy machine, but the timed calls do: on a
        machine that gives the timing core a quarter of the time, work moved into staging
        would otherwise cost a quarter of what it costs timed."""
        if not self.ref_run_cpu_s:
            return 1.0
        return min(MAX_LOAD_FACTOR, max(1.0, statistics.median(self.ref_run_cpu_s)))

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

    def enough(self, workload: Workload) -> bool:
        """At least ``min_pairs`` pairs and, for a workload with kinds of input, two kinds
        of three pairs each: no measurement stops before."""
        groups = self.groups()
        return len(self.ratios) >= workload.min_pairs and (workload.stratum is None or (
            len(groups) >= 2 and min(len(g) for g in groups) >= 3))

    def settled(self, workload: Workload, min_ratio: float, mode: str = "verdict") -> bool:
        """Known well enough to stop measuring (see the module's docstring): in verdict
        mode once :meth:`decision` has one, in ranking mode once the ratio's interval is
        within ``REL_WIDTH`` (or clearly below the bar). Never before :meth:`enough`."""
        if mode not in SPEED_MODES:
            raise ValueError(f"speed mode must be one of {SPEED_MODES}, not {mode!r}")
        if not self.enough(workload):
            return False
        if mode == "verdict":
            return (self.decision(workload, min_ratio) is not None
                    or self.hopeless(workload, min_ratio))
        lo, hi = self.interval()
        if hi < min_ratio * BORDERLINE:
            return True
        return (len(self.ratios) >= RANKING_MIN_PAIRS
                and (hi - lo) / max(self.ratio, 1e-9) <= REL_WIDTH)

    def hopeless(self, workload: Workload, min_ratio: float) -> bool:
        """Verdict mode: the submission's timed calls have taken ``HOPELESS`` times what
        all the first look's pairs would take at the bar (the reference's median call
        over the bar, per pair). A submission whose calls take what the bar allows gets
        there after ``HOPELESS`` times the first look's pairs (and mostly never: the looks
        decide first); one a hundred times slower than the reference, after the minimum
        of pairs. Stopped so, a measurement is read by its median, like one whose budget
        is spent (judge/throughput.py)."""
        if not self.ref_s or not self.enough(workload):
            return False
        kinds = 2 if workload.stratum is not None else 1
        first = min(looks(math.ceil(workload.min_pairs / kinds),
                          math.ceil(workload.max_pairs / kinds), kinds)) * kinds
        at_bar = first * statistics.median(self.ref_s) / min_ratio
        return sum(self.sub_s) > HOPELESS * at_bar

    def decision(self, workload: Workload, min_ratio: float) -> Verdict | None:
        """The sequential verdict at this many pairs: ACCEPTED when the sign-test bounds
        put the ratio wholly above the bar, TOO_SLOW wholly below, None when undecided (or
        this is not one of the looks, or there are not :meth:`enough` pairs yet). The looks
        count the pairs of the kind of input that has fewest (:func:`looks`, per kind), and
        each is tested once: when the last pair brought that count to it."""
        groups = self.groups()
        if not groups or not self.enough(workload):
            return None
        kinds = 2 if workload.stratum is not None else 1
        points = looks(math.ceil(workload.min_pairs / kinds),
                       math.ceil(workload.max_pairs / kinds), kinds)
        smallest = min(len(g) for g in groups)
        if smallest not in points or (len(groups) > 1 and self.strata.count(self.strata[-1])
                                      != smallest):
            return None
        alpha = VERDICT_ALPHA / (2 * len(points) * max(kinds, len(groups)))
        ends = [sign_bounds(g, alpha) for g in groups]
        if _geometric_mean([lo for lo, _ in ends]) > min_ratio:
            return Verdict.ACCEPTED
        his = [hi for _, hi in ends]
        if math.isfinite(max(his)) and _geometric_mean(his) < min_ratio:
            return Verdict.TOO_SLOW
        return None

    def kinds(self) -> list[tuple[str | None, float, float]]:
        """Per kind of input (in the order first seen; one entry, kind None, for a workload
        without kinds): the submission's and the reference's median timed call, seconds."""
        strata = self.strata if len(self.strata) >= len(self.sub_s) else []
        if not strata:
            return [(None, statistics.median(self.sub_s), statistics.median(self.ref_s))] \
                if self.sub_s else []
        by: dict[str, tuple[list[float], list[float]]] = {}
        for kind, s, r in zip(strata, self.sub_s, self.ref_s, strict=False):
            subs, refs = by.setdefault(kind, ([], []))
            subs.append(s)
            refs.append(r)
        return [(k, statistics.median(s), statistics.median(r)) for k, (s, r) in by.items()]

    @property
    def spread(self) -> float:
        """Interquartile range of the pair ratios (each relative to its kind's median)."""
        relative = [r / m for g in self.groups() if (m := statistics.median(g)) for r in g]
        if len(relative) < 4:
            return 0.0
        q = statistics.quantiles(relative, n=4)
        return q[2] - q[0]


def pair_cap(workload: Workload, mode: str) -> int:
    """The most pairs a measurement in ``mode`` times."""
    return ranking_cap(workload) if mode == "ranking" else workload.max_pairs


def ranking_cap(workload: Workload) -> int:
    return max(RANKING_SCALE * workload.max_pairs, RANKING_MIN_PAIRS)


def budget(budget_s: float, mode: str) -> float:
    """The seconds a measurement in ``mode`` may take (a check's ``budget_s`` is sized for
    a live verdict; a ranking gets ``RANKING_BUDGET_SCALE`` times it)."""
    return RANKING_BUDGET_SCALE * budget_s if mode == "ranking" else budget_s


def _geometric_mean(values: list[float]) -> float:
    """0.0 for no values or any zero (a cut-short call)."""
    return statistics.geometric_mean(values) if values and min(values) > 0 else 0.0


@functools.lru_cache(maxsize=64)
def looks(min_pairs: int, max_pairs: int, groups: int = 1) -> frozenset[int]:
    """The pair counts (of each of ``groups`` kinds of input) at which verdict mode tests
    the bar. The first is the fewest pairs at which the sign test can decide at all (all
    of them on one side of the bar: ``2**-n`` within a bound's share of ``VERDICT_ALPHA``),
    and at least ``min_pairs``; then each ``LOOK_GROWTH`` times as many (rounded up), up
    to ``max_pairs``. A look before that first one could never stop, yet would take its
    share of alpha from the others; fewer looks keep each look's share large, so that a
    clear ratio stops early."""
    for count in range(1, 64):  # the number of looks, found by fixed point
        share = VERDICT_ALPHA / (2 * count * groups)
        first = max(min_pairs, math.ceil(math.log2(1 / share)), 1)
        points = [min(first, max_pairs)]
        while points[-1] < max_pairs:
            points.append(min(max_pairs, max(points[-1] + 1,
                                              math.ceil(points[-1] * LOOK_GROWTH))))
        if len(points) <= count:
            return frozenset(points)
    raise ValueError(f"no looks for {min_pairs}..{max_pairs} pairs")  # pragma: no cover


@functools.lru_cache(maxsize=4096)
def _sign_rank(n: int, alpha: float) -> int:
    """The largest k with P(Binomial(n, 1/2) <= k - 1) <= alpha (0: none)."""
    k, tail = 0, 0
    while k < n and (tail + math.comb(n, k)) / 2**n <= alpha:
        tail += math.comb(n, k)
        k += 1
    return k


def sign_bounds(values: list[float], alpha: float) -> tuple[float, float]:
    """Lower and upper confidence bounds for the median of the distribution the values
    were drawn from, each wrong with probability at most ``alpha`` (the sign test: exact,
    whatever the distribution). (0, inf) when there are too few values to say anything."""
    xs = sorted(values)
    k = _sign_rank(len(xs), alpha)
    if k == 0:
        return 0.0, math.inf
    return xs[k - 1], xs[len(xs) - k]


def median_interval(values: list[float], z: float = 1.96) -> tuple[float, float]:
    """A distribution-free confidence interval for the median (order statistics)."""
    xs = sorted(values)
    n = len(xs)
    half = z * math.sqrt(n) / 2
    lo = max(0, math.floor(n / 2 - half))
    hi = min(n - 1, math.ceil(n / 2 + half) - 1)
    return xs[lo], xs[hi]


@dataclass(frozen=True)
class Pair:
    """One timed pair: the same inputs, one timed call each."""

    kind: str | None
    results: dict[str, Any]
    times: dict[str, float]
    stages: dict[str, float]  # untimed staging of the inputs, per side
    # Per side timed: the other side's runner used CPU while it was being timed.
    disturbed: dict[str, bool]
    staging_cpu: bool = True  # ``stages`` is CPU time (the runners' cgroups), not wall time
    run_cpu: dict[str, float | None] | None = None  # per side: CPU time of the timed call


def stage_charge(sub_stage_s: float, ref_stage_s: float) -> float:
    """What a call's staging cost the submission beyond the reference's staging of the same
    inputs, charged to that call: work moved into staging is paid call by call, whichever
    calls it picks. The tolerance (``STAGE_SLACK`` of the reference's staging and
    ``STAGE_ABS_S``) keeps honest staging noise out of honest ratios."""
    return max(0.0, sub_stage_s - ref_stage_s * (1 + STAGE_SLACK) - STAGE_ABS_S)
