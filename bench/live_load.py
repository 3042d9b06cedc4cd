"""Web load: how the app holds up with many learners watching their submissions live.

    python bench/live_load.py [--users 40] [--workers 4] [--tests 20]

Starts the app (uvicorn, SQLite in a temporary folder) in this process and drives it over
real HTTP: page and API reads, then every user submits once while fake workers (no
grading: they post one event per test and a result) drain the queue and every user follows
their submission's event stream. Prints latencies, end-to-end throughput and how long an
event takes from a worker's post to a reader. Clients share the process (and the GIL)
with the server, so the figures are a floor, not a capacity plan.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import uvicorn

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from judge.i18n import T
from judge.report import Report, TestResult
from judge.verdict import Verdict
from judge.worker_client import WorkerClient
from web.main import create_app
from web.settings import Settings

CODE = "def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side='right'):\n    ...\n"


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


def line(name: str, ms: list[float]) -> str:
    return (f"{name:<34} n={len(ms):<5} p50={statistics.median(ms):7.1f} ms  "
            f"p95={pct(ms, 0.95):7.1f} ms")


def start_server(tmp: Path) -> tuple[str, uvicorn.Server]:
    settings = Settings(data_dir=tmp, secret_key="bench", worker_token="bench-worker",
                        submissions_per_minute=10_000, claim_wait_seconds=2)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(settings), port=port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    url = f"http://127.0.0.1:{port}"
    while not server.started:
        time.sleep(0.05)
    return url, server


def timed(client: httpx.Client, method: str, path: str, **kw) -> float:
    t = time.perf_counter()
    r = client.request(method, path, **kw)
    r.raise_for_status()
    return (time.perf_counter() - t) * 1000


def fake_worker(url: str, tests: int, stop: threading.Event, done: list[int]) -> None:
    client = WorkerClient(url, "bench-worker")
    wid = client.register("bench", False, {})
    while not stop.is_set():
        job = client.claim(wid, False, 1.0)
        if job is None:
            continue
        names = [f"case_{i}" for i in range(tests)]
        client.events(job, [{"event": "start", "total": tests,
                             "tests": [{"name": n, "visibility": "public"} for n in names]}])
        results = []
        for i, name in enumerate(names):
            # the post time rides in the public message, so readers can measure the delay
            result = TestResult(name, "public", T("基准", "bench"), Verdict.ACCEPTED,
                                T.same(repr(time.time())), 1.0)
            results.append(result)
            client.events(job, [{"event": "test", "index": i, "result": result.to_json("zh")}])
        report = Report(Verdict.ACCEPTED, job.problem, 0, "none", tests=results)
        client.result(job, report.to_json("zh"))
        done.append(job.submission_id)


def follow(url: str, sid: int, token: str, delays: list[float]) -> float:
    started = time.perf_counter()
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.stream("GET", f"{url}/api/submissions/{sid}/events", headers=headers,
                      timeout=120) as r:
        for raw in r.iter_lines():
            if not raw.startswith("data:"):
                continue
            event = json.loads(raw[5:])
            if event["event"] == "test":
                try:
                    delays.append((time.time() - float(event["result"]["message"])) * 1000)
                except ValueError:
                    pass  # replayed from the final report after the stream caught up
            if event["event"] == "done":
                break
    return time.perf_counter() - started


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--users", type=int, default=40)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--tests", type=int, default=20, help="test events per submission")
    args = ap.parse_args()
    url, server = start_server(Path(tempfile.mkdtemp(prefix="web-load-")))
    pool = ThreadPoolExecutor(16)
    with httpx.Client(base_url=url, timeout=60) as c:
        for path in ("/", "/problems/padding-collate", "/api/problems", "/leaderboard"):
            ms = list(pool.map(lambda _, p=path: timed(c, "GET", p), range(200)))
            print(line(f"GET {path}", ms))

        def new_user(i: int) -> str:
            c.post("/api/users", json={"username": f"user{i}", "password": "password1"})
            r = c.post("/api/token", data={"username": f"user{i}", "password": "password1"})
            return r.json()["access_token"]

        t = time.perf_counter()
        tokens = list(pool.map(new_user, range(args.users)))
        print(f"{'register + token (argon2id)':<34} {args.users / (time.perf_counter() - t):.1f}"
              f" users/s")

        stop, done, delays = threading.Event(), [], []
        workers = [threading.Thread(target=fake_worker, args=(url, args.tests, stop, done))
                   for _ in range(args.workers)]
        for w in workers:
            w.start()
        submit_ms: list[float] = []

        def learner(token: str) -> float:
            """Submit, then follow the stream at once, as the submission page does."""
            s = time.perf_counter()
            r = c.post("/api/submissions", json={"problem": "padding-collate", "code": CODE},
                       headers={"Authorization": f"Bearer {token}"})
            submit_ms.append((time.perf_counter() - s) * 1000)
            return follow(url, r.json()["id"], token, delays)

        t = time.perf_counter()
        spans = list(ThreadPoolExecutor(args.users).map(learner, tokens))
        elapsed = time.perf_counter() - t
        stop.set()
        print(line("POST /api/submissions", submit_ms))
        print(f"{'judged end to end (fake workers)':<34} {len(done) / elapsed:.1f} submissions/s"
              f" ({args.workers} workers, {args.tests} events each)")
        print(line("event: worker post -> SSE reader", delays))
        print(f"{'longest stream':<34} {max(spans):.1f} s")
    server.should_exit = True
    return 0


if __name__ == "__main__":
    sys.exit(main())
