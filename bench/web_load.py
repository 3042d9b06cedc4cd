"""Web capacity: requests per second and tail latency of the pages learners load most, with
the server in one process and the clients in another, as in a real deployment.

    python bench/web_load.py [--db sqlite|postgres] [--web-processes N] [--rate R]
                             [--seconds 10] [--clients 50] [--users 50]
                             [--client raw|httpx|raw,httpx] [--judging R] [--unranked]
                             [--no-response-cache] [--env JUDGE_X=V ...] [ENDPOINT ...]

Starts ``python -m judge serve --workers 0`` (no judging on the machine) on a fresh data
folder, on SQLite or on a throwaway PostgreSQL cluster (tests/web/postgres.py), with N
uvicorn processes (``--web-processes``). It seeds ``--users`` learners, each with one
accepted padding-collate submission whose leaderboard timing is done too (a fake worker
posts the verdicts and the rank jobs' results, with a speed ratio each, so the leaderboard
has rows; ``--unranked`` leaves the timings pending), logs each of them in (a session
cookie), takes a bearer token for each, and an anonymous visitor's cookie.

Then, for each endpoint in turn, a separate client process (``--drive``) keeps
``--clients`` keep-alive connections busy for ``--seconds`` (after a second of warm-up
that is not counted): closed loop by default (each connection sends its next request
when answered: the most the server serves), or open loop at ``--rate`` requests a second
in all (latency counted from when each request was due; bench/http_load.py says how). It
prints requests per second, p50 and p99, the CPU the server's processes spent per request
(user + system, from /proc: load-insensitive, unlike the latencies), the client's own CPU
per request, the load average and the errors. Endpoints: ``problem``
(/problems/padding-collate as a logged-in learner, each client its own), ``problem-anon``
(as a visitor), ``leaderboard``, ``leaderboard-anon``, ``status`` (GET /api/submissions/ID
with each client's token, its own submission), ``api-problems`` (/api/problems),
``healthz``. ``--judging R`` stores R verdicts a second while each endpoint is measured,
so that the caches meet changes as when workers are busy.

The client and the server share this machine's cores: the figures are what the server
serves while the client also runs, a floor for a server on its own machine.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import http_load
import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# (path, who asks): "cookie" a logged-in learner (each client its own), "visitor" an
# anonymous browser with the session cookie its first page gave it, "token" the learner's
# bearer token, None a client that sends no credentials
ENDPOINTS = {
    "problem": ("/problems/padding-collate", "cookie"),
    "problem-anon": ("/problems/padding-collate", "visitor"),
    "leaderboard": ("/leaderboard", "cookie"),
    "leaderboard-anon": ("/leaderboard", "visitor"),
    "status": ("/api/submissions/{sid}", "token"),
    "api-problems": ("/api/problems", None),
    "healthz": ("/healthz", None),  # a floor: one "select 1", no page
}
TOKEN = "web-load-worker"
PROBLEM = "padding-collate"
CODE = "def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side='right'):\n    ...\n"
PASSWORD = "password1"


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


# --- the client process -------------------------------------------------------------------

def who_sends(endpoint: str, who: dict) -> tuple[str, dict[str, str]]:
    """The request target and the headers a client acting as ``who`` sends."""
    path, auth = ENDPOINTS[endpoint]
    headers = {}
    if auth == "token":
        headers["Authorization"] = f"Bearer {who['token']}"
    elif auth in ("cookie", "visitor"):
        jar = who["cookies" if auth == "cookie" else "visitor"]
        headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in jar.items())
    return path.format(sid=who["sid"]), headers


async def drive_httpx(url: str, endpoint: str, clients: int, seconds: float,
                      identities: list[dict], rate: float = 0.0) -> dict:
    """The first driver (``--client httpx``): one httpx.AsyncClient per client, with the
    same closed and open loops as bench/http_load.py (whose docstring says how)."""
    interval = clients / rate if rate else 0.0
    latencies: list[float] = []
    errors: dict[str, int] = {}
    sent = [0]
    sessions = []
    for i in range(clients):  # made before the clock starts (each builds an SSL context)
        target, headers = who_sends(endpoint, identities[i % len(identities)])
        sessions.append((target, httpx.AsyncClient(base_url=url, headers=headers, timeout=30)))
    start = time.perf_counter()
    warm_until = start + 1.0
    stop_at = warm_until + seconds

    async def one(i: int) -> None:
        target, client = sessions[i]
        due = start + interval * i / clients
        while (now := time.perf_counter()) < stop_at:
            if interval:
                if due > now:
                    await asyncio.sleep(due - now)
                now, due = due, due + interval
            try:
                r = await client.get(target)
                key = None if r.status_code == 200 else str(r.status_code)
            except httpx.HTTPError as e:
                key = type(e).__name__
            took = time.perf_counter() - now
            sent[0] += 1
            if now < warm_until:
                continue
            if key is None:
                latencies.append(took * 1000)
            else:
                errors[key] = errors.get(key, 0) + 1
        await client.aclose()

    cpu = http_load.cpu_s()
    await asyncio.gather(*(one(i) for i in range(clients)))
    return {"latencies": latencies, "errors": errors, "sent": sent[0],
            "client_cpu_s": http_load.cpu_s() - cpu}


def drive(url: str, endpoint: str, args: argparse.Namespace, identities: list[dict],
          client: str) -> dict:
    """One endpoint's run in this (the client) process, summed up."""
    if client == "httpx":
        r = asyncio.run(drive_httpx(url, endpoint, args.clients, args.seconds, identities,
                                    args.rate))
    else:
        host, port = url.removeprefix("http://").rsplit(":", 1)
        requests = [http_load.request_bytes(f"{host}:{port}", *who_sends(endpoint, who))
                    for who in identities]
        r = http_load.run(host, int(port), requests, args.clients, args.seconds, args.rate)
    latencies = r["latencies"]
    return {"endpoint": endpoint, "requests": len(latencies), "seconds": args.seconds,
            "rps": len(latencies) / args.seconds, "all": r["sent"],
            "p50": pct(latencies, 0.5), "p99": pct(latencies, 0.99), "errors": r["errors"],
            "client_cpu_ms": r["client_cpu_s"] * 1000 / max(1, r["sent"])}


# --- the server ----------------------------------------------------------------------------

def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def database(kind: str) -> Iterator[str | None]:
    if kind == "sqlite":
        yield None
        return
    from tests.web import postgres

    bin_dir = postgres.binaries()
    if bin_dir is None:
        sys.exit("PostgreSQL is not installed (scripts/setup.sh --test installs it)")
    with postgres.cluster(bin_dir) as cluster:
        yield cluster.url("postgres")


def wait_healthy(url: str, proc: subprocess.Popen, log: Path) -> None:
    """Until the server's /healthz answers 200; exits with its log if it dies or is mute."""
    deadline = time.monotonic() + 120
    while True:
        if proc.poll() is not None:
            sys.exit(f"the server exited:\n{log.read_text()[-3000:]}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return
        if time.monotonic() > deadline:
            sys.exit("the server did not answer in 120 s")
        time.sleep(0.2)


@contextlib.contextmanager
def server(folder: Path, db_url: str | None, processes: int, workers: int = 0,
           env_extra: dict[str, str] | None = None) -> Iterator[tuple[str, int]]:
    """``judge serve`` on a free port, its log in ``folder``: (URL, pid) once healthy."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUDGE_")}
    # (rank runs unspaced: the seed posts every run of every ranking at once)
    env.update(JUDGE_WORKER_TOKEN=TOKEN, JUDGE_SECRET_KEY="web-load",
               JUDGE_SUBMISSIONS_PER_MINUTE="100000", JUDGE_SUBMISSIONS_IN_FLIGHT="100000",
               JUDGE_RANK_SPACING_SECONDS="0")
    if db_url:
        env["JUDGE_DATABASE_URL"] = db_url
    env.update(env_extra or {})
    with open(folder / "server.log", "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "judge", "serve", "--port", str(port), "--workers",
             str(workers), "--data-dir", str(folder / "data"), "--no-pack-prebuild",
             *(["--web-processes", str(processes)] if processes > 1 else [])],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        try:
            wait_healthy(url, proc, folder / "server.log")
            yield url, proc.pid
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()


def seed(url: str, users: int, ranked: bool = True) -> list[dict]:
    """Learners with one accepted, speed-checked submission each (its leaderboard timing
    done too unless ``ranked`` is False: then its ranking stays pending, as with no
    worker); each one's token, session cookie, and a visitor's cookie (an anonymous
    browser after its first page: the language form's CSRF session)."""
    identities = []
    with httpx.Client(base_url=url, timeout=60) as c:
        for i in range(users):
            name = f"learner{i}"
            c.post("/api/users", json={"username": name, "password": PASSWORD}).raise_for_status()
            token = c.post("/api/token", data={"username": name, "password": PASSWORD}
                           ).json()["access_token"]
            sid = c.post("/api/submissions", json={"problem": PROBLEM, "code": CODE},
                         headers={"Authorization": f"Bearer {token}"}).json()["id"]
            identities.append({"name": name, "token": token, "sid": sid})
    fake_worker(url, users, refined=False)  # the verdicts
    if ranked:
        fake_worker(url, users, refined=True, every=True)  # every run of their rankings
    for who in identities:
        with httpx.Client(base_url=url, timeout=60) as c:
            html = c.get("/login").text
            csrf = re.search(r'name="csrf_token" value="([^"]+)"', html).group(1)
            r = c.post("/login", data={"username": who["name"], "password": PASSWORD,
                                       "csrf_token": csrf})
            if r.status_code not in (200, 303):
                sys.exit(f"logging in {who['name']} failed: {r.status_code}")
            who["cookies"] = dict(c.cookies)
        with httpx.Client(base_url=url, timeout=60) as c:
            c.get("/leaderboard").raise_for_status()
            who["visitor"] = dict(c.cookies)
    return identities


def fake_worker(url: str, jobs: int, refined: bool, every: bool = False) -> None:
    """Claim ``jobs`` jobs and post an accepted report with a speed ratio for each (a rank
    job's report: ``refined``); with ``every``, go on while jobs come (a ranking's later
    runs, queued as the one before is stored)."""
    from judge.worker_client import WorkerClient

    worker = WorkerClient(url, TOKEN)
    wid = worker.register("web-load", False, {})
    n = 0
    while n < jobs or every:
        job = worker.claim(wid, False, 5.0 if n < jobs else 1.0)
        if job is None:
            if n < jobs:
                sys.exit(f"only {n} of {jobs} jobs could be claimed")
            return
        ratio = 0.8 + 0.4 * (job.submission_id % jobs) / jobs
        worker.result(job, verdict_report(job.problem, ratio, refined))
        n += 1


@contextlib.contextmanager
def judging(url: str, rate: float, name: str) -> Iterator[list[int]]:
    """While inside: another learner submits ``rate`` times a second and a fake worker
    judges each at once (no speed check: no rank job), so that every cache of the server
    meets new generations as on a busy evening: a submission, its claim and its verdict
    each write ``submissions``. Yields the count of verdicts stored so far."""
    done = [0]
    if not rate:
        yield done
        return
    from judge.worker_client import WorkerClient

    stop = threading.Event()
    with httpx.Client(base_url=url, timeout=60) as c:
        c.post("/api/users", json={"username": name, "password": PASSWORD}).raise_for_status()
        token = c.post("/api/token", data={"username": name, "password": PASSWORD}
                       ).json()["access_token"]
        worker = WorkerClient(url, TOKEN)
        wid = worker.register("web-load-busy", False, {})

        def loop() -> None:
            due = time.monotonic()
            while not stop.wait(max(0.0, due - time.monotonic())):
                due += 1 / rate
                c.post("/api/submissions", json={"problem": PROBLEM, "code": CODE},
                       headers={"Authorization": f"Bearer {token}"}).raise_for_status()
                job = worker.claim(wid, False, 5.0)
                if job is not None:
                    worker.result(job, verdict_report(job.problem))
                    done[0] += 1

        thread = threading.Thread(target=loop, name="judging", daemon=True)
        thread.start()
        try:
            yield done
        finally:
            stop.set()
            thread.join(30)


def verdict_report(problem: str, ratio: float | None = None, refined: bool = False) -> dict:
    """An accepted report as a worker posts it (with a speed check when ``ratio``)."""
    from judge.i18n import T
    from judge.report import Report, TestResult, ThroughputResult
    from judge.verdict import Verdict

    tests = [TestResult(f"case_{k}", "public" if k < 3 else "hidden", T("例", "case"),
                        Verdict.ACCEPTED, T.same(""), 1.0) for k in range(18)]
    speed = [] if ratio is None else [ThroughputResult(
        "collate", "cpu", Verdict.ACCEPTED, 0.25, ratio=ratio, pairs=40, sub_ms=2.5,
        ref_ms=2.5, refined=refined)]
    return Report(Verdict.ACCEPTED, problem, 0, "none", tests=tests,
                  throughput=speed).to_json("zh")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process and its descendants (uvicorn's processes)."""
    stats = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # after the name: state ppid ... utime (14th field of the line) stime (15th)
        stats[int(stat.parent.name)] = (int(fields[1]), int(fields[11]) + int(fields[12]))
    family, ticks = {pid}, 0
    for _ in range(4):  # serve -> uvicorn's supervisor -> its processes
        family |= {p for p, (ppid, _) in stats.items() if ppid in family}
    ticks = sum(stats[p][1] for p in family if p in stats)
    return ticks / os.sysconf("SC_CLK_TCK")


def run_client(url: str, endpoint: str, args: argparse.Namespace, ids_file: Path,
               server_pid: int, client: str) -> dict:
    with judging(url, args.judging, f"busy-{endpoint}-{client}") as verdicts:
        cpu = cpu_seconds(server_pid)
        result = drive_process(url, endpoint, args, ids_file, client)
        result["cpu_ms"] = (cpu_seconds(server_pid) - cpu) * 1000 / max(1, result["all"])
    result["verdicts"] = verdicts[0]
    return result


def drive_process(url: str, endpoint: str, args: argparse.Namespace, ids_file: Path,
                  client: str) -> dict:
    out = subprocess.run([sys.executable, __file__, "--drive", url, "--endpoint", endpoint,
                          "--clients", str(args.clients), "--seconds", str(args.seconds),
                          "--rate", str(args.rate), "--client", client,
                          "--identities", str(ids_file)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def summary(endpoint: str, r: dict, judging: float) -> str:
    errors = ", ".join(f"{k}: {v}" for k, v in r["errors"].items()) or "none"
    verdicts = f"   verdicts stored {r['verdicts']}" if judging else ""
    return (f"{endpoint:<16} {r['rps']:6.0f} req/s   p50 {r['p50']:6.1f} ms   "
            f"p99 {r['p99']:6.1f} ms   server CPU {r['cpu_ms']:5.2f} ms/req   "
            f"client CPU {r['client_cpu_ms']:4.2f} ms/req   "
            f"load {os.getloadavg()[0]:4.1f}   errors: {errors}{verdicts}")


def arguments() -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("endpoints", nargs="*", default=list(ENDPOINTS))
    ap.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite")
    ap.add_argument("--web-processes", type=int, default=1)
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--rate", type=float, default=0.0,
                    help="requests per second in all, open loop (default: closed loop, as "
                         "fast as the server answers)")
    ap.add_argument("--users", type=int, default=50)
    ap.add_argument("--client", type=lambda v: v.split(","), default=["raw"],
                    metavar="raw|httpx|raw,httpx",
                    help="raw: keep-alive asyncio streams, requests built once "
                         "(bench/http_load.py); httpx: one httpx.AsyncClient per client; "
                         "raw,httpx: each endpoint with each, on the same server")
    ap.add_argument("--unranked", action="store_true",
                    help="leave the seeded submissions' rankings pending (as with no worker: "
                         "their status is then read afresh on each request)")
    ap.add_argument("--no-response-cache", action="store_true",
                    help="JUDGE_RESPONSE_CACHE=0: every answer built (the page cache still on)")
    ap.add_argument("--judging", type=float, default=0.0, metavar="R",
                    help="while each endpoint is measured, store R verdicts a second (another "
                         "learner's submissions, judged by a fake worker): every cache meets "
                         "new generations, as when workers are busy")
    ap.add_argument("--env", action="append", default=[], metavar="JUDGE_X=V",
                    help="a setting for the server (web/README.md), e.g. "
                         "JUDGE_PAGE_CACHE_SECONDS=10; repeatable")
    ap.add_argument("--drive", metavar="URL", help=argparse.SUPPRESS)
    ap.add_argument("--endpoint", help=argparse.SUPPRESS)
    ap.add_argument("--identities", help=argparse.SUPPRESS)
    return ap, ap.parse_args()


def main() -> int:
    ap, args = arguments()
    if set(args.client) - {"raw", "httpx"}:
        ap.error("--client: raw, httpx or raw,httpx")
    if args.drive:
        identities = json.loads(Path(args.identities).read_text())
        print(json.dumps(drive(args.drive, args.endpoint, args, identities, args.client[0])))
        return 0
    unknown = set(args.endpoints) - set(ENDPOINTS)
    if unknown:
        ap.error(f"unknown endpoint(s) {sorted(unknown)}; known: {', '.join(ENDPOINTS)}")
    folder = Path(tempfile.mkdtemp(prefix="web-load-"))
    env = {"JUDGE_RESPONSE_CACHE": "0"} if args.no_response_cache else {}
    env.update(e.split("=", 1) for e in args.env)
    with database(args.db) as db_url, \
            server(folder, db_url, args.web_processes, env_extra=env) as (url, pid):
        ids_file = folder / "identities.json"
        ids_file.write_text(json.dumps(seed(url, args.users, ranked=not args.unranked)))
        load = f"open loop at {args.rate:g} req/s" if args.rate else "closed loop"
        print(f"{args.db}, {args.web_processes} web process(es), {args.clients} clients, "
              f"{load}, {args.seconds:g} s per endpoint (client in its own process)"
              f"{', response cache off' if args.no_response_cache else ''}"
              f"{f', {args.judging:g} verdicts/s stored meanwhile' if args.judging else ''}")
        for endpoint in args.endpoints:
            for client in args.client:
                r = run_client(url, endpoint, args, ids_file, pid, client)
                name = endpoint if args.client == ["raw"] else f"{endpoint} ({client})"
                print(summary(name, r, args.judging), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
