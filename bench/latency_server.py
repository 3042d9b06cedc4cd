"""``python bench/latency.py --server``: submit-to-done latency as a learner sees it.

Starts ``python -m judge serve`` (the web app and its local workers, sandboxed) on a free
port with a fresh data folder and no rate limit, or uses a running server (``--url``; it
registers a user there, so registration must be open), then submits each problem's
reference solution N times one after another, with its speed checks, and times each from
``POST /api/submissions`` to the ``done`` event of its stream. Printed per problem: p50 /
p95 / max, the verdicts, and from the stored reports the judging's own time and each speed
check's pairs (the rest is queueing, HTTP and the worker's hops). With ``--burst K`` it
also submits K at once (K users) and prints judgings per minute.
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ("padding-collate", "length-bucketing", "grad-accumulation")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(workers: int) -> tuple[str, subprocess.Popen]:
    """``judge serve`` with a data folder of its own and no rate limit."""
    port = free_port()
    data = tempfile.mkdtemp(prefix="latency-server-")
    env = {**os.environ, "JUDGE_SUBMISSIONS_PER_MINUTE": "100000",
           "JUDGE_SUBMISSIONS_IN_FLIGHT": "1000", "JUDGE_CLAIM_WAIT_SECONDS": "5"}
    proc = subprocess.Popen([sys.executable, "-m", "judge", "serve", "--port", str(port),
                             "--workers", str(workers), "--data-dir", data,
                             "--no-pack-prebuild"], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=open(Path(data) / "serve.log", "w"))  # noqa: SIM115 (open while it runs)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"judge serve exited ({proc.returncode}); see {data}/serve.log")
        try:
            if httpx.get(f"{url}/api/problems", timeout=2).status_code == 200:
                return url, proc
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    proc.terminate()
    raise SystemExit("judge serve did not start within 180 s")


def new_user(client: httpx.Client, name: str) -> str:
    client.post("/api/users", json={"username": name, "password": "latency-bench-1"})
    r = client.post("/api/token", data={"username": name, "password": "latency-bench-1"})
    r.raise_for_status()
    return r.json()["access_token"]


def submit_and_wait(client: httpx.Client, token: str, slug: str, code: str) -> dict[str, Any]:
    """POST, then read the submission's event stream to ``done``: seconds and the result."""
    headers = {"Authorization": f"Bearer {token}"}
    started = time.perf_counter()
    while True:
        r = client.post("/api/submissions", json={"problem": slug, "code": code},
                        headers=headers)
        if r.status_code != 429:
            break
        time.sleep(float(r.headers.get("Retry-After", "1")))
    r.raise_for_status()
    sid = r.json()["id"]
    phases = []
    with client.stream("GET", f"/api/submissions/{sid}/events", headers=headers,
                       timeout=600) as stream:
        for raw in stream.iter_lines():
            if raw.startswith("data:"):
                event = json.loads(raw[5:])
                if event.get("event") == "phase":
                    phases.append(event["phase"])
                if event.get("event") == "done":
                    break
    seconds = time.perf_counter() - started
    result = client.get(f"/api/submissions/{sid}", headers=headers).json()
    return {"seconds": seconds, "verdict": result.get("verdict"), "phases": phases,
            "throughput": result.get("throughput") or []}


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def report_problem(slug: str, runs: list[dict[str, Any]]) -> None:
    seconds = [r["seconds"] for r in runs]
    verdicts = sorted({str(r["verdict"]) for r in runs})
    pairs = [t.get("pairs") for r in runs for t in r["throughput"] if t.get("ratio") is not None]
    ratios = [t.get("ratio") for r in runs for t in r["throughput"] if t.get("ratio") is not None]
    print(f"{slug:22} n={len(runs):<3} submit->done p50 {statistics.median(seconds):6.2f} s  "
          f"p95 {pct(seconds, 0.95):6.2f} s  max {max(seconds):6.2f} s  verdicts "
          f"{', '.join(verdicts)}", flush=True)
    if pairs:
        print(f"{'':22} speed checks: pairs p50 {statistics.median(pairs):.0f} "
              f"(min {min(pairs)}, max {max(pairs)}), ratio {min(ratios):.3f}-{max(ratios):.3f}",
              flush=True)


def burst(url: str, slug: str, code: str, count: int) -> None:
    """``count`` learners submit at once; judgings per minute until the last is done."""
    with httpx.Client(base_url=url, timeout=60) as client:
        tokens = [new_user(client, f"burst{i}-{time.time_ns()}") for i in range(count)]
    started = time.perf_counter()

    def one(token: str) -> dict[str, Any]:
        with httpx.Client(base_url=url, timeout=60) as client:
            return submit_and_wait(client, token, slug, code)

    runs = list(ThreadPoolExecutor(count).map(one, tokens))
    elapsed = time.perf_counter() - started
    print(f"{slug:22} burst of {count}: {count / elapsed * 60:.1f} judgings/min "
          f"({elapsed:.1f} s), verdicts {sorted({str(r['verdict']) for r in runs})}",
          flush=True)


def run(slugs: list[str], runs: int, url: str | None, workers: int, burst_n: int) -> int:
    from judge.package import load_all

    problems = {p.slug: p for p in load_all()}
    proc = None
    if url is None:
        url, proc = start_server(workers)
        print(f"judge serve on {url} with {workers} worker(s)", flush=True)
    try:
        with httpx.Client(base_url=url, timeout=60) as client:
            token = new_user(client, f"latency{time.time_ns()}")
            for slug in slugs:
                code = problems[slug].read("reference.py")
                submit_and_wait(client, token, slug, code)  # warm-up: the worker's first job
                report_problem(slug, [submit_and_wait(client, token, slug, code)
                                      for _ in range(runs)])
        if burst_n:
            for slug in slugs:
                burst(url, slug, problems[slug].read("reference.py"), burst_n)
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
    return 0
