"""Workers on other machines, and faults, simulated on loopback (tests/web/deployment.py):
PostgreSQL, two web processes on two ports sharing it (as behind a load balancer), three
``python -m judge worker --server URL`` processes posting to web 0, each with its own
package cache and sandbox slot. One test, in phases, so that the processes start once:

1. a learner's stream on web 1 follows the events a worker posts to web 0: each exactly
   once, in order, within 1 s and with a median under 0.3 s (the streams' poll alone
   would take up to 1 s; the relay is web/pg_relay.py);
2. the real workers judge a submission made on web 1 and its stream there shows every
   test live; the workers downloaded the package into their own caches;
3. a short version of bench/chaos.py: a burst from API clients while a worker is
   SIGKILLed mid-judging, web 0 (the workers' server) is SIGKILLed and started again and
   PostgreSQL restarts; nothing lost, duplicated, wrong or stuck.
"""

from __future__ import annotations

import json
import statistics
import threading
import time

import httpx
import pytest

from judge.worker import WorkerClient
from tests.web import chaos, postgres
from tests.web.deployment import GPU_ONLY, PROBLEM, TOKEN, deployment
from tests.web.served import ROOT, SANDBOXED
from tests.web.support import passing_report, progress_events

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(postgres.binaries() is None,
                                 reason="PostgreSQL is not installed (scripts/setup.sh --test)")]

LEASE_S = 5.0
ACCEPTED = ROOT / f"problems/{PROBLEM}/submissions/accepted/pad_sequence.py"


def learner(url: str, name: str) -> dict[str, str]:
    assert httpx.post(f"{url}/api/users", json={"username": name, "password": "password1"},
                      timeout=30).status_code == 201
    token = httpx.post(f"{url}/api/token", data={"username": name, "password": "password1"},
                       timeout=30).json()["access_token"]
    return {"Authorization": f"Bearer {token}"}


def follow(url: str, sid: int, headers: dict, seen: list, attached: threading.Event) -> None:
    with httpx.stream("GET", f"{url}/api/submissions/{sid}/events", headers=headers,
                      timeout=120) as r:
        for line in r.iter_lines():
            if line.startswith("data:"):
                seen.append((json.loads(line[5:]), time.monotonic()))
                attached.set()


def stream_from_b_while_posting_to_a(dep) -> None:
    """Phase 1: a worker of our own posts to web 0, with gaps the poll could not hide. It
    says it has a GPU and judges the GPU-only problem, which the real workers (starting
    meanwhile, CPU only) never take."""
    a, b = dep.urls
    headers = learner(b, "phase1")
    report = passing_report(8, GPU_ONLY)
    events = progress_events(report)[:-1]
    with WorkerClient(a, TOKEN).http as http:
        worker = WorkerClient(a, TOKEN, http=http)
        wid = worker.register("phase1", True, {})  # before: GPU-only submissions need one
        r = httpx.post(f"{b}/api/submissions", headers=headers, timeout=30,
                       json={"problem": GPU_ONLY, "code": ACCEPTED.read_text()})
        assert r.status_code == 202, r.text
        sid = r.json()["id"]
        seen: list = []
        attached = threading.Event()
        reader = threading.Thread(target=follow, args=(b, sid, headers, seen, attached))
        reader.start()
        assert attached.wait(30)
        job = worker.claim(wid, True, 5)
        assert job is not None and job.submission_id == sid
        posted = []
        for event in events:
            time.sleep(0.1)
            assert worker.events(job, [event])
            posted.append(time.monotonic())
        time.sleep(0.1)
        assert worker.result(job, report) == "stored"
    reader.join(timeout=60)
    live = [(e, at) for e, at in seen if e["event"] not in ("queued", "done")]
    assert [(e["event"], e.get("index")) for e, _ in live] == \
        [(e["event"], e.get("index")) for e in events], "lost, duplicated or reordered"
    delays = [at - sent for (_, at), sent in zip(live, posted, strict=True)]
    assert max(delays) < 1.0 and statistics.median(delays) < 0.3, delays
    assert seen[-1][0]["event"] == "done"


def judged_by_real_workers(dep) -> None:
    """Phase 2: submitted and followed on web 1, judged by workers that talk to web 0."""
    b = dep.urls[1]
    headers = learner(b, "phase2")
    sid = httpx.post(f"{b}/api/submissions", headers=headers, timeout=30,
                     json={"problem": PROBLEM, "code": ACCEPTED.read_text()}).json()["id"]
    seen: list = []
    follow(b, sid, headers, seen, threading.Event())
    kinds = [e["event"] for e, _ in seen]
    assert "start" in kinds and kinds[-1] == "done", dep.logs()
    start = seen[kinds.index("start")][0]
    tests = [e for e, _ in seen if e["event"] == "test"]
    assert [e["index"] for e in tests] == list(range(start["total"]))
    assert seen[-1][0]["verdict"] == "accepted", dep.logs()
    # live, not replayed at the end: the first test arrived well before done
    first_test = next(at for e, at in seen if e["event"] == "test")
    assert seen[-1][1] - first_test > 0.02 or len(tests) == 1
    caches = [dep.folder / f"worker{i}" / "store" for i in range(len(dep.workers))]
    assert any(any(c.iterdir()) for c in caches if c.exists()), "no worker downloaded"


def test_two_web_processes_three_workers_and_faults(tmp_path):
    t0 = time.monotonic()

    def phase(name: str) -> None:
        print(f"{time.monotonic() - t0:5.1f} s  {name}", flush=True)

    settings = {"lease_seconds": str(LEASE_S), "submissions_per_minute": "100000",
                "submissions_in_flight": "100000", "claim_wait_seconds": "5"}
    with deployment(tmp_path / "deploy", settings=settings, wait_workers=False) as dep:
        phase("up")
        stream_from_b_while_posting_to_a(dep)
        phase("phase 1")
        dep.wait_workers()
        phase("workers up")
        judged_by_real_workers(dep)
        phase("phase 2")
        # web 1 restarts here (the learners' side; the workers keep judging through web
        # 0); bench/chaos.py restarts the workers' web process instead
        plan = chaos.Plan(submissions=16, clients=8, worker_kills=1, web_restarts=1,
                          db_restarts=1, restart_web=1, timeout_s=240)
        out = chaos.run(dep, plan, lease_s=LEASE_S, log=phase)
        phase("chaos")
        report = "\n".join(out.lines())
        assert out.ok, f"{report}\n{dep.logs()}"
        assert len(out.faults) == 3 and out.late_faults == 0, report
        assert out.none_answered_s < 5, report  # web 1 answered while web 0 restarted
        assert SANDBOXED or "SANDBOX DISABLED" in dep.workers[0].text()
