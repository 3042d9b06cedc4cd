"""Judge the same submissions repeatedly and print how stable the speed checks are.

For every problem with throughput checks, the reference (a solution at reference speed)
and every ``submissions/accepted`` and ``submissions/too_slow`` file are judged N times
with one warm launcher, the way a worker would:

* in speed mode ``verdict`` (a live judging's sequential decision against the bar): every
  file, N times. Target: every verdict is its folder's, every time. Its ratio is coarse by
  design (the measurement stops once the bar is decided): printed, not a target.
* in speed mode ``ranking`` (the leaderboard's precise ratio, a worker's rank job): the
  reference and the accepted files, N times. Target: the ratio's max/min <= 1.10.

``--speed both`` (the default) does both, ``verdict`` or ``ranking`` one of them. Printed
per file and check: the ratio's min / median / max, max/min, the pairs timed and the
verdicts; at the end, the files whose verdicts differ from their folder's and the ranking
ratios wider than 1.10. ``--checks-only`` skips the correctness cases (the files' speed
checks only: quicker, for files ``judge check`` already proved correct). Files marked
``# judge-check: needs cuda`` are skipped without a GPU.

    python bench/throughput_stability.py [PROBLEM ...] [-n 20] [--speed both|verdict|ranking]
                                         [--checks-only] [--no-sandbox] [--only TEXT] [--each]
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from judge.check import needs_cuda
from judge.grader import Options, grade
from judge.isolation import plain_launcher, sandbox_launcher
from judge.package import find, load_all


def files_of(problem):
    yield "reference", problem.read("reference.py")
    for verdict, path in problem.submissions():
        if verdict in ("accepted", "too_slow"):
            yield f"{verdict}/{path.name}", path.read_text(encoding="utf-8")


def judge_file(problem, label, code, launcher, args, speed, out) -> None:
    """Judge one file N times in one speed mode; add what missed its target to ``out``."""
    expected = "accepted" if label == "reference" else label.split("/")[0]
    ratios: dict[str, list[float]] = collections.defaultdict(list)
    pairs: dict[str, list[int]] = collections.defaultdict(list)
    verdicts: collections.Counter[str] = collections.Counter()
    started = time.monotonic()
    for i in range(args.n):
        report = grade(problem, code, launcher, Options(
            seed=1000 + i, speed=speed, correctness=not args.checks_only))
        verdicts[str(report.verdict)] += 1
        for tp in report.throughput:
            if tp.ratio is not None:
                ratios[tp.name].append(tp.ratio)
                pairs[tp.name].append(tp.pairs)
    took = (time.monotonic() - started) / args.n
    print(f"  {label:<44} {speed:<7} verdicts {dict(verdicts)}  ({took:.1f} s per judging)",
          flush=True)
    if speed == "verdict" and set(verdicts) != {expected}:
        out["wrong"].append(f"{problem.slug} {label}: {dict(verdicts)}")
    for name, values in ratios.items():
        lo, hi = min(values), max(values)
        spread = hi / lo if lo > 0 else float("inf")
        print(f"      {name:<20} ratio min {lo:.3f}  median {statistics.median(values):.3f}  "
              f"max {hi:.3f}  max/min {spread:.3f}  pairs {min(pairs[name])}-"
              f"{max(pairs[name])}", flush=True)
        if args.each:
            print(f"      {'':<20} each: {' '.join(f'{v:.3f}' for v in values)}", flush=True)
        if speed == "ranking" and spread > 1.10:
            out["wide"].append(f"{problem.slug} {label} {name}: {spread:.3f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("problems", nargs="*")
    ap.add_argument("-n", type=int, default=10, help="judgings per file and mode")
    ap.add_argument("--no-sandbox", action="store_true")
    ap.add_argument("--only", help="only files whose label contains this text")
    ap.add_argument("--speed", choices=("both", "verdict", "ranking"), default="both")
    ap.add_argument("--each", action="store_true", help="print every judging's ratio")
    ap.add_argument("--checks-only", action="store_true",
                    help="no correctness cases: the speed checks only")
    args = ap.parse_args()
    everything = load_all()
    problems = [find(everything, p) for p in args.problems] if args.problems else everything
    launcher = plain_launcher() if args.no_sandbox else sandbox_launcher()
    modes = ("verdict", "ranking") if args.speed == "both" else (args.speed,)
    print(f"isolation: {launcher.isolation}, {args.n} judgings per file and mode, speed "
          f"modes {', '.join(modes)}{', speed checks only' if args.checks_only else ''}\n",
          flush=True)
    import torch

    cuda = torch.cuda.is_available()
    out: dict[str, list[str]] = {"wrong": [], "wide": []}
    started = time.monotonic()
    try:
        for problem in problems:
            if not problem.meta.throughput:
                continue
            print(f"== {problem.slug}", flush=True)
            for label, code in files_of(problem):
                if args.only and args.only not in label:
                    continue
                if needs_cuda(code) and not cuda:
                    print(f"  {label:<44} skipped: needs CUDA (none here)")
                    continue
                for speed in modes:
                    if speed == "ranking" and label.startswith("too_slow/"):
                        continue  # nothing to rank: it is not accepted
                    judge_file(problem, label, code, launcher, args, speed, out)
            print()
        if "verdict" in modes:
            print(f"verdicts other than the folder's: {len(out['wrong'])}" +
                  "".join(f"\n  {w}" for w in out["wrong"]))
        if "ranking" in modes:
            print(f"ranking ratios with max/min > 1.10 (reference and accepted files): "
                  f"{len(out['wide'])}" + "".join(f"\n  {w}" for w in out["wide"]))
        print(f"took {(time.monotonic() - started) / 60:.1f} min")
    finally:
        launcher.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
