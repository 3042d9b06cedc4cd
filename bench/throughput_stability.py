"""Judge the same submissions repeatedly and print how stable the throughput ratio is.

For every problem with throughput checks, the reference (a solution at reference speed)
and every ``submissions/accepted`` and ``submissions/too_slow`` file are judged N times
with one warm launcher, the way a worker would, in speed mode ``--speed`` (``verdict``, a
live judging's sequential decision, by default; ``ranking``, the leaderboard's precise
ratio). Printed per file and check: the ratio's min / median / max, max/min, the pairs
timed, and the verdicts; at the end, the files whose verdicts differ from their folder's
and, in ranking mode, the ratios wider than 1.10 (of the reference and the accepted files:
a too_slow measurement stops once clearly below the bar; in verdict mode a measurement
stops once the bar is decided, so its ratio is coarse by design). Files marked
``# judge-check: needs cuda`` are skipped without a GPU. Targets on a noisy 2-core
machine: every verdict its folder's; in ranking mode max/min <= 1.10.

    python bench/throughput_stability.py [PROBLEM ...] [-n 10] [--speed verdict|ranking]
                                         [--no-sandbox] [--only reference]
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("problems", nargs="*")
    ap.add_argument("-n", type=int, default=10, help="judgings per file")
    ap.add_argument("--no-sandbox", action="store_true")
    ap.add_argument("--only", help="only files whose label contains this text")
    ap.add_argument("--speed", choices=("verdict", "ranking"), default="verdict")
    args = ap.parse_args()
    everything = load_all()
    problems = [find(everything, p) for p in args.problems] if args.problems else everything
    launcher = plain_launcher() if args.no_sandbox else sandbox_launcher()
    print(f"isolation: {launcher.isolation}, {args.n} judgings per file, speed mode "
          f"{args.speed}\n")
    import torch

    cuda = torch.cuda.is_available()
    wrong: list[str] = []
    wide: list[str] = []
    try:
        for problem in problems:
            if not problem.meta.throughput:
                continue
            print(f"== {problem.slug}")
            for label, code in files_of(problem):
                if args.only and args.only not in label:
                    continue
                if needs_cuda(code) and not cuda:
                    print(f"  {label:<44} skipped: needs CUDA (none here)")
                    continue
                expected = "accepted" if label == "reference" else label.split("/")[0]
                ratios: dict[str, list[float]] = collections.defaultdict(list)
                pairs: dict[str, list[int]] = collections.defaultdict(list)
                verdicts: collections.Counter[str] = collections.Counter()
                started = time.monotonic()
                for i in range(args.n):
                    report = grade(problem, code, launcher,
                                   Options(seed=1000 + i, speed=args.speed))
                    verdicts[str(report.verdict)] += 1
                    for tp in report.throughput:
                        if tp.ratio is not None:
                            ratios[tp.name].append(tp.ratio)
                            pairs[tp.name].append(tp.pairs)
                took = (time.monotonic() - started) / args.n
                print(f"  {label:<44} verdicts {dict(verdicts)}  ({took:.1f} s per judging)")
                if set(verdicts) != {expected}:
                    wrong.append(f"{problem.slug} {label}")
                for name, values in ratios.items():
                    lo, hi = min(values), max(values)
                    spread = hi / lo if lo > 0 else float("inf")
                    print(f"      {name:<20} ratio min {lo:.3f}  median "
                          f"{statistics.median(values):.3f}  max {hi:.3f}  max/min {spread:.3f}"
                          f"  pairs {min(pairs[name])}-{max(pairs[name])}")
                    # A too_slow measurement stops as soon as its interval is clearly below
                    # the bar (a few pairs), so its spread is coarse by design: not a target;
                    # nor is any ratio of verdict mode.
                    if spread > 1.10 and expected != "too_slow" and args.speed == "ranking":
                        wide.append(f"{problem.slug} {label} {name}: {spread:.3f}")
            print()
        print(f"verdicts other than the folder's: {len(wrong)}" +
              "".join(f"\n  {w}" for w in wrong))
        if args.speed == "ranking":
            print(f"ratios with max/min > 1.10 (reference and accepted files): {len(wide)}"
                  + "".join(f"\n  {w}" for w in wide))
    finally:
        launcher.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
