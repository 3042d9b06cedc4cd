"""What confining an uploaded package costs: the same problem judged as bundled (its tests
run in the grader's process) and as an upload (a copy with another version: untrusted, so
its tests run in a grader box, see judge/graderbox.py).

    python bench/box_latency.py [-n 5] [--throughput] [--slot 0] [PROBLEM]

Judges the reference N times each way, alternating, through one warm launcher (the way a
worker judges), correctness cases only unless ``--throughput``. Prints each way's p50 and
p95 and the difference of the medians. Figures only, no asserts; as root.
"""

from __future__ import annotations

import argparse
import logging
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from judge.grader import Options, grade  # noqa: E402
from judge.package import load_problem  # noqa: E402
from judge.trust import runs_confined  # noqa: E402
from judge.verdict import Verdict  # noqa: E402


def uploaded_copy(folder: Path, into: Path) -> Path:
    copy = into / folder.name
    shutil.copytree(folder, copy, ignore=shutil.ignore_patterns("__pycache__"))
    toml = copy / "problem.toml"
    toml.write_text(toml.read_text() + "\n# an upload: not byte for byte the bundled package\n")
    return copy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("problem", nargs="?", default="padding-collate")
    parser.add_argument("-n", type=int, default=5)
    parser.add_argument("--throughput", action="store_true")
    parser.add_argument("--slot", type=int, default=0)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    from sandbox.bwrap import BwrapLauncher

    launcher = BwrapLauncher(args.slot)
    if launcher.template is not None:
        launcher.template.wait_ready()
    bundled = load_problem(ROOT / "problems" / args.problem)
    with tempfile.TemporaryDirectory() as tmp:
        upload = load_problem(uploaded_copy(bundled.dir, Path(tmp)))
        assert not runs_confined(bundled, "bwrap") and runs_confined(upload, "bwrap")
        times: dict[str, list[float]] = {"bundled": [], "uploaded": []}
        options = Options(throughput=args.throughput)
        try:
            for _ in range(args.n):
                for way, problem in (("bundled", bundled), ("uploaded", upload)):
                    start = time.perf_counter()
                    report = grade(problem, problem.read("reference.py"), launcher, options)
                    times[way].append(time.perf_counter() - start)
                    if report.verdict is not Verdict.ACCEPTED:
                        print(f"{way}: {report.verdict}: {report.detail.en or report.message.en}")
        finally:
            launcher.close()
    for way, values in times.items():
        q = statistics.quantiles(values, n=20) if len(values) > 1 else values * 19
        print(f"{args.problem} {way:9} p50 {statistics.median(values):6.3f} s   "
              f"p95 {q[-1]:6.3f} s   (n={len(values)})")
    extra = statistics.median(times["uploaded"]) - statistics.median(times["bundled"])
    print(f"added by the grader box: {extra:.3f} s (difference of the medians)")


if __name__ == "__main__":
    main()
