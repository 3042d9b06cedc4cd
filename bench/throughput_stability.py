"""Judge the same submissions repeatedly and print how stable the speed checks are.

For every problem with throughput checks, the reference (a solution at reference speed)
and every ``submissions/accepted`` and ``submissions/too_slow`` file are judged N times
with one warm launcher, the way a worker would:

* in speed mode ``verdict`` (a live judging's sequential decision against the bar): every
  file, N times. Target: every verdict is its folder's, every time. Its ratio is coarse by
  design (the measurement stops once the bar is decided): printed, not a target.
* in speed mode ``ranking`` (the leaderboard's precise ratio): the reference and the
  accepted files, N times. Target: the ratio's max/min <= 1.10. The leaderboard's ratio
  combines ``--runs`` rank jobs of one submission (web.data.ranking: three by default),
  each begun at least ``--spacing`` seconds after the one before ended, as the server
  queues them; so does this bench: it times every judging's first run, then every
  judging's second run (waiting where a judging's spacing is not over yet), and so on, for
  all the files together (files' rankings are printed at the end), and combines each
  judging's runs as the server does (web.timing.combined_ratio). It also prints the
  max/min of the single runs, the figure one rank job alone would give.

``--speed both`` (the default) does both, ``verdict`` or ``ranking`` one of them. Printed
per file and check: the ratio's min / median / max, max/min, the pairs timed and the
verdicts; at the end, the files whose verdicts differ from their folder's and the ranking
ratios wider than 1.10. ``--checks-only`` skips the correctness cases (the files' speed
checks only: quicker, for files ``judge check`` already proved correct). Files marked
``# judge-check: needs cuda`` are skipped without a GPU.

    python bench/throughput_stability.py [PROBLEM ...] [-n 20] [--speed both|verdict|ranking]
                                         [--checks-only] [--no-sandbox] [--only TEXT] [--each]
                                         [--runs 3] [--spacing 240]
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
from web.data.ranking import RANK_RUNS, RANK_SPACING_S
from web.timing import combined_ratio


def files_of(problem):
    yield "reference", problem.read("reference.py")
    for verdict, path in problem.submissions():
        if verdict in ("accepted", "too_slow"):
            yield f"{verdict}/{path.name}", path.read_text(encoding="utf-8")


class Tally:
    """One file's judgings in one speed mode: per check, per judging, its runs' ratios
    (None: a run that ranked nothing), the pairs, the verdicts, when each judging's last
    run ended and the time spent judging."""

    def __init__(self, problem, label: str, code: str, speed: str, n: int) -> None:
        self.problem, self.label, self.code, self.speed, self.n = problem, label, code, speed, n
        self.ratios: dict[str, list[list[float | None]]] = collections.defaultdict(
            lambda: [[] for _ in range(n)])
        self.pairs: dict[str, list[int]] = collections.defaultdict(list)
        self.verdicts: collections.Counter[str] = collections.Counter()
        self.ended = [0.0] * n
        self.busy, self.runs = 0.0, 0


def judge_run(tally: Tally, run: int, launcher, args) -> None:
    """Every judging of ``tally``'s file once more (its ``run``-th run), each begun at
    least ``--spacing`` seconds after its run before ended."""
    for i in range(tally.n):
        if run and (wait := tally.ended[i] + args.spacing - time.monotonic()) > 0:
            time.sleep(wait)
        started = time.monotonic()
        report = grade(tally.problem, tally.code, launcher, Options(
            seed=1000 + i + 100_000 * run, speed=tally.speed,
            correctness=not args.checks_only))
        tally.ended[i] = time.monotonic()
        tally.busy += tally.ended[i] - started
        tally.verdicts[str(report.verdict)] += 1
        for tp in report.throughput:
            tally.ratios[tp.name][i].append(tp.ratio)
            if tp.ratio is not None:
                tally.pairs[tp.name].append(tp.pairs)
    tally.runs += 1


def report_file(tally: Tally, args, out) -> None:
    """Print one file's figures; add what missed its target to ``out``."""
    label, speed = tally.label, tally.speed
    expected = "accepted" if label == "reference" else label.split("/")[0]
    took = tally.busy / (tally.n * tally.runs)
    print(f"  {tally.problem.slug + ' ' + label:<60} {speed:<7} verdicts "
          f"{dict(tally.verdicts)}  ({took:.1f} s per judging"
          + (f", {tally.runs} runs each, {args.spacing:.0f} s apart at least"
             if tally.runs > 1 else "") + ")", flush=True)
    if speed == "verdict" and set(tally.verdicts) != {expected}:
        out["wrong"].append(f"{tally.problem.slug} {label}: {dict(tally.verdicts)}")
    for name, per_judging in tally.ratios.items():
        _print_ratios(tally.problem, label, name, per_judging, tally.pairs[name], speed,
                      args, out)


def _print_ratios(problem, label, name, per_judging, pairs, speed, args, out) -> None:
    """One check's ratios over the judgings: each judging's runs combined as the
    leaderboard combines them (a judging with a run that ranked nothing counts as missing,
    as the server would run it again)."""
    singles = [r for runs in per_judging for r in runs if r is not None]
    values = [combined_ratio(runs) for runs in per_judging if runs and None not in runs]
    if not values:
        return
    lo, hi = min(values), max(values)
    spread = hi / lo if lo > 0 else float("inf")
    missing = len(per_judging) - len(values)
    print(f"      {name:<20} ratio min {lo:.3f}  median {statistics.median(values):.3f}  "
          f"max {hi:.3f}  max/min {spread:.3f}  pairs {min(pairs)}-{max(pairs)}"
          + (f"  ({missing} judgings with a run that ranked nothing)" if missing else ""),
          flush=True)
    if len(singles) > len(values):
        print(f"      {'':<20} single runs ({len(singles)}): max/min "
              f"{max(singles) / min(singles):.3f}", flush=True)
    if args.each:
        print(f"      {'':<20} each: {' '.join(f'{v:.3f}' for v in values)}", flush=True)
    if speed == "ranking" and (spread > 1.10 or missing):
        out["wide"].append(f"{problem.slug} {label} {name}: {spread:.3f}"
                           + (f", {missing} missing" if missing else ""))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("problems", nargs="*")
    ap.add_argument("-n", type=int, default=10, help="judgings per file and mode")
    ap.add_argument("--no-sandbox", action="store_true")
    ap.add_argument("--only", action="append",
                    help="only files whose label contains this text (again: or that one)")
    ap.add_argument("--speed", choices=("both", "verdict", "ranking"), default="both")
    ap.add_argument("--each", action="store_true", help="print every judging's ratio")
    ap.add_argument("--runs", type=int, default=RANK_RUNS,
                    help="ranking: rank jobs per judging, combined (default: the server's)")
    ap.add_argument("--spacing", type=float, default=RANK_SPACING_S,
                    help="ranking: seconds from one run's end to the next run's start")
    ap.add_argument("--checks-only", action="store_true",
                    help="no correctness cases: the speed checks only")
    args = ap.parse_args()
    everything = load_all()
    problems = [find(everything, p) for p in args.problems] if args.problems else everything
    launcher = plain_launcher() if args.no_sandbox else sandbox_launcher()
    modes = ("verdict", "ranking") if args.speed == "both" else (args.speed,)
    print(f"isolation: {launcher.isolation}, {args.n} judgings per file and mode ({args.runs} "
          f"runs each in ranking mode, {args.spacing:.0f} s apart), speed "
          f"modes {', '.join(modes)}{', speed checks only' if args.checks_only else ''}\n",
          flush=True)
    import torch

    cuda = torch.cuda.is_available()
    out: dict[str, list[str]] = {"wrong": [], "wide": []}
    started = time.monotonic()
    rankings: list[Tally] = []
    try:
        for problem in problems:
            if not problem.meta.throughput:
                continue
            print(f"== {problem.slug}", flush=True)
            for label, code in files_of(problem):
                if args.only and not any(text in label for text in args.only):
                    continue
                if needs_cuda(code) and not cuda:
                    print(f"  {label:<44} skipped: needs CUDA (none here)")
                    continue
                if "verdict" in modes:
                    tally = Tally(problem, label, code, "verdict", args.n)
                    judge_run(tally, 0, launcher, args)
                    report_file(tally, args, out)
                if "ranking" in modes and not label.startswith("too_slow/"):
                    rankings.append(Tally(problem, label, code, "ranking", args.n))
            print()
        # every file's first runs, then every file's second runs...: the spacing between a
        # judging's runs is spent on the other files' judgings, not waited out
        for run in range(args.runs if rankings else 0):
            for tally in rankings:
                judge_run(tally, run, launcher, args)
        for tally in rankings:
            report_file(tally, args, out)
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
