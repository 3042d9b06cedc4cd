"""How precise a ranking would be under other stopping rules, replayed on long recordings.

    python bench/ranking_rules.py PROBLEM --file LABEL [-n 20] [--pairs 800]
                                  [--save FILE] [--load FILE] [--sides] [--no-sandbox]

A ranking (judge.measurement, speed mode ``"ranking"``) stops once its ratio's interval is
narrow, or at its cap of pairs (``ranking_cap``). Whether another cap or a fixed number of
pairs would spread a file's ratio less over repeated judgings is slow to find out by
judging it twenty times per rule, and the machine changes between the runs. This bench
judges the file N times (``--file``: ``reference`` or a folder/name label, as
bench/throughput_stability.py prints them; speed checks only) with the stop lifted, each
measuring ``--pairs`` pairs of its first throughput check (new runner generations as a
ranking has them), and keeps every pair. Then it replays the ranking's own stopping rule
(``Measurement.settled`` on the pairs as they came, with its floors of pairs and
generations) under several caps, and fixed numbers of pairs, on the same recordings, and
prints per rule the ratio's max/min over the judgings, its range and the pairs used (min,
mean, max). Rules compared on one recording differ only by the rule.

``--save FILE`` keeps the recording (JSON); ``--load FILE`` replays one without judging.
Last, for comparison, another estimator on the same recordings: per kind of input, the
ratio of the two sides' 10th-percentile calls. ``--sides`` also prints each judging's
median timed call per side and their ratio.
Figures only, no asserts.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import judge.throughput as throughput
from bench.throughput_stability import files_of
from judge.grader import Options, grade
from judge.isolation import plain_launcher, sandbox_launcher
from judge.measurement import (
    GENERATION_PAIRS,
    GENERATIONS,
    RANKING_MIN_PAIRS,
    Measurement,
    Pair,
    ranking_cap,
)
from judge.package import find, load_all

PAIR_FIELDS = ("kind", "times", "stages", "disturbed", "staging_cpu", "run_cpu")


def record(problem, code: str, n: int, pairs: int, launcher) -> dict:
    """Judge ``code`` n times, each measuring ``pairs`` kept pairs of the first check."""
    spec = problem.meta.throughput[0]
    judgings: list[list[dict]] = []
    recording = [False]  # True while grade() runs: replays below add pairs too
    real_measure, real_settled, real_add = throughput.measure, Measurement.settled, \
        Measurement.add
    real_cap, real_budget = throughput.pair_cap, throughput.budget

    def add(self, pair: Pair) -> None:
        real_add(self, pair)
        if recording[0]:
            judgings[-1].append({f: getattr(pair, f) for f in PAIR_FIELDS})

    def settled(self, workload, min_ratio, mode="verdict"):
        return False if mode == "ranking" else real_settled(self, workload, min_ratio, mode)

    def measure(workload, spec_, *a, **kw):
        if spec_.name != spec.name:
            raise RuntimeError("only the first throughput check is recorded")
        return real_measure(workload, spec_, *a, **kw)

    Measurement.add, Measurement.settled = add, settled
    throughput.measure = measure
    throughput.pair_cap = lambda workload, mode: pairs
    throughput.budget = lambda budget_s, mode: 1000 * budget_s
    try:
        for i in range(n):
            judgings.append([])
            started = time.monotonic()
            recording[0] = True
            try:
                grade(problem, code, launcher, Options(seed=1000 + i, speed="ranking",
                                                       correctness=False))
            finally:
                recording[0] = False
            kept = judgings[-1]
            print(f"  judging {i + 1}/{n}: {len(kept)} pairs, ratio "
                  f"{_replay(kept, len(kept)).ratio:.3f}, "
                  f"{time.monotonic() - started:.1f} s", flush=True)
    finally:
        Measurement.add, Measurement.settled = real_add, real_settled
        throughput.measure, throughput.pair_cap, throughput.budget = \
            real_measure, real_cap, real_budget
    return {"problem": problem.slug, "check": spec.name, "min_ratio": spec.min_ratio,
            "judgings": judgings}


def _pair(recorded: dict) -> Pair:
    """A recorded pair (PAIR_FIELDS) as the Pair it was; its results are not kept."""
    return Pair(results={}, **{f: recorded[f] for f in PAIR_FIELDS})


def _replay(pairs: list[dict], n: int) -> Measurement:
    m = Measurement([], [], [])
    for p in pairs[:n]:
        m.add(_pair(p))
    return m


def stop_at(pairs: list[dict], workload, min_ratio: float, cap: int) -> int:
    """Where the ranking's rule stops on these pairs under ``cap``: the first count at
    which the measurement is settled and has pairs of GENERATIONS generations."""
    m = Measurement([], [], [])
    for i, p in enumerate(pairs[:cap], start=1):
        m.add(_pair(p))
        if i > (GENERATIONS - 1) * GENERATION_PAIRS and m.settled(workload, min_ratio,
                                                                   "ranking"):
            return i
    return min(cap, len(pairs))


def sides(judgings: list[list[dict]]) -> None:
    """Per judging: each side's median timed call (wall clock) and the ratio of the two.
    Where the machine's state changes between judgings, both sides slow down, seldom by
    the same factor: the ratio moves with it."""
    print(f"  {'judging':<8} {'sub ms':>7} {'ref ms':>7} {'ratio':>6}")
    for i, pairs in enumerate(judgings, start=1):
        wall = {s: statistics.median(p["times"][s] for p in pairs) for s in ("sub", "ref")}
        print(f"  {i:<8} {wall['sub'] * 1e3:>7.2f} {wall['ref'] * 1e3:>7.2f} "
              f"{wall['ref'] / wall['sub']:>6.3f}")


def report(rec: dict, problem, per_judging: bool = False) -> None:
    spec = next(s for s in problem.meta.throughput if s.name == rec["check"])
    workload = problem.tests.workloads[spec.workload].fn(spec.device)
    judgings = [j for j in rec["judgings"] if j]
    longest = min(len(j) for j in judgings)
    today = ranking_cap(workload)
    caps = sorted({today, *(c for c in (today // 2, 2 * today, 3 * today)
                            if RANKING_MIN_PAIRS <= c <= longest)})
    rules = [(f"rule, cap {c}" + (" (today)" if c == today else ""),
              lambda j, c=c: stop_at(j, workload, rec["min_ratio"], c)) for c in caps]
    rules += [(f"fixed {k} pairs", lambda j, k=k: k)
              for k in sorted({today, longest // 2, longest}) if k <= longest]
    print(f"\n{rec['problem']} {rec['check']}: {len(judgings)} judgings of {longest}+ pairs")
    print(f"  {'rule':<24} {'max/min':>8}  {'ratios':<13}  pairs (min / mean / max)")
    for name, rule in rules:
        ns = [rule(j) for j in judgings]
        ratios = [_replay(j, k).ratio for j, k in zip(judgings, ns, strict=True)]
        lo, hi = min(ratios), max(ratios)
        print(f"  {name:<24} {hi / lo if lo > 0 else float('inf'):>8.3f}  "
              f"{lo:.3f}-{hi:.3f}  {min(ns)} / {statistics.mean(ns):.0f} / {max(ns)}")
    for k in sorted({today, longest}):
        ratios = [low_quantile_ratio(j[:k]) for j in judgings]
        print(f"  {f'10th pct. per side, {k}':<24} {max(ratios) / min(ratios):>8.3f}  "
              f"{min(ratios):.3f}-{max(ratios):.3f}  {k} / {k} / {k}")
    if per_judging:
        sides(judgings)


def low_quantile_ratio(pairs: list[dict], q: float = 0.1) -> float:
    """Another estimator, for comparison: per kind of input, the reference's ``q``
    quantile call over the submission's (each side's fastest calls, where the machine's
    interference is least), combined by geometric mean."""
    by: dict[str | None, dict[str, list[float]]] = {}
    for p in pairs:
        for side in ("sub", "ref"):
            by.setdefault(p["kind"], {"sub": [], "ref": []})[side].append(p["times"][side])
    ratios = []
    for sides_ in by.values():
        low = {s: sorted(v)[int(q * (len(v) - 1))] for s, v in sides_.items()}
        ratios.append(low["ref"] / low["sub"])
    return statistics.geometric_mean(ratios)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("problem")
    ap.add_argument("--file", default="reference", help="reference or e.g. accepted/x.py")
    ap.add_argument("-n", type=int, default=20, help="judgings")
    ap.add_argument("--pairs", type=int, default=800, help="pairs each judging measures")
    ap.add_argument("--save", type=Path, help="write the recording here (JSON)")
    ap.add_argument("--load", type=Path, help="replay this recording instead of judging")
    ap.add_argument("--no-sandbox", action="store_true")
    ap.add_argument("--sides", action="store_true",
                    help="also each judging's median timed call per side")
    args = ap.parse_args()
    problem = find(load_all(), args.problem)
    if not problem.meta.throughput:
        sys.exit(f"{problem.slug} has no throughput check")
    if args.load:
        try:
            rec = json.loads(args.load.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            sys.exit(f"cannot read the recording {args.load}: {e}")
        if rec.get("problem") != problem.slug:
            sys.exit(f"{args.load} records {rec.get('problem')!r}, not {problem.slug}")
        report(rec, problem, args.sides)
        return 0
    files = dict(files_of(problem))
    if args.file not in files:
        sys.exit(f"no file {args.file!r} in {problem.slug}; one of: {', '.join(files)}")
    launcher = plain_launcher() if args.no_sandbox else sandbox_launcher()
    print(f"isolation: {launcher.isolation}; {problem.slug} {args.file}, {args.n} judgings "
          f"of {args.pairs} pairs", flush=True)
    try:
        rec = record(problem, files[args.file], args.n, args.pairs, launcher)
    finally:
        launcher.close()
    if args.save:
        args.save.write_text(json.dumps(rec), encoding="utf-8")
    report(rec, problem, args.sides)
    return 0


if __name__ == "__main__":
    sys.exit(main())
