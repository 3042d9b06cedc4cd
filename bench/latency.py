"""Submit-to-verdict latency of the sandboxed judge, against the bare compute it wraps.

    python bench/latency.py [-n 20] [--cold] [--slot 0] [PROBLEM ...]
    python bench/latency.py --server [-n 10] [--workers 1] [--burst K] [--url URL] [PROBLEM ...]

With ``--server``: through a running server, as a learner waits (bench/latency_server.py):
``judge serve`` is started (or ``--url`` used), each problem's reference (default:
padding-collate, length-bucketing, grad-accumulation) is submitted N times one after
another **with its speed checks**, and POST -> ``done`` is timed; ``--burst K`` also
submits K at once and prints judgings per minute.

For each problem in ``problems/`` (or the slugs given), judge the problem's reference N
times through one launcher created up front, the way a worker judges: correctness cases
only (throughput checks off), a fresh secret seed each time.

Figures, per problem:

* **verdict** — wall time from calling ``judge.grader.grade()`` to its ``on_verdict``, the
  moment a worker posts the verdict: making the job folders, starting the submission's and
  the reference's runners in the sandbox, importing both, running every case through the
  protocol, comparing, building the report. **returned** adds what ``grade`` does after
  that, stopping the runners and removing the folders (a learner does not wait for it; the
  next judging on the worker does).
* **bare** — the same cases with the same seeds, run in this process on one thread (as the
  runners are): the test functions call the reference module directly, with the very
  objects the case made (no copy: the reference does not modify its inputs), so it is input
  generation + both computations + comparisons, with no sandbox, no process, no IPC and no
  serialisation. Cases that kill or restart a runner, stream events, or need CUDA where
  there is none cannot run this way and are left out of *both* figures (listed).
* **overhead** — verdict p50 minus bare p50.
* **ahead** / **overhead** — the same verdict, timed with a worker's head start
  (judge.sessions.HeadStart): the two runners were started for this problem at the end
  of the judging before, and were up when it began, as on a worker whose queue is not
  full (one that claims its next job while the head start is still starting waits for
  the rest of it); and that verdict's p50 minus bare p50.
* **all cases** — wall time of the whole correctness verdict (every case, those that kill or
  restart runners included): what a learner waits for before the speed checks.

Figures only, no asserts. ``--cold`` uses a launcher without the warm template (each runner
a fresh bubblewrap and a fresh ``import torch``), for comparison.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from judge.grader import Options, grade  # noqa: E402
from judge.package import Problem, load_all  # noqa: E402
from judge.pipeline import run_body  # noqa: E402
from judge.session import Budget, CallResult, SubmissionError  # noqa: E402
from judge.sessions import HeadStart  # noqa: E402
from judge.testing import CaseFailed, Ctx, case_seed  # noqa: E402


class NotBare(Exception):
    """A case needs a real process (it kills or restarts runners)."""


def _module(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Context:
    """The fixture's ``ctx`` in-process: events are dropped, questions answered None."""

    def emit(self, data: Any) -> None:
        pass

    def ask(self, data: Any) -> Any:
        return None


class DirectSession:
    """A judge.session.Session that calls the module in this process."""

    def __init__(self, problem: Problem) -> None:
        self.sol = _module(problem.dir / "reference.py", "bare_solution")
        fixture = problem.fixture_path
        self.fixture = _module(fixture, "bare_fixture") if fixture else None
        self.budget: Budget | None = None

    def call(self, target: str, fn: str, args: list, kwargs: dict, *,
             return_args: bool = False) -> CallResult:
        if target == "fixture":
            assert self.fixture is not None
            scenario = getattr(self.fixture, fn)
            func = lambda *a, **k: scenario(self.sol, _Context(), *a, **k)  # noqa: E731
        else:
            func = getattr(self.sol, fn)
        start = time.perf_counter()
        try:
            value = func(*args, **kwargs)
        except Exception as e:
            raise SubmissionError({"type": type(e).__name__, "message": str(e)}) from None
        return CallResult(value, args if return_args else [], kwargs if return_args else {},
                          time.perf_counter() - start)

    def stream(self, *args: Any, **kwargs: Any):
        raise NotBare("streams events")

    def kill(self) -> None:
        raise NotBare("kills a runner")

    def ready(self) -> dict[str, Any]:
        return {}

    alive = True

    def start(self) -> None:
        pass

    def output_mark(self) -> int:
        return 0

    def output_since(self, mark: int) -> str:
        return ""

    def memory_bytes(self) -> int | None:
        return None  # no process of its own to measure from outside

    def close(self) -> None:
        pass


def bare_cases(problem: Problem) -> list:
    """The correctness cases that can run in-process (and here: CUDA ones need a GPU)."""
    import torch

    chosen = []
    for spec in problem.tests.select():
        if spec.device == "cuda" and not torch.cuda.is_available():
            continue
        try:
            run_bare(problem, [spec], seed=1)
            chosen.append(spec)
        except NotBare:
            pass
        except (CaseFailed, SubmissionError):  # e.g. a data file in a runner's job folder
            pass
    return chosen


class NoFolders(dict):
    """Job folders exist only with runners: a case that asks for one cannot run bare."""

    def __missing__(self, role: str) -> Any:
        raise NotBare("needs job folders")


def run_bare(problem: Problem, cases: list, seed: int) -> None:
    sessions = {"sub": DirectSession(problem), "ref": DirectSession(problem)}

    def get(role: str, fresh: bool = False, *, hash_seed: int | None = None) -> Any:
        if fresh:
            raise NotBare("needs a fresh runner")
        return sessions[role]

    for spec in cases:
        budget = Budget(spec.timeout_s or problem.meta.limits.case_wall_s)
        ctx = Ctx(seed=case_seed(seed, spec.name), public=spec.public, budget=budget,
                  sessions=get, workdirs=NoFolders(), device="cpu")
        run_body(spec.fn, ctx)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def measure(problem: Problem, launcher: Any, runs: int) -> dict[str, Any]:
    cases = bare_cases(problem)
    names = tuple(c.name for c in cases)
    skipped = [c.name for c in problem.tests.select() if c.name not in names]
    code = problem.read("reference.py")
    options = lambda seed: Options(seed=seed, throughput=False, cases=names)  # noqa: E731
    for seed in (101, 102):  # warm-up: page cache, the template's first forks
        grade(problem, code, launcher, options(seed))
        run_bare(problem, cases, seed)
    verdict, returned, bare, full, verdicts = [], [], [], [], set()
    for i in range(runs):
        seed = 1000 + i
        if cases:
            start = time.perf_counter()
            report = grade(problem, code, launcher, options(seed),
                           on_verdict=lambda _, t0=start: verdict.append(time.perf_counter() - t0))
            returned.append(time.perf_counter() - start)
            verdicts.add(str(report.verdict))
        start = time.perf_counter()
        report = grade(problem, code, launcher, Options(seed=seed, throughput=False))
        full.append(time.perf_counter() - start)
        verdicts.add(str(report.verdict))
        start = time.perf_counter()
        run_bare(problem, cases, seed)
        bare.append(time.perf_counter() - start)
    # Then as a worker with a head start judges: each judging starts the next one's
    # runners as it ends; they are up when the next begins (a bare run apart).
    ahead: list[float] = []
    head_start = HeadStart(launcher)
    head_start.prepare(problem, None)
    for i in range(runs if cases else 0):
        head_start.wait()
        start = time.perf_counter()
        report = grade(problem, code, launcher, options(1000 + i), head_start=head_start,
                       on_verdict=lambda _, t0=start: ahead.append(time.perf_counter() - t0))
        verdicts.add(str(report.verdict))
        run_bare(problem, cases, 1000 + i)
    head_start.close()
    return {"cases": len(cases), "skipped": skipped, "verdicts": sorted(verdicts),
            "verdict": verdict, "returned": returned, "bare": bare, "full": full,
            "ahead": ahead, "all": len(problem.tests.select())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problems", nargs="*", help="slugs (default: every problem)")
    parser.add_argument("-n", "--runs", type=int, default=20)
    parser.add_argument("--cold", action="store_true", help="no warm template")
    parser.add_argument("--slot", type=int, default=0)
    parser.add_argument("--server", action="store_true",
                        help="submit -> done through a server, with the speed checks")
    parser.add_argument("--url", help="with --server: a running server (default: start one)")
    parser.add_argument("--workers", type=int, default=1, help="with --server: its workers")
    parser.add_argument("--burst", type=int, default=0,
                        help="with --server: also submit this many at once (judgings/min)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if args.server:
        from bench import latency_server

        return latency_server.run(args.problems or list(latency_server.DEFAULT), args.runs,
                                  args.url, args.workers, args.burst)
    available = {p.slug: p for p in load_all()}
    wanted = args.problems or [p.slug for p in sorted(available.values(),
                                                      key=lambda p: p.meta.number)]

    import torch

    from sandbox.bwrap import BwrapLauncher

    torch.set_num_threads(1)  # as in the runners (HELLO asks for one thread)
    # Bare runs execute fixtures in this process, and fixtures write into the working
    # folder (a runner's is its job folder): give them a scratch one.
    os.chdir(tempfile.mkdtemp(prefix="latency-bare-", dir=os.environ.get("TMPDIR")))

    started = time.perf_counter()
    launcher = BwrapLauncher(args.slot, warm=not args.cold)
    if launcher.template is not None:
        launcher.template.wait_ready()
    print(f"launcher: bwrap, {'cold' if args.cold else 'warm'}, ready in "
          f"{time.perf_counter() - started:.2f} s; {args.runs} runs per problem")
    print(f"{'problem':22} {'cases':>5}  {'verdict p50':>11} {'p95':>7}  {'bare p50':>8} "
          f"{'p95':>7}  {'overhead':>8}  {'ahead p50':>9} {'overhead':>8}  {'returned':>8}  "
          f"{'all cases':>9} {'p50':>7} {'p95':>7}")
    try:
        for slug in wanted:
            problem = available.get(slug)
            if problem is None:
                print(f"{slug:22} (not in problems/ yet)")
                continue
            m = measure(problem, launcher, args.runs)
            f50, f95 = statistics.median(m["full"]), percentile(m["full"], 0.95)
            tail = (f"  {m['all']:>9} {f50:>6.3f}s {f95:>6.3f}s   "
                    f"verdicts: {', '.join(m['verdicts'])}")
            if m["verdict"]:
                v50, v95 = statistics.median(m["verdict"]), percentile(m["verdict"], 0.95)
                b50, b95 = statistics.median(m["bare"]), percentile(m["bare"], 0.95)
                r50 = statistics.median(m["returned"])
                a50 = statistics.median(m["ahead"])
                print(f"{slug:22} {m['cases']:>5}  {v50:>10.3f}s {v95:>6.3f}s  {b50:>7.3f}s "
                      f"{b95:>6.3f}s  {v50 - b50:>7.3f}s  {a50:>8.3f}s {a50 - b50:>7.3f}s  "
                      f"{r50:>7.3f}s{tail}")
            else:
                print(f"{slug:22} {0:>5}  {'-':>11} {'-':>7}  {'-':>8} {'-':>7}  {'-':>8}  "
                      f"{'-':>9} {'-':>8}  {'-':>8}{tail}")
            if m["skipped"]:
                print(f"{'':22} not timed (need a real process): {', '.join(m['skipped'])}")
    finally:
        launcher.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
