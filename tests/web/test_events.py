"""The progress stream (``GET /api/submissions/{id}/events``): one JSON object per data:
line, queued with a position, the grader's events as they arrive, then done."""

from __future__ import annotations

import json
import threading
import time

import pytest

from tests.web.support import HIDDEN_MARK, fake_report, judge_next, make_user, progress_events
from tests.web.support import submit as api_submit

pytestmark = pytest.mark.both_databases  # each test on SQLite and on PostgreSQL


def read_stream(client, sid: int, headers: dict, lang: str = "zh",
                opened: threading.Event | None = None) -> list[dict]:
    """Every event of a submission's stream, until it ends. ``opened`` is set once the first
    event has arrived (so a test can act on the job only after the stream is attached)."""
    events = []
    with client.stream("GET", f"/api/submissions/{sid}/events?lang={lang}",
                       headers=headers) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        for line in r.iter_lines():
            if line.startswith("data:"):
                events.append(json.loads(line[5:]))
                if opened is not None:
                    opened.set()
    return events


def kinds(events: list[dict]) -> list[str]:
    return [e["event"] for e in events]


def test_a_finished_submission_replays_then_ends(client, alice, worker):
    sid = api_submit(client, alice).json()["id"]
    judge_next(worker, fake_report(passed=False))
    events = read_stream(client, sid, alice, "en")
    assert kinds(events) == ["start", "test", "test", "done"]
    assert events[0]["tests"] == [{"name": "example_small", "visibility": "public"},
                                  {"name": "large_values", "visibility": "hidden"}]
    hidden = events[2]["result"]
    assert hidden["verdict"] == "wrong_answer" and hidden["message"] == ""
    assert hidden["category"] == "large values"
    assert events[-1] == {"event": "done", "verdict": "wrong_answer", "passed": 1, "total": 2,
                          "ratio": None, "message": "hidden case large_values failed"}
    assert HIDDEN_MARK not in json.dumps(events)


def test_live_progress_in_order(client, alice, worker):
    sid = api_submit(client, alice).json()["id"]
    bob = make_user(client, "bob")
    api_submit(client, bob)  # bob's queued job is behind alice's
    report = fake_report(message="note <b>bold</b>", output="printed\n")
    events = progress_events(report)
    wid = worker.register("w", False, {})

    opened = threading.Event()

    def judge_slowly() -> None:
        assert opened.wait(timeout=20)  # the stream has shown the job as queued
        job = worker.claim(wid, False, 0)
        for event in events[:-1]:
            assert worker.events(job, [event])
            time.sleep(0.05)
        assert worker.result(job, report) == "stored"

    judge = threading.Thread(target=judge_slowly)
    judge.start()
    seen = read_stream(client, sid, alice, opened=opened)
    judge.join()
    assert seen[0] == {"event": "queued", "position": 0}
    assert kinds(seen[1:]) == ["start", "running", "test", "running", "test", "done"]
    public = seen[3]["result"]
    assert public["message"] == "note <b>bold</b>" and public["output"] == "printed\n"
    assert seen[-1]["verdict"] == "accepted" and seen[-1]["passed"] == 2


def _handed_out_again(client, alice, worker, clock, *, reader_keeps_up: bool) -> tuple:
    """A worker is lost after three events (test 0 shown with the first attempt's message)
    and the job is handed out again; the second attempt runs while a reader who saw the
    first attempt follows the stream. Returns (events seen, the second attempt's report)."""
    sid = api_submit(client, alice).json()["id"]
    wid = worker.register("w", False, {})
    lost = worker.claim(wid, False, 0)
    first = progress_events(fake_report(passed=False, message="first attempt"))[:3]
    assert worker.events(lost, first)
    clock.advance(31)
    report = fake_report()
    seen: list[dict] = []

    def second_attempt() -> None:
        job = worker.claim(wid, False, 0)
        assert job is not None and job.attempt == 2
        assert worker.events(job, progress_events(report)[:-1])
        deadline = time.monotonic() + 30
        while reader_keeps_up and time.monotonic() < deadline and not any(
                e["event"] == "start" for e in seen[len(first):]):
            time.sleep(0.01)  # the reader has seen the restart before the result comes
        assert worker.result(job, report) == "stored"

    retry = threading.Thread(target=second_attempt)
    with client.stream("GET", f"/api/submissions/{sid}/events", headers=alice) as r:
        for line in r.iter_lines():
            if line.startswith("data:"):
                seen.append(json.loads(line[5:]))
                if len(seen) == len(first):  # the reader has the first attempt's events
                    retry.start()
                    if not reader_keeps_up:
                        retry.join()  # all of it stored before the reader looks again
    retry.join()
    assert kinds(seen[:3]) == ["start", "running", "test"]
    return seen, report


def test_the_stream_follows_a_job_that_is_handed_out_again(client, alice, worker, clock):
    """The first attempt's events are dropped with its lease, the second attempt's are
    stored (on SQLite, ids freed by that delete must not be used again). A reader who saw
    the first attempt gets all of the second one, from its start."""
    seen, report = _handed_out_again(client, alice, worker, clock, reader_keeps_up=True)
    restart = max(i for i, e in enumerate(seen) if e["event"] == "start")
    assert restart >= 3, kinds(seen)
    assert kinds(seen[restart:]) == [*kinds(progress_events(report)[:-1]), "done"], kinds(seen)
    assert seen[-1]["verdict"] == "accepted" and seen[-1]["passed"] == 2


def test_a_reader_who_missed_the_second_attempt_ends_with_its_results(client, alice, worker,
                                                                       clock):
    """The second attempt was judged and stored before the reader looked again (its events
    cleared with the result): the reader still ends with every test as the stored report
    has it, never with the first attempt's, whichever of the two it caught."""
    seen, _ = _handed_out_again(client, alice, worker, clock, reader_keeps_up=False)
    last = {e["index"]: e for e in seen if e["event"] == "test"}
    assert sorted(last) == [0, 1]
    assert all(e["result"]["verdict"] == "accepted" for e in last.values()), last
    assert "first attempt" not in json.dumps(last[0]), last[0]
    assert seen[-1]["event"] == "done" and seen[-1]["verdict"] == "accepted"


def test_the_stream_speaks_the_readers_language(client, alice, worker):
    sid = api_submit(client, alice).json()["id"]
    judge_next(worker)
    zh = read_stream(client, sid, alice, "zh")
    en = read_stream(client, sid, alice, "en")
    assert zh[1]["result"]["category"] == "样例" and en[1]["result"]["category"] == "example"


def test_a_cuda_case_skipped_on_a_cpu_worker_is_not_counted(client, alice, worker):
    """A worker without a GPU skips CUDA cases: an accepted submission reads 1 / 1, not
    1 / 2, in the stream, the API and the history."""
    sid = api_submit(client, alice).json()["id"]
    report = fake_report(passed=True)
    from judge.report import NEEDS_CUDA

    report["tests"][1].update(verdict="skipped", message=NEEDS_CUDA.en,
                              messages=NEEDS_CUDA.as_dict(), skip="needs_cuda")
    judge_next(worker, report)
    done = read_stream(client, sid, alice, "en")[-1]
    assert (done["verdict"], done["passed"], done["total"]) == ("accepted", 1, 1)
    shown = client.get(f"/api/submissions/{sid}", headers=alice).json()
    assert (shown["passed"], shown["total"], shown["skipped"]) == (1, 1, 1)
    assert shown["tests"][1]["verdict"] == "skipped"
