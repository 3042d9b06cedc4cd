"""Judging capacity: judgings per minute with 1, 2, 3 ... local workers on this machine.

    python bench/capacity.py [--workers 1 2 3] [--submissions 30] [--problem padding-collate]

For each worker count: ``python -m judge serve --workers N`` (sandboxed, SQLite in a fresh
folder), one learner per submission (rate limits raised), and ``--submissions`` correct
solutions (the problem's ``accepted/`` fixtures in turn) posted at once, so the queue is
never empty. Every judging is a real one: the hidden cases and the speed check. Prints,
per worker count, judgings per minute (first POST to last verdict), submit -> verdict
p50/p95, how many were accepted (a correct solution judged too slow because workers
competed for the cores shows here), and the speed ratios' median and range.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from web_load import pct, server

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT_S = 1800


def learners(url: str, n: int) -> list[dict[str, str]]:
    def one(i: int) -> dict[str, str]:
        with httpx.Client(base_url=url, timeout=60) as c:
            c.post("/api/users", json={"username": f"cap{i}", "password": "password1"})
            r = c.post("/api/token", data={"username": f"cap{i}", "password": "password1"})
            return {"Authorization": f"Bearer {r.json()['access_token']}"}

    with ThreadPoolExecutor(4) as pool:
        return list(pool.map(one, range(n)))


def run(workers: int, problem: str, n: int) -> dict:
    folder = Path(tempfile.mkdtemp(prefix=f"capacity-{workers}-"))
    codes = [p.read_text() for p in
             sorted((ROOT / "problems" / problem / "submissions" / "accepted").glob("*.py"))]
    with server(folder, None, 1, workers=workers) as (url, _pid), \
            httpx.Client(base_url=url, timeout=60) as c:
        auth = learners(url, n)
        time.sleep(5)  # the workers register
        posted: dict[int, float] = {}
        started = time.monotonic()
        for i, headers in enumerate(auth):
            r = c.post("/api/submissions", headers=headers,
                       json={"problem": problem, "code": codes[i % len(codes)]})
            r.raise_for_status()
            posted[r.json()["id"]] = time.monotonic()
        done: dict[int, dict] = {}
        finished: dict[int, float] = {}
        owner = dict(zip(posted, auth, strict=True))
        while len(done) < n and time.monotonic() - started < TIMEOUT_S:
            for sid in [s for s in posted if s not in done]:
                data = c.get(f"/api/submissions/{sid}", headers=owner[sid]).json()
                if data["status"] == "done":
                    done[sid], finished[sid] = data, time.monotonic()
            time.sleep(0.5)
    span = max(finished.values()) - started if finished else float("nan")
    waits = [finished[s] - posted[s] for s in finished]
    ratios = [t["ratio"] for d in done.values() for t in d.get("throughput", [])
              if t.get("ratio") is not None]
    return {"workers": workers, "judged": len(done), "per_min": len(done) / span * 60,
            "p50": statistics.median(waits) if waits else float("nan"),
            "p95": pct(waits, 0.95),
            "accepted": sum(d["verdict"] == "accepted" for d in done.values()),
            "ratios": ratios}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--submissions", type=int, default=30)
    ap.add_argument("--problem", default="padding-collate")
    args = ap.parse_args()
    print(f"{args.problem}: {args.submissions} correct submissions at once, speed check "
          f"included")
    for w in args.workers:
        r = run(w, args.problem, args.submissions)
        ratios = r["ratios"]
        spread = (f"median {statistics.median(ratios):.2f} ({min(ratios):.2f}-"
                  f"{max(ratios):.2f})" if ratios else "none measured")
        print(f"{w} worker(s): {r['per_min']:5.1f} judgings/min   submit->verdict p50 "
              f"{r['p50']:5.1f} s  p95 {r['p95']:5.1f} s   accepted {r['accepted']}/"
              f"{r['judged']}   speed ratios {spread}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
