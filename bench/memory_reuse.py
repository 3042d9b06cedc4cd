"""Timed calls with the runners' memory settings against a candidate that keeps freed memory.

    python bench/memory_reuse.py [PROBLEM] [--file LABEL] [-n 3] [--speed ranking|verdict]
                                 [--no-sandbox]

A runner gives the memory it frees back to the kernel: pymalloc unmaps each arena that
empties, glibc trims its heap and serves every block over 128 KiB from a fresh mapping
(sandbox/runner.py: steady_malloc). A timed call then faults in fresh pages for what it
makes, and on a VM that reports free pages to its host, those faults are slow and come in
bursts. The candidate (``KEEP``, not what the judge runs) keeps freed memory for the next
call: Python objects from glibc's malloc (``PYTHONMALLOC=malloc``), blocks under 32 MiB
from the heap, the heap never trimmed.

This bench judges one file of one problem (default: distributed-bucketing's
``accepted/torch_noise_global_sort.py``, whose reference's timed calls are the noisiest
measured) N times in each setting, alternating ``keep`` and ``off`` (each judging with a
launcher of its own, so that its template starts with that environment), speed checks
only, and prints per setting:

* each side's timed call in ms: median, 90th percentile and max over all pairs;
* **slow calls**: the share of calls over 1.3 times their side's median (the bursts);
* **pair spread**: the interquartile range of the pair ratios over their median;
* the refined (or verdict) ratio of each judging, and how many pairs it took.

Figures only, no asserts. Compare the two settings within one run: the machine's noise
changes from hour to hour.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import judge.throughput as throughput
import sandbox.launch as launch
import sandbox.layout as layout
from bench.throughput_stability import files_of
from judge.grader import Options, grade
from judge.isolation import plain_launcher, sandbox_launcher
from judge.package import find, load_all

KEEP = {
    "PYTHONMALLOC": "malloc",
    "MALLOC_MMAP_THRESHOLD_": str(32 << 20),  # glibc's largest (HEAP_MAX_SIZE / 2)
    "MALLOC_TRIM_THRESHOLD_": str(1 << 40),
    "MALLOC_TOP_PAD_": str(64 << 20),
}
SETTINGS = ("keep", "off")
RUNNER_ENV = launch.runner_env


def use(setting: str) -> None:
    """Runners started from now on (a new launcher's template included) get ``setting``'s
    environment: the sandbox's layout and the plain launcher both build it with
    sandbox.launch.runner_env, each under its own name."""
    extra = KEEP if setting == "keep" else {}

    def runner_env(more: dict[str, str] | None = None) -> dict[str, str]:
        return {**RUNNER_ENV(more), **extra}

    launch.runner_env = layout.runner_env = runner_env


def record_pairs(into: list[dict[str, float]]):
    """Wrap judge.throughput's pair timer so that every timed pair's two times are kept
    (warm-up pairs included: they are a small share and the same in both settings)."""
    timed = throughput._time_pair

    def _time_pair(*args, **kwargs):
        pair = timed(*args, **kwargs)
        into.append(dict(pair.times))
        return pair

    throughput._time_pair = _time_pair


def summary(setting: str, pairs: list[dict[str, float]], ends: list[tuple[float, int]]) -> None:
    print(f"  {setting}: {len(pairs)} pairs")
    for side in ("ref", "sub"):
        times = [p[side] * 1000 for p in pairs]
        median = statistics.median(times)
        slow = sum(t > 1.3 * median for t in times) / len(times)
        p90 = statistics.quantiles(times, n=10)[-1]
        print(f"    {side}  median {median:7.1f} ms  p90 {p90:7.1f}  max {max(times):7.1f}  "
              f"slow calls {slow:5.1%}")
    ratios = [p["ref"] / p["sub"] for p in pairs if p["sub"] > 0]
    q1, _, q3 = statistics.quantiles(ratios, n=4)
    spread = (q3 - q1) / statistics.median(ratios)
    print(f"    pair spread (IQR / median) {spread:.3f}")
    print("    ratios: " + "  ".join(f"{r:.3f} ({n} pairs)" for r, n in ends))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("problem", nargs="?", default="distributed-bucketing")
    ap.add_argument("--file", default="accepted/torch_noise_global_sort.py",
                    help="'reference' or accepted/FILE or too_slow/FILE")
    ap.add_argument("-n", type=int, default=3, help="judgings per setting")
    ap.add_argument("--speed", choices=("ranking", "verdict"), default="ranking")
    ap.add_argument("--no-sandbox", action="store_true")
    args = ap.parse_args()
    problem = find(load_all(), args.problem)
    files = dict(files_of(problem))
    if args.file not in files:
        ap.error(f"{problem.slug} has no {args.file!r}; one of: {', '.join(files)}")
    code = files[args.file]
    pairs: dict[str, list[dict[str, float]]] = {s: [] for s in SETTINGS}
    ends: dict[str, list[tuple[float, int]]] = {s: [] for s in SETTINGS}
    current: list[dict[str, float]] = []
    record_pairs(current)
    print(f"{problem.slug} {args.file}: {args.n} judgings per setting, speed mode "
          f"{args.speed}, {'no sandbox' if args.no_sandbox else 'sandbox'}", flush=True)
    started = time.monotonic()
    for i in range(args.n):
        for setting in SETTINGS if i % 2 == 0 else SETTINGS[::-1]:
            use(setting)
            launcher = plain_launcher() if args.no_sandbox else sandbox_launcher()
            current.clear()
            try:
                report = grade(problem, code, launcher, Options(
                    seed=5000 + i, speed=args.speed, correctness=False))
            finally:
                launcher.close()
            pairs[setting] += current
            for tp in report.throughput[:1]:
                ends[setting].append((tp.ratio or 0.0, tp.pairs))
    use("off")
    for setting in SETTINGS:
        summary(setting, pairs[setting], ends[setting])
    print(f"took {(time.monotonic() - started) / 60:.1f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
