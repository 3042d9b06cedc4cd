"""How long validating one package takes on 1 and on 2 idle workers (issue 15).

For each worker count: ``python -m judge serve --workers N`` (the web app and N worker
processes, each with its own sandbox slot, as a deployment runs them; SQLite in a fresh
data folder, an empty problems folder so that the package is new to it), then, once the
workers have registered and wait idle, ``python -m judge problems add PACKAGE`` stores it
as a new version, whose validation the server splits into one shard per idle worker
(web/data/queue.py). Printed: the time from ``problems add`` to the version's result, the
result, how many shards it had, and the server's own measure (its ``time_s``).

    python bench/validation_workers.py [PACKAGE_DIR] [--workers 1 2] [--no-sandbox]
    python bench/validation_workers.py PACKAGE_DIR --alone [--workers 2] [--rounds 3]

Speed checks take a machine-wide lock (judge/quiet.py), so on one machine the timed
parts of two shards take turns: the gain comes from everything else (runner starts, the
cases), and workers on other machines gain on everything.

``--alone`` measures what N idle workers on N machines like this one take, on this one
machine: the check a worker runs for a version (``check_problem``, one file at a time, a
warm sandbox launcher) is timed in this process for the whole package, then its N shards
run on emulated machines (:class:`Machines`): one at a time, each on its own clock, the
one furthest behind going next, taking the files from a shared answer like the server's
(``take``), so each file is judged alone on the machine and taken when it would be. N
workers on N machines finish when their slowest shard does: printed is the slowest
shard's time against the whole check's (the target: at most half for 2), plus each
shard's. A speed check's length varies from one judging to the next (its sequential test
stops when it decides), so the whole and the split are each run ``--rounds`` times, in
turn, and their medians compared.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from web_load import server

ROOT = Path(__file__).resolve().parent.parent
SETTLE_S = 8.0  # the workers start, register and wait for work
TIMEOUT_S = 3600


def version_row(database: Path) -> tuple[str, dict] | None:
    """The newest version's status and report, read from the server's SQLite file."""
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=10) as db:
        row = db.execute("SELECT status, report FROM problem_versions "
                         "ORDER BY id DESC LIMIT 1").fetchone()
    if row is None:
        return None
    report = row[1] if isinstance(row[1], dict) else json.loads(row[1] or "{}")
    return row[0], report


def validate_with(package: Path, workers: int, no_sandbox: bool) -> dict:
    folder = Path(tempfile.mkdtemp(prefix=f"validation-{workers}-"))
    (folder / "problems").mkdir()
    env = {"JUDGE_PROBLEMS_DIR": str(folder / "problems")}
    if no_sandbox:
        env["JUDGE_NO_SANDBOX"] = "1"
    with server(folder, None, 1, workers=workers, env_extra=env):
        time.sleep(SETTLE_S)
        started = time.monotonic()
        added = subprocess.run(
            [sys.executable, "-m", "judge", "problems", "add", str(package), "--data-dir",
             str(folder / "data"), "--note", "bench"], cwd=ROOT, capture_output=True,
            text=True, env={k: v for k, v in os.environ.items() if not k.startswith("JUDGE_")}
            | env)
        if added.returncode != 0:
            raise SystemExit(f"problems add failed: {added.stdout}{added.stderr}")
        database = folder / "data" / "judge.db"
        while time.monotonic() - started < TIMEOUT_S:
            row = version_row(database)
            if row is not None and row[0] in ("valid", "invalid"):
                break
            time.sleep(0.5)
        took = time.monotonic() - started
    status, report = row if row is not None else ("none", {})
    return {"took": took, "status": status, "shards": report.get("shards", 1),
            "time_s": report.get("time_s"), "log": folder / "server.log"}


class Machines:
    """N workers on N machines, emulated on this one: the workers run one at a time, each on
    a clock of its own that counts only the time it ran. The worker whose clock is
    furthest behind goes next, so the files are taken in the order N real machines would
    take them, and each file is judged alone on the machine, as it would be on its own.
    A worker stops running when it asks for its next file (check_problem's ``take``), and
    when its shard is done."""

    def __init__(self, n: int) -> None:
        self.clock = [0.0] * n
        self.running = set(range(n))
        self.taken: dict[str, int] = {}  # the server's answer: the first to ask takes it
        self.turn: int | None = 0
        self.since = time.monotonic()
        self.cond = threading.Condition()

    def wait_turn(self, i: int) -> None:
        with self.cond:
            while self.turn != i:
                self.cond.wait()
            self.since = time.monotonic()

    def pause(self, i: int, *, done: bool = False) -> None:
        with self.cond:
            self.clock[i] += time.monotonic() - self.since
            if done:
                self.running.discard(i)
            self.turn = min(self.running, key=lambda k: (self.clock[k], k), default=None)
            self.cond.notify_all()

    def take(self, i: int):
        def take(label: str, expected: str) -> bool:
            self.pause(i)
            self.wait_turn(i)
            return self.taken.setdefault(label, i) == i
        return take


def alone(package: Path, shards: int, no_sandbox: bool, rounds: int) -> None:
    """The whole check, then ``shards`` shards on emulated machines (see the docstring),
    ``rounds`` times over: a speed check's length varies from one judging to the next
    (it stops when its sequential test decides), so one round's ratio is noisy; the
    medians of the rounds are compared."""
    from judge.check import check_problem
    from judge.isolation import plain_launcher, sandbox_launcher
    from judge.package import load_problem

    problem = load_problem(package, named_by_slug=False)
    launcher = plain_launcher() if no_sandbox else sandbox_launcher()
    template = getattr(launcher, "template", None)
    if template is not None:
        template.wait_ready()
    check_problem(problem, launcher, workers=1,  # warm-up: the page cache, the template
                  only=lambda label, expected: label == "reference")
    wholes, slowest = [], []
    for r in range(1, rounds + 1):
        started = time.monotonic()
        result = check_problem(problem, launcher, workers=1)
        wholes.append(time.monotonic() - started)
        costliest = sorted(result.outcomes, key=lambda o: -o.checked().time_ms)[:5]
        work = sum(o.checked().time_ms for o in result.outcomes) / 1000
        print(f"round {r}: the whole check on one worker: {wholes[-1]:.2f} s "
              f"({len(result.outcomes)} files judged in {work:.2f} s, "
              f"{'valid' if result.ok else 'invalid'}; the "
              f"costliest: " + ", ".join(f"{o.label.rsplit('/', 1)[-1]} "
                                         f"{o.checked().time_ms / 1000:.1f} s"
                                         for o in costliest) + ")", flush=True)
        clocks, judged = on_machines(problem, launcher, shards)
        slowest.append(max(clocks))
        print(f"round {r}: {shards} workers on {shards} machines: " + ", ".join(
            f"{c:.2f} s ({len(n)} files judged in {sum(n):.2f} s)"
            for c, n in zip(clocks, judged, strict=True)) +
            f"; the slowest {slowest[-1] / wholes[-1]:.3f} of the whole", flush=True)
    whole, split = statistics.median(wholes), statistics.median(slowest)
    print(f"{package.name}: medians of {rounds} rounds: one worker {whole:.2f} s, "
          f"{shards} workers on {shards} machines {split:.2f} s: {split / whole:.3f} of one "
          f"worker's time (the server's answer to each take, a round trip, is not counted)",
          flush=True)


def on_machines(problem, launcher, shards: int) -> tuple[list[float], list[list[float]]]:
    """One validation's ``shards`` shards on emulated machines: each machine's time and
    the seconds each of its files took."""
    from judge.check import check_problem

    machines = Machines(shards)
    judged: list[list[float]] = [[] for _ in range(shards)]

    def shard(i: int) -> None:
        machines.wait_turn(i)
        try:
            part = check_problem(problem, launcher, workers=1, take=machines.take(i))
            judged[i] = [o.checked().time_ms / 1000 for o in part.outcomes]
            if not part.ok:
                print(f"machine {i + 1}: {part.problems()}", flush=True)
        finally:
            machines.pause(i, done=True)

    threads = [threading.Thread(target=shard, args=(i,)) for i in range(shards)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return machines.clock, judged


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("package", nargs="?", default=str(ROOT / "problems" / "_template"))
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--no-sandbox", action="store_true")
    ap.add_argument("--rounds", type=int, default=3, help="--alone: whole and split, N times")
    ap.add_argument("--alone", action="store_true",
                    help="each shard alone, in this process: N workers on N machines")
    args = ap.parse_args()
    package = Path(args.package).resolve()
    if args.alone:
        alone(package, max(args.workers), args.no_sandbox, args.rounds)
        return 0
    for n in args.workers:
        r = validate_with(package, n, args.no_sandbox)
        print(f"{package.name}: {n} worker(s): {r['took']:.1f} s from `problems add` to "
              f"{r['status']} ({r['shards']} shard(s); the version says {r['time_s']} s)",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
