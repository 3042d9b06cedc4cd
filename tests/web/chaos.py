"""The fault run of bench/chaos.py (and, shorter, tests/web/test_deployment.py): a burst of
submissions of padding-collate (accepted and wrong_answer fixtures mixed) from many API
clients against a :class:`tests.web.deployment.Deployment`, while workers are SIGKILLed in
the middle of judging, a web process is SIGKILLed and started again, and PostgreSQL is
restarted. Then it counts what a learner would notice:

- **lost**: an intended submission without a final verdict (never stored, or not done);
- **duplicated**: an intended submission stored twice (a retried POST whose first try was
  stored after all), or a result the server stored twice (two ``(stored)`` lines in the
  workers' logs for one submission, or more than one finished job for it);
- **wrong verdicts**: an accepted fixture not accepted, a wrong_answer one not
  wrong_answer (an ``internal_error`` made of a database restart counts here);
- **stuck**: a job still ``running`` well after its lease expired (sampled every second),
  or any job not done at the end;
- **unanswered**: health probes of a web process that got no HTTP answer at all, and the
  longest time no web process answered.

Clients retry transport errors and 5xx answers (a web process restarting, the database
restarting) on the other web process, as a load balancer would send them, at most
:data:`RETRY_S` per request."""

from __future__ import annotations

import random
import re
import statistics
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from sqlalchemy import create_engine, text

from tests.web.deployment import PROBLEM, Deployment
from tests.web.served import ROOT

RETRY_S = 60.0  # the longest one client request is retried
POLL_S = 1.5  # how often a client looks at its oldest pending submission
TAG = "# chaos submission {k}\n"
TAG_RE = re.compile(r"^# chaos submission (\d+)\n")
STORED_RE = re.compile(r"submission (\d+): (\w+) \((stored|duplicate|rejected)\)")


@dataclass(frozen=True)
class Plan:
    submissions: int = 200
    clients: int = 50
    worker_kills: int = 3
    web_restarts: int = 1
    db_restarts: int = 1
    restart_web: int = 0  # which web process is restarted (the workers' server by default)
    timeout_s: float = 900.0


@dataclass
class Outcome:
    submissions: int = 0
    lost: int = 0
    duplicated: int = 0
    wrong: list[str] = field(default_factory=list)
    stuck_running: int = 0
    not_done_jobs: int = 0
    judged_per_minute: float = 0.0
    latency_p50: float = 0.0
    latency_p95: float = 0.0
    faults: list[str] = field(default_factory=list)
    late_faults: int = 0
    orphans: int = 0
    client_retries: int = 0
    client_failures: int = 0
    unanswered: dict[str, int] = field(default_factory=dict)
    none_answered_s: float = 0.0
    results_logged: Counter = field(default_factory=Counter)
    attempts: Counter = field(default_factory=Counter)
    wall_s: float = 0.0

    def lines(self) -> list[str]:
        out = [f"submissions: {self.submissions}",
               f"lost: {self.lost}",
               f"duplicated: {self.duplicated}",
               f"wrong verdicts: {len(self.wrong)}" + (f" ({'; '.join(self.wrong[:5])})"
                                                      if self.wrong else ""),
               f"judgings per minute: {self.judged_per_minute:.1f}",
               f"submit->verdict p50: {self.latency_p50:.1f} s, p95: {self.latency_p95:.1f} s",
               f"stuck jobs: {self.stuck_running} running past their lease (sampled), "
               f"{self.not_done_jobs} not done at the end",
               f"web answered: no answer to {sum(self.unanswered.values())} health probes "
               f"({', '.join(f'{k} {v}' for k, v in self.unanswered.items())}); longest "
               f"time no web process answered: {self.none_answered_s:.1f} s",
               f"killed workers outlived by a process they started: {self.orphans}",
               f"client requests retried: {self.client_retries}, given up: "
               f"{self.client_failures}",
               "judging attempts per submission: " + ", ".join(
                   f"{n}: {c}" for n, c in sorted(self.attempts.items())),
               "results posted (workers' logs): " + ", ".join(
                   f"{k} {v}" for k, v in sorted(self.results_logged.items())),
               f"wall time: {self.wall_s:.0f} s"]
        return out + [f"fault: {f}" for f in self.faults]

    @property
    def ok(self) -> bool:
        return not (self.lost or self.duplicated or self.wrong or self.stuck_running
                    or self.not_done_jobs or self.client_failures or self.orphans)


def fixtures() -> list[tuple[str, str]]:
    """(code, expected verdict): padding-collate's accepted and wrong_answer fixtures,
    alternating, so that the burst mixes them."""
    root = ROOT / "problems" / PROBLEM / "submissions"
    good = sorted((root / "accepted").glob("*.py"))
    bad = sorted((root / "wrong_answer").glob("*.py"))
    mixed: list[tuple[str, str]] = []
    for i in range(max(len(good), len(bad))):
        mixed += [(good[i % len(good)].read_text(), "accepted"),
                  (bad[i % len(bad)].read_text(), "wrong_answer")]
    return mixed


class Client:
    """One learner's API client, retrying on the other web process when one fails."""

    def __init__(self, urls: list[str], index: int, counters: Counter) -> None:
        self.urls, self.index, self.counters = urls, index, counters
        self.http = httpx.Client(timeout=20)
        self.headers: dict[str, str] = {}

    def request(self, method: str, path: str, **kw: Any) -> httpx.Response:
        deadline, turn = time.monotonic() + RETRY_S, self.index
        while True:
            url = self.urls[turn % len(self.urls)] + path
            try:
                r = self.http.request(method, url, headers=self.headers, **kw)
                if r.status_code < 500:
                    return r
                why = f"{r.status_code}"
            except httpx.TransportError as e:
                why = type(e).__name__
            self.counters["retries"] += 1
            if time.monotonic() > deadline:
                self.counters["failures"] += 1
                raise RuntimeError(f"{method} {path}: still failing after {RETRY_S} s ({why})")
            turn += 1
            time.sleep(0.3 + random.random() * 0.4)

    def sign_up(self) -> None:
        name, password = f"chaos{self.index}", "password1"
        r = self.request("POST", "/api/users", json={"username": name, "password": password})
        assert r.status_code in (201, 409), r.text
        r = self.request("POST", "/api/token", data={"username": name, "password": password})
        r.raise_for_status()
        self.headers = {"Authorization": f"Bearer {r.json()['access_token']}"}

    def submit(self, k: int, code: str) -> int:
        r = self.request("POST", "/api/submissions",
                         json={"problem": PROBLEM, "code": TAG.format(k=k) + code})
        assert r.status_code == 202, r.text
        return int(r.json()["id"])

    def status(self, sid: int) -> str:
        r = self.request("GET", f"/api/submissions/{sid}")
        r.raise_for_status()
        return str(r.json()["status"])


class Watch:
    """Samples, every second until stopped: jobs running past their lease (plus the
    sweep's interval and a margin), and which web processes answer /healthz at all."""

    def __init__(self, dep: Deployment, lease_s: float) -> None:
        self.dep = dep
        self.engine = create_engine(dep.database_url, pool_pre_ping=True)
        self.grace = max(0.5, min(5.0, lease_s / 4)) + 3.0
        self.stuck: set[int] = set()
        self.unanswered: Counter = Counter()
        self.none_since: float | None = None
        self.none_max = 0.0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        while not self.stopping.wait(0.5):
            answered = False
            for i, url in enumerate(self.dep.urls):
                try:
                    httpx.get(f"{url}/healthz", timeout=3)
                    answered = True
                except httpx.HTTPError:
                    self.unanswered[f"web{i}"] += 1
            now = time.monotonic()
            if answered:
                self.none_since = None
            else:
                self.none_since = self.none_since or now
                self.none_max = max(self.none_max, now - self.none_since)
            try:
                with self.engine.connect() as conn:
                    rows = conn.execute(text(
                        "select id from jobs where status = 'running' and lease_expires_at"
                        " < (now() at time zone 'utc') - make_interval(secs => :g)"),
                        {"g": self.grace}).scalars().all()
                self.stuck.update(rows)
            except Exception:  # the database restarts: nothing to sample
                pass

    def close(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=10)
        self.engine.dispose()


class Faults:
    """Injects the plan's faults as the run progresses (by how many verdicts are in),
    each from a thread of its own: a slow web restart does not hold back the next fault."""

    def __init__(self, dep: Deployment, plan: Plan, done: Callable[[], int],
                 log: Callable[[str], None]) -> None:
        self.dep, self.plan, self.done, self.log = dep, plan, done, log
        self.engine = create_engine(dep.database_url, pool_pre_ping=True)
        self.record: list[str] = []
        self.started = time.monotonic()
        self.threads = [threading.Thread(target=self.run, args=(share, kind), daemon=True)
                        for share, kind in self.schedule()]
        self.errors: list[BaseException] = []
        self.lock = threading.Lock()
        self.late = 0  # faults that came when every verdict was in already

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def schedule(self) -> list[tuple[float, str]]:
        """Kill, web, kill, database, kill ...: spread over the first 80 % of verdicts."""
        kills = ["worker"] * self.plan.worker_kills
        others = ["web"] * self.plan.web_restarts + ["db"] * self.plan.db_restarts
        order: list[str] = []
        while kills or others:
            if kills:
                order.append(kills.pop())
            if others:
                order.append(others.pop(0))
        return [(0.8 * (i + 1) / (len(order) + 1), kind) for i, kind in enumerate(order)]

    def note(self, what: str, at: float | None = None, done: int | None = None) -> None:
        """A fault, with when it struck and how many verdicts were in then."""
        done = self.done() if done is None else done
        at = time.monotonic() if at is None else at
        line = (f"{at - self.started:6.1f} s  {what} "
                f"({done} of {self.plan.submissions} verdicts in)")
        with self.lock:
            self.record.append(line)
            self.late += done >= self.plan.submissions
        self.log(line)

    def run(self, share: float, kind: str) -> None:
        try:
            while self.done() < share * self.plan.submissions:
                time.sleep(0.1)
            getattr(self, f"_{kind}")()
        except BaseException as e:  # reported by the run, which fails then
            self.errors.append(e)

    def _worker(self) -> None:
        """SIGKILL a worker that is judging (its job has progress events), then start
        it again at once, like a supervisor."""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with self.engine.connect() as conn:
                row = conn.execute(text(
                    "select j.id, j.submission_id, w.name from jobs j join workers w on "
                    "w.id = j.worker_id where j.status = 'running' and exists (select 1 "
                    "from job_events e where e.job_id = j.id) order by random() limit 1"
                )).first()
            if row is not None:
                index = int(row.name.removeprefix("chaos-w"))
                at, done = time.monotonic(), self.done()
                clean = self.dep.kill_worker(index)
                fate = ("what it started died with it" if clean
                        else "A PROCESS IT STARTED OUTLIVED IT by 5 s")
                self.note(f"SIGKILLed worker {index} judging submission {row.submission_id} "
                          f"(job {row.id}); {fate}; started it again", at, done)
                return
            time.sleep(0.05)
        self.note("no worker was judging for 60 s: none killed")

    def _web(self) -> None:
        i, at, done = self.plan.restart_web, time.monotonic(), self.done()
        down = self.dep.restart_web(i)
        self.note(f"SIGKILLed web {i} and started it again: answering after {down:.1f} s",
                  at, done)

    def _db(self) -> None:
        at, done = time.monotonic(), self.done()
        took = self.dep.restart_database()
        self.note(f"restarted PostgreSQL (pg_ctl restart -m fast): {took:.1f} s", at, done)

    def close(self) -> None:
        for thread in self.threads:
            thread.join(timeout=300)
        self.engine.dispose()


def run(dep: Deployment, plan: Plan, *, lease_s: float,
        log: Callable[[str], None] = print) -> Outcome:
    """The burst with the faults; returns what it found (see the module docstring)."""
    started = time.monotonic()
    counters: Counter = Counter()
    clients = [Client(dep.urls, i, counters) for i in range(plan.clients)]
    with _pool(len(clients)) as pool:
        list(pool.map(lambda c: c.sign_up(), clients))
    log(f"{len(clients)} clients signed up ({time.monotonic() - started:.0f} s)")
    work = fixtures()
    expected = {k: work[k % len(work)][1] for k in range(plan.submissions)}
    share: list[list[int]] = [list(range(i, plan.submissions, plan.clients))
                              for i in range(plan.clients)]
    finished: set[int] = set()
    lock = threading.Lock()
    watch = Watch(dep, lease_s)
    watch.thread.start()
    faults = Faults(dep, plan, lambda: len(finished), log)
    faults.start()
    deadline = time.monotonic() + plan.timeout_s

    def learner(client: Client, ks: list[int]) -> None:
        sids = [client.submit(k, work[k % len(work)][0]) for k in ks]  # the burst
        for k, sid in zip(ks, sids, strict=True):
            while time.monotonic() < deadline:
                if client.status(sid) == "done":
                    with lock:
                        finished.add(k)
                    break
                time.sleep(POLL_S * (0.5 + random.random()))

    burst = time.monotonic()
    with _pool(len(clients)) as pool:
        futures = [pool.submit(learner, c, ks) for c, ks in zip(clients, share, strict=True)]
        errors = [f.exception() for f in futures]
    for c in clients:
        c.http.close()
    faults.close()
    watch.close()
    for e in errors:
        if e is not None:
            log(f"a client failed: {type(e).__name__}: {e}")
    if faults.errors:
        raise faults.errors[0]
    out = _count(dep, expected, lease_s)
    out.faults = sorted(faults.record)
    out.late_faults = faults.late
    out.orphans = dep.orphans
    out.stuck_running = len(watch.stuck)
    out.unanswered = dict(watch.unanswered)
    out.none_answered_s = watch.none_max
    out.client_retries = counters["retries"]
    out.client_failures = counters["failures"] + sum(e is not None for e in errors)
    out.wall_s = time.monotonic() - burst
    return out


def _pool(n: int):
    from concurrent.futures import ThreadPoolExecutor

    return ThreadPoolExecutor(max_workers=n)


def _count(dep: Deployment, expected: dict[int, str], lease_s: float) -> Outcome:
    engine = create_engine(dep.database_url)
    with engine.connect() as conn:
        subs = conn.execute(text("select id, code, status, verdict, created_at, judged_at "
                                 "from submissions")).all()
        jobs = conn.execute(text("select submission_id, status, attempts, finished_at "
                                 "from jobs")).all()
    engine.dispose()
    out = Outcome(submissions=len(expected))
    by_k: dict[int, list[Any]] = {}
    for s in subs:
        m = TAG_RE.match(s.code)
        if m:
            by_k.setdefault(int(m.group(1)), []).append(s)
    jobs_of: dict[int, list[Any]] = {}
    for j in jobs:
        jobs_of.setdefault(j.submission_id, []).append(j)
    out.not_done_jobs = sum(j.status != "done" for j in jobs)
    logged: dict[int, Counter] = {}
    for w in dep.workers:
        for sid, _verdict, status in STORED_RE.findall(w.text()):
            logged.setdefault(int(sid), Counter())[status] += 1
            out.results_logged[status] += 1
    latencies, first, last = [], None, None
    for k, want in expected.items():
        rows = by_k.get(k, [])
        if not rows or all(r.status != "done" for r in rows):
            out.lost += 1
            continue
        if len(rows) > 1:
            out.duplicated += 1
        s = rows[0]
        stored = logged.get(s.id, Counter())["stored"]
        done_jobs = [j for j in jobs_of.get(s.id, []) if j.status == "done"]
        if stored > 1 or len(done_jobs) > 1:
            out.duplicated += 1
        out.attempts[max((j.attempts for j in jobs_of.get(s.id, [])), default=0)] += 1
        if s.verdict != want:
            out.wrong.append(f"#{s.id} {s.verdict}, expected {want}")
        if s.judged_at is not None:
            latencies.append((s.judged_at - s.created_at).total_seconds())
            first = min(first or s.created_at, s.created_at)
            last = max(last or s.judged_at, s.judged_at)
    if latencies:
        ordered = sorted(latencies)
        out.latency_p50 = statistics.median(ordered)
        out.latency_p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    if first is not None and last is not None and last > first:
        out.judged_per_minute = len(latencies) / ((last - first).total_seconds() / 60)
    return out
