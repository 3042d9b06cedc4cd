"""The queue and the worker API: atomic claims, leases that expire and are handed out
again, results written once, late results refused, progress redacted on the way in."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import text

from judge.verdict import Verdict
from judge.worker_client import Fatal, WorkerClient
from tests.web.support import (
    HIDDEN_MARK,
    fake_report,
    judge_next,
    make_user,
    progress_events,
    rows,
    submit,
)
from web.data import queue, workers

pytestmark = pytest.mark.both_databases  # each test on SQLite and on PostgreSQL


def status(client, headers, sid) -> dict:
    return client.get(f"/api/submissions/{sid}", headers=headers).json()


def test_wrong_worker_token(client):
    with pytest.raises(Fatal):
        WorkerClient("", "wrong", http=client).register("w", False, {})
    r = client.post("/worker/claim", json={"worker_id": 1})
    assert r.status_code == 401 and r.json()["detail"] == "缺少或错误的评测机令牌"


def test_claim_hands_out_each_job_once(client, alice, worker):
    bob = make_user(client, "bob")
    a = submit(client, alice).json()["id"]
    b = submit(client, bob).json()["id"]
    wid = worker.register("w", False, {})
    first, second = worker.claim(wid, False, 0), worker.claim(wid, False, 0)
    assert {first.submission_id, second.submission_id} == {a, b}
    assert first.lease_token != second.lease_token
    assert worker.claim(wid, False, 0) is None
    assert status(client, alice, a)["status"] == "running"


def test_concurrent_claims_never_share_a_job(app, alice, client):
    for i in range(6):
        submit(client, make_user(client, f"user{i}"))
    wid = WorkerClient("", "worker-secret", http=client).register("w", False, {})
    got: list[int] = []
    lock = threading.Lock()

    def grab() -> None:
        with app.state.sessionmaker() as db:
            while (job := queue.claim(db, wid, False, app.state.clock(), 30)) is not None:
                with lock:
                    got.append(job.id)

    threads = [threading.Thread(target=grab) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(got) == list(range(1, 7))


def test_an_expired_lease_goes_back_to_the_queue_and_the_late_result_is_refused(
        client, alice, worker, clock):
    sid = submit(client, alice).json()["id"]
    wid = worker.register("slow", False, {})
    slow = worker.claim(wid, False, 0)
    assert worker.events(slow, progress_events(fake_report())[:2])
    clock.advance(31)  # the lease was 30 s and the slow worker never renewed it
    assert not worker.renew(slow)
    fast = worker.claim(wid, False, 0)
    assert fast.submission_id == sid and fast.attempt == 2
    assert worker.result(slow, fake_report(passed=False)) == "rejected"
    assert not worker.events(slow, progress_events(fake_report()))
    assert worker.result(fast, fake_report()) == "stored"
    assert worker.result(fast, fake_report()) == "duplicate"  # a retried post is harmless
    assert worker.result(slow, fake_report(passed=False)) == "rejected"
    final = status(client, alice, sid)
    assert final["verdict"] == "accepted"
    assert rows(client.app, "select count(*) from jobs where status = 'done'")[0][0] == 1


def test_renewing_keeps_the_lease(client, alice, worker, clock):
    submit(client, alice)
    wid = worker.register("w", False, {})
    job = worker.claim(wid, False, 0)
    for _ in range(4):
        clock.advance(20)
        assert worker.renew(job)
    assert worker.claim(wid, False, 0) is None
    assert worker.result(job, fake_report()) == "stored"


def test_a_job_that_keeps_losing_its_worker_ends_as_internal_error(client, alice, worker,
                                                                  clock):
    sid = submit(client, alice).json()["id"]
    wid = worker.register("w", False, {})
    for _ in range(queue.MAX_ATTEMPTS):
        assert worker.claim(wid, False, 0) is not None
        clock.advance(31)
    assert worker.claim(wid, False, 0) is None
    final = status(client, alice, sid)
    assert final["status"] == "done" and final["verdict"] == "internal_error"
    assert "worker was lost" in client.get(f"/api/submissions/{sid}?lang=en",
                                           headers=alice).json()["message"]
    assert submit(client, alice).status_code == 202  # no longer in flight


def test_release_requeues_at_once(client, alice, worker):
    sid = submit(client, alice).json()["id"]
    wid = worker.register("w", False, {})
    job = worker.claim(wid, False, 0)
    assert worker.release(job)
    assert status(client, alice, sid)["status"] == "queued"
    assert not worker.release(job)
    assert worker.claim(wid, False, 0).submission_id == sid


def test_gpu_jobs_go_to_gpu_workers_first(client, app, alice, worker):
    bob = make_user(client, "bob")
    cpu_sid = submit(client, alice).json()["id"]
    gpu_sid = submit(client, bob).json()["id"]
    with app.state.engine.begin() as conn:
        conn.execute(text(f"update jobs set needs_gpu = true where submission_id = {gpu_sid}"))
    cpu = worker.register("cpu", False, {})
    gpu = worker.register("gpu", True, {"devices": ["H200"]})
    assert worker.claim(gpu, True, 0).submission_id == gpu_sid
    assert worker.claim(cpu, False, 0).submission_id == cpu_sid
    submit(client, make_user(client, "carol"))
    with app.state.engine.begin() as conn:
        conn.execute(text("update jobs set needs_gpu = true where status = 'queued'"))
    assert worker.claim(cpu, False, 0) is None  # a CPU worker never takes a GPU job


def test_jobs_that_prefer_a_gpu_wait_for_one_while_a_gpu_worker_lives(client, app, alice,
                                                                     worker, clock):
    sid = submit(client, alice).json()["id"]
    with app.state.engine.begin() as conn:
        conn.execute(text("update jobs set prefers_gpu = true"))
    gpu = worker.register("gpu", True, {"devices": ["H200"]})
    cpu = worker.register("cpu", False, {})
    assert worker.claim(cpu, False, 0) is None  # the GPU worker is alive: leave it to it
    clock.advance(workers.GPU_WORKER_ALIVE_S + 1)  # the GPU worker went silent
    job = worker.claim(cpu, False, 0)
    assert job is not None and job.submission_id == sid
    assert gpu  # (registered, then never heard from)


def test_a_gpu_worker_renewing_a_long_job_stays_alive(client, app, alice, worker, clock):
    submit(client, alice)
    bob = make_user(client, "bob")
    submit(client, bob)
    with app.state.engine.begin() as conn:
        conn.execute(text("update jobs set prefers_gpu = true"))
    gpu = worker.register("gpu", True, {})
    cpu = worker.register("cpu", False, {})
    long_job = worker.claim(gpu, True, 0)
    for _ in range(10):
        clock.advance(20)
        assert worker.renew(long_job)
    assert worker.claim(cpu, False, 0) is None


def test_priority_then_first_come(client, app, worker):
    ids = [submit(client, make_user(client, f"u{i}")).json()["id"] for i in range(3)]
    with app.state.engine.begin() as conn:  # a rejudge (issue 6) will queue at a priority
        conn.execute(text(f"update jobs set priority = 5 where submission_id = {ids[2]}"))
    wid = worker.register("w", False, {})
    assert [worker.claim(wid, False, 0).submission_id for _ in ids] == [ids[2], ids[0], ids[1]]


def test_validations_go_after_live_submissions_and_before_rejudges(client, admin, alice,
                                                                   worker, tmp_path):
    """With one worker, a learner never waits behind an admin's validations (priorities:
    live 0, validation -5, rejudge -10)."""
    from tests.conftest import write_problem
    from tests.web.support import package_zip, upload

    old = submit(client, alice).json()["id"]
    judge_next(worker)
    r = client.post("/api/admin/problems/add-one/rejudge", headers=admin, json={})
    assert r.json() == {"queued": [old]}
    assert upload(client, package_zip(write_problem(tmp_path / "p"))).status_code == 303
    live = submit(client, make_user(client, "bob")).json()["id"]  # last to arrive
    wid = worker.register("w", False, {})
    order = [worker.claim(wid, False, 0) for _ in range(3)]
    assert [(job.kind, job.submission_id) for job in order] == [
        ("judge", live), ("validate", None), ("judge", old)]
    assert rows(client.app, "select kind, priority from jobs where status = 'running' "
                            "order by priority desc") == [
        ("judge", 0), ("validate", -5), ("judge", -10)]


def test_queue_position(client, worker):
    heads = [make_user(client, f"u{i}") for i in range(3)]
    ids = [submit(client, h).json()["id"] for h in heads]
    assert [status(client, h, s)["position"] for h, s in zip(heads, ids, strict=True)] == [0, 1, 2]
    judge_next(worker)
    assert status(client, heads[2], ids[2])["position"] == 1


def test_progress_is_redacted_when_it_arrives(client, app, alice, worker):
    sid = submit(client, alice).json()["id"]
    wid = worker.register("w", False, {})
    job = worker.claim(wid, False, 0)
    assert worker.events(job, progress_events(fake_report(passed=False))[:-1])
    stored = " ".join(str(r) for r in rows(app, "select payload from job_events"))
    assert HIDDEN_MARK not in stored and "99" not in stored  # the message, the seed
    running = status(client, alice, sid)
    assert running["status"] == "running"
    assert [t["verdict"] for t in running["tests"]] == ["accepted", "wrong_answer"]
    assert running["tests"][1]["message"] == ""


def test_malformed_events_and_reports_are_refused(client, alice, worker):
    sid = submit(client, alice).json()["id"]
    wid = worker.register("w", False, {})
    job = worker.claim(wid, False, 0)
    path = f"/worker/jobs/{job.job_id}"
    auth = {"Authorization": "Bearer worker-secret"}
    bad = client.post(f"{path}/events", headers=auth, json={
        "lease_token": job.lease_token, "events": [{"event": "test", "index": 0}]})
    assert bad.status_code == 422
    bad = client.post(f"{path}/events", headers=auth, json={
        "lease_token": job.lease_token,
        "events": [{"event": "start", "tests": [{"name": "a", "visibility": "secret"}]}]})
    assert bad.status_code == 422
    bad = client.post(f"{path}/result", headers=auth, json={
        "lease_token": job.lease_token, "report": {"verdict": "great"}})
    assert bad.status_code == 422
    assert status(client, alice, sid)["status"] == "running"  # nothing stored half-way
    assert worker.result(job, fake_report()) == "stored"


def test_claim_long_poll_wakes_when_a_submission_arrives(settings, clock, problems_root):
    from fastapi.testclient import TestClient

    from web.main import create_app

    settings.claim_wait_seconds = 10
    with TestClient(create_app(settings, clock=clock)) as client:
        worker = WorkerClient("", "worker-secret", http=client)
        wid = worker.register("w", False, {})
        alice = make_user(client, "alice")
        found = []
        waiter = threading.Thread(target=lambda: found.append(worker.claim(wid, False, 10)))
        import time

        started = time.monotonic()
        waiter.start()
        time.sleep(0.3)
        sid = submit(client, alice).json()["id"]
        waiter.join(timeout=10)
        assert found and found[0].submission_id == sid
        assert time.monotonic() - started < 3


def test_the_app_requeues_expired_leases_by_itself(settings, clock):
    import time

    from fastapi.testclient import TestClient

    from web.main import create_app

    settings.lease_seconds = 2  # the sweep runs every 0.5 s
    with TestClient(create_app(settings, clock=clock)) as client:
        worker = WorkerClient("", "worker-secret", http=client)
        alice = make_user(client, "alice")
        sid = submit(client, alice).json()["id"]
        worker.claim(worker.register("w", False, {}), False, 0)
        assert status(client, alice, sid)["status"] == "running"
        clock.advance(3)
        deadline = time.monotonic() + 15  # generous: a loaded CI machine, not a slow sweep
        while status(client, alice, sid)["status"] != "queued":
            assert time.monotonic() < deadline, "the lease never expired"
            time.sleep(0.1)


def test_a_validations_shards_take_each_file_once(app, client, admin, worker, tmp_path, clock):
    from tests.conftest import write_problem
    from tests.web.support import package_zip, upload
    from tests.web.test_admin import version_id

    first, second = (worker.register(name, False, {}) for name in ("one", "two"))
    vid = version_id(upload(client, package_zip(write_problem(tmp_path / "p"))))
    a, b = worker.claim(first, False, 0), worker.claim(second, False, 0)
    assert (a.kind, a.shard, a.shards, b.shard) == ("validate", 0, 2, 1) and a.version_id == vid
    assert worker.take(a, "reference") and not worker.take(b, "reference")
    assert worker.take(b, "starter") and not worker.take(a, "starter")
    assert worker.take(a, "reference")  # asking again: still this shard's

    # Many asking at once, as shards on PostgreSQL do (no lock orders them): one wins each.
    labels = [f"submissions/wrong_answer/{i}.py" for i in range(8)]
    won: dict[str, list[int]] = {label: [] for label in labels}

    def ask(job) -> None:
        with app.state.sessionmaker() as db:
            for label in labels:
                if queue.take_file(db, job.job_id, job.lease_token, app.state.clock(), label):
                    won[label].append(job.shard)

    threads = [threading.Thread(target=ask, args=(job,)) for job in (a, b, a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(len(set(shards)) == 1 for shards in won.values()), won

    # A shard handed out again (its worker stalled) takes its own files again, and a late
    # question from the stalled worker is refused like its other calls.
    clock.advance(29)
    assert worker.renew(b)
    clock.advance(2)
    again = worker.claim(first, False, 0)
    assert again.shard == 0 and again.attempt == 2
    assert worker.take(again, "reference") and not worker.take(again, "starter")
    bearer = {"Authorization": "Bearer worker-secret"}
    r = client.post(f"/worker/jobs/{a.job_id}/take", headers=bearer,
                    json={"lease_token": a.lease_token, "label": "reference"})
    assert r.status_code == 409
    r = client.post(f"/worker/jobs/{b.job_id}/take", headers=bearer,
                    json={"lease_token": b.lease_token, "label": ""})
    assert r.status_code == 422

    # Once the reference has failed, no shard takes anything more: the version is invalid.
    from judge.events import CheckedFile, FileChecked
    failed = CheckedFile("reference", "accepted", verdict=Verdict.RUNTIME_ERROR, ok=False)
    assert worker.events(again, [FileChecked(failed).to_json()])
    assert not worker.take(b, "submissions/accepted/x.py")
