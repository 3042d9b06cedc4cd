"""Faults, with nothing lost: a burst of submissions while workers, a web process and the
database die.

    python bench/chaos.py [--submissions 200] [--clients 50] [--worker-kills 3]

On loopback, as on several machines (tests/web/deployment.py): PostgreSQL, two web
processes on two ports sharing it, three workers (``python -m judge worker``, each with
its own package cache and sandbox slot). 50 API clients submit 200 submissions of
padding-collate at once (accepted and wrong_answer fixtures mixed; its speed check is
left out, see deployment.problems_without_speed_checks), and wait for their verdicts,
while a worker is SIGKILLed in the middle of judging three times (and started again),
the workers' web process is SIGKILLed and started again once, and PostgreSQL is
restarted once. Rate limits are raised for the run (JUDGE_SUBMISSIONS_PER_MINUTE,
JUDGE_SUBMISSIONS_IN_FLIGHT); leases are 10 s so a killed worker's job comes back soon.

Prints submissions, lost, duplicated, wrong verdicts, judgings per minute, submit->verdict
p50/p95, and what else it watched (tests/web/chaos.py says how each is counted). Exits 1
if anything was lost, duplicated, wrong or stuck.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.web import chaos
from tests.web.deployment import deployment

LEASE_S = 10.0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--submissions", type=int, default=200)
    p.add_argument("--clients", type=int, default=50)
    p.add_argument("--workers", type=int, default=3)
    p.add_argument("--worker-kills", type=int, default=3)
    p.add_argument("--web-restarts", type=int, default=1)
    p.add_argument("--db-restarts", type=int, default=1)
    p.add_argument("--keep", action="store_true", help="keep the logs folder")
    args = p.parse_args()
    plan = chaos.Plan(submissions=args.submissions, clients=args.clients,
                      worker_kills=args.worker_kills, web_restarts=args.web_restarts,
                      db_restarts=args.db_restarts)
    folder = Path(tempfile.mkdtemp(prefix="torch-judge-chaos-"))
    started = time.monotonic()
    settings = {"lease_seconds": str(LEASE_S), "submissions_per_minute": "100000",
                "submissions_in_flight": "100000"}
    with deployment(folder, workers=args.workers, settings=settings) as dep:
        print(f"up: PostgreSQL, {len(dep.webs)} web processes, {len(dep.workers)} workers "
              f"({time.monotonic() - started:.0f} s); logs in {folder}", flush=True)
        out = chaos.run(dep, plan, lease_s=LEASE_S, log=lambda s: print(s, flush=True))
    print()
    for line in out.lines():
        print(line)
    if not args.keep and out.ok:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
    return 0 if out.ok else 1


if __name__ == "__main__":
    sys.exit(main())
