"""How long validating one package takes on 1 and on 2 idle workers (issue 15).

For each worker count: ``python -m judge serve --workers N`` (the web app and N worker
processes, each with its own sandbox slot, as a deployment runs them; SQLite in a fresh
data folder, an empty problems folder so that the package is new to it), then, once the
workers have registered and wait idle, ``python -m judge problems add PACKAGE`` stores it
as a new version, whose validation the server splits into one shard per idle worker
(web/data/queue.py). Printed: the time from ``problems add`` to the version's result, the
result, how many shards it had, and the server's own measure (its ``time_s``).

    python bench/validation_workers.py [PACKAGE_DIR] [--workers 1 2] [--no-sandbox]
    python bench/validation_workers.py PACKAGE_DIR --alone [--workers 2]

Speed checks take a machine-wide lock (judge/throughput.py), so on one machine the timed
parts of two shards take turns: the gain comes from everything else (runner starts, the
cases), and workers on other machines gain on everything.

``--alone`` measures what N idle workers on N machines like this one take, on this one
machine: the check a worker runs for a version (``check_problem``, one file at a time, a
warm sandbox launcher) is timed in this process for the whole package, then for each of
its N shards alone, one after another on the otherwise idle machine, each as the worker
that got it would run it. N workers on N machines finish when their slowest shard does:
printed is the slowest shard's time against the whole check's (the target: at most half
for 2), plus each shard's.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
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


def alone(package: Path, shards: int, no_sandbox: bool) -> None:
    """The whole check, then each of ``shards`` shards alone (see the module's docstring)."""
    from judge.check import check_problem
    from judge.isolation import plain_launcher, sandbox_launcher
    from judge.package import load_problem
    from judge.shards import in_shard

    problem = load_problem(package, named_by_slug=False)
    launcher = plain_launcher() if no_sandbox else sandbox_launcher()
    template = getattr(launcher, "template", None)
    if template is not None:
        template.wait_ready()

    def timed(only=None) -> tuple[float, int, bool]:
        started = time.monotonic()
        result = check_problem(problem, launcher, workers=1, only=only)
        return time.monotonic() - started, len(result.outcomes), result.ok

    check_problem(problem, launcher, workers=1,  # warm-up: the page cache, the template
                  only=lambda label, expected: label == "reference")
    whole, files, ok = timed()
    print(f"{package.name}: the whole check on one worker: {whole:.1f} s ({files} files, "
          f"{'valid' if ok else 'invalid'})", flush=True)
    parts = []
    for shard in range(shards):
        took, files, ok = timed(in_shard(problem, shard, shards))
        parts.append(took)
        print(f"{package.name}: shard {shard + 1} of {shards} alone: {took:.1f} s "
              f"({files} files, {'valid' if ok else 'invalid'})", flush=True)
    print(f"{package.name}: {shards} workers on {shards} machines: {max(parts):.1f} s, "
          f"{max(parts) / whole:.2f} of one worker's {whole:.1f} s", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("package", nargs="?", default=str(ROOT / "problems" / "_template"))
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--no-sandbox", action="store_true")
    ap.add_argument("--alone", action="store_true",
                    help="each shard alone, in this process: N workers on N machines")
    args = ap.parse_args()
    package = Path(args.package).resolve()
    if args.alone:
        alone(package, max(args.workers), args.no_sandbox)
        return 0
    for n in args.workers:
        r = validate_with(package, n, args.no_sandbox)
        print(f"{package.name}: {n} worker(s): {r['took']:.1f} s from `problems add` to "
              f"{r['status']} ({r['shards']} shard(s); the version says {r['time_s']} s)",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
