"""The busiest pages are computed once per change (web/page_cache.py) and several web
processes on one SQLite database wake each other (web/local_relay.py): what a learner
sees is never older than the last write this process heard of, nor than the cache's TTL."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time

import httpx
import pytest
from sqlalchemy import text

from tests.web.served import ROOT, free_port
from tests.web.support import fake_report, judge_next, make_user, submit
from web.local_relay import LocalRelay, relay_folder
from web.models import Submission
from web.page_cache import PageCache


class Ticks:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_value_is_kept_for_its_generation_and_its_ttl_only():
    ticks = Ticks()
    cache = PageCache(ttl=2.0, clock=ticks)
    built = []

    def build():
        built.append(len(built))
        return len(built)

    assert cache.get("k", build) == 1
    assert cache.get("k", build) == 1  # kept
    cache.changed()
    assert cache.get("k", build) == 2  # a write: rebuilt
    ticks.now = 2.5
    assert cache.get("k", build) == 3  # too old: rebuilt
    assert cache.get("other", build) == 4  # keys are separate
    assert cache.get("skip", build, keep=lambda v: False) == 5
    assert cache.get("skip", build, keep=lambda v: False) == 6  # never kept


def test_a_commit_writing_submissions_starts_a_generation_and_one_writing_events_does_not(
        app, client, alice):
    cache = app.state.page_cache
    sid = submit(client, alice).json()["id"]
    before = cache.generation
    with app.state.sessionmaker() as db:  # a progress event: not shown by cached pages
        db.execute(text("select 1"))
        db.commit()
    assert cache.generation == before
    with app.state.sessionmaker() as db:
        db.get(Submission, sid).verdict = "accepted"
        db.commit()
    assert cache.generation == before + 1
    with app.state.sessionmaker() as db:  # a bulk UPDATE counts too
        from sqlalchemy import update

        db.execute(update(Submission).where(Submission.id == sid).values(passed=1))
        db.commit()
    assert cache.generation == before + 2


@pytest.mark.both_databases
def test_pages_show_a_new_verdict_at_once_though_they_are_cached(app, client, alice, worker):
    """The leaderboard, the acceptance rate and the submission's status are cached, and a
    stored verdict, then a rejudge, still show at the next read."""
    app.state.page_cache.ttl = 3600  # only the generation can refresh them here
    assert "alice" not in client.get("/leaderboard").text
    stats = client.get("/api/problems").json()[0]
    sid = submit(client, alice).json()["id"]
    assert client.get(f"/api/submissions/{sid}", headers=alice).json()["status"] == "queued"
    judge_next(worker, fake_report(passed=True))
    assert "alice" in client.get("/leaderboard").text
    assert client.get("/api/problems").json()[0]["acceptance"] != stats["acceptance"]
    done = client.get(f"/api/submissions/{sid}", headers=alice).json()
    assert (done["status"], done["verdict"]) == ("done", "accepted")
    # someone else may not read it, even though its view is cached
    bob = make_user(client, "bob")
    assert client.get(f"/api/submissions/{sid}", headers=bob).status_code == 404


def test_local_relay_carries_wake_ups_between_processes_and_forgets_dead_ones(tmp_path):
    folder = tmp_path / "relay"
    got: list = []
    woke_all = threading.Event()
    a = LocalRelay(folder, lambda k: None, lambda: None, name="a")
    b = LocalRelay(folder, got.append, woke_all.set, name="b")
    a.start()
    b.start()
    try:
        assert woke_all.wait(5), "a relay wakes its waiters once when it starts listening"
        (folder / "dead.sock").touch()  # a process that died without cleaning up
        a.peers_at = 0.0
        a.publish(("submission", 7))
        a.publish("page-cache")
        deadline = time.monotonic() + 5
        while len(got) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert got == [("submission", 7), "page-cache"]
        assert not (folder / "dead.sock").exists()
    finally:
        a.stop()
        b.stop()
    assert not list(folder.glob("*.sock"))


def test_the_relay_folder_fits_a_socket_path(tmp_path):
    assert relay_folder(tmp_path) == (tmp_path / "relay").resolve()
    deep = tmp_path / ("x" * 120)
    short = relay_folder(deep)
    assert len(str(short / "4194304.sock")) <= 100
    assert relay_folder(deep) == short  # every process finds the same one


@pytest.mark.slow
def test_several_web_processes_on_sqlite_see_each_others_writes(tmp_path):
    """``serve --web-processes 2``: a verdict posted to one process shows on every
    process's leaderboard at once (cache TTL one hour: only the relay can tell them)."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUDGE_")}
    env.update(JUDGE_WORKER_TOKEN="tok", JUDGE_SECRET_KEY="k", JUDGE_PAGE_CACHE_SECONDS="3600")
    log = open(tmp_path / "serve.log", "wb")  # noqa: SIM115 (open while the server runs)
    proc = subprocess.Popen([sys.executable, "-m", "judge", "serve", "--port", str(port),
                             "--workers", "0", "--web-processes", "2", "--no-sandbox",
                             "--data-dir", str(tmp_path / "data"), "--no-pack-prebuild"],
                            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, (tmp_path / "serve.log").read_text()
            try:
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "serve did not answer"
            time.sleep(0.2)
        for _ in range(40):  # fresh connections: both processes answer, and cache the board
            r = httpx.get(f"{url}/leaderboard")
            assert r.status_code == 200 and "carol" not in r.text
        from judge.worker_client import WorkerClient
        with httpx.Client(base_url=url) as c:
            c.post("/api/users", json={"username": "carol", "password": "password1"})
            token = c.post("/api/token", data={"username": "carol", "password": "password1"}
                           ).json()["access_token"]
            c.post("/api/submissions", json={"problem": "padding-collate", "code": "x = 1"},
                   headers={"Authorization": f"Bearer {token}"}).raise_for_status()
        worker = WorkerClient(url, "tok")
        try:
            job = worker.claim(worker.register("t", False, {}), False, 5)
            report = fake_report(passed=True)
            report["problem"] = "padding-collate"
            assert worker.result(job, report) == "stored"
        finally:
            worker.http.close()
        time.sleep(0.5)  # a datagram's way
        boards = [httpx.get(f"{url}/leaderboard").text for _ in range(40)]
        assert all("carol" in b for b in boards), "a process kept the board of before"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
    assert re.search(rb"Started parent process|Started server process",
                     (tmp_path / "serve.log").read_bytes())


def test_while_one_reader_rebuilds_an_old_value_the_others_get_it_instead_of_rebuilding():
    ticks = Ticks()
    cache = PageCache(ttl=2.0, clock=ticks)
    assert cache.get("board", lambda: "v1") == "v1"
    ticks.now = 5.0  # expired
    started, release = threading.Event(), threading.Event()
    builds = []

    def slow() -> str:
        builds.append(1)
        started.set()
        release.wait(5)
        return "v2"

    first = threading.Thread(target=lambda: builds.append(cache.get("board", slow)))
    first.start()
    assert started.wait(5)
    assert cache.get("board", slow) == "v1"  # no second build: the previous value
    release.set()
    first.join(5)
    assert cache.get("board", slow) == "v2" and builds.count(1) == 1
    assert cache.get("new", lambda: "n") == "n"  # nothing to fall back on: built at once
