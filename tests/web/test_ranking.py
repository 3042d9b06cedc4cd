"""The leaderboard timing: an accepted verdict with a measured speed check queues a
``rank`` job at the lowest priority; its result fills in the refined ratio (never the
verdict); the leaderboard ranks refined ratios only and shows the rest as pending; the
submission page shows the timing (interval, times per kind of input, the pair plot) and
the ranking's progress. Fake workers post synthetic reports over the worker API."""

from __future__ import annotations

import json
import re

import pytest
from sqlalchemy import text

from tests.web.support import (
    browser_login,
    csrf,
    fake_report,
    judge_next,
    make_user,
    rows,
    speed_report,
    submit,
    visible,
    with_speed_check,
)
from web import timing
from web.data import queue

both = pytest.mark.both_databases


def jobs(app, sid: int) -> list[tuple]:
    return [tuple(r) for r in rows(app, f"select kind, status, priority from jobs where "
                                        f"submission_id = {sid} order by id")]


def ranking_of(app, sid: int) -> tuple:
    return tuple(rows(app, f"select verdict, ratio, rank_status, rank_ratio from submissions "
                           f"where id = {sid}")[0])


def claim_rank(worker, gpu: bool = False):
    wid = worker.register("ranker", gpu, {})
    job = worker.claim(wid, gpu, 0)
    assert job is not None and job.kind == "rank"
    return job


@both
def test_an_accepted_verdict_with_a_speed_check_queues_a_rank_job(client, app, alice, worker):
    sid = submit(client, alice).json()["id"]
    judge_next(worker, speed_report(0.81))
    assert jobs(app, sid) == [("judge", "done", 0), ("rank", "queued", -20)]
    assert ranking_of(app, sid) == ("accepted", 0.81, "pending", None)
    shown = client.get(f"/api/submissions/{sid}", headers=alice).json()
    assert shown["ranking"] == "pending" and shown["rank_ratio"] is None
    assert shown["ranking_progress"]["state"] == "queued"
    assert shown["ranking_progress"]["position"] == 0


@both
@pytest.mark.parametrize("case", ["rejected", "no speed check", "not measured"])
def test_no_rank_job_without_an_accepted_measured_speed_check(client, app, alice, worker,
                                                              case):
    sid = submit(client, alice).json()["id"]
    report = {"rejected": speed_report(0.9, verdict="too_slow"),
              "no speed check": fake_report(),
              "not measured": fake_report()}[case]
    if case == "not measured":  # a CUDA check a CPU worker skipped
        report["throughput"] = [{"name": "big", "device": "cuda", "verdict": "skipped",
                                 "min_ratio": 0.5, "ratio": None}]
    judge_next(worker, report)
    # (a skipped CUDA check queues the GPU follow-up judging, never a rank job)
    assert [j for j in jobs(app, sid) if j[0] == "rank"] == []
    assert ranking_of(app, sid)[2] is None


@both
def test_rank_jobs_are_handed_out_after_every_other_job(client, app, alice, worker):
    """Live submissions, validations and rejudges first, even for a GPU worker and a rank
    job that prefers a GPU: a full queue starves rankings, never the reverse."""
    first = submit(client, alice).json()["id"]
    judge_next(worker, speed_report(0.81))  # queues the rank job
    with app.state.engine.begin() as conn:
        conn.execute(text("update jobs set prefers_gpu = true where kind = 'rank'"))
    with app.state.sessionmaker() as db:
        version = db.execute(text("select id from problem_versions limit 1")).scalar()
        content_hash = db.execute(text("select problem_version from submissions")).scalar()
        assert queue.rejudge(db, "add-one", content_hash, app.state.clock(), ids=[first])
        db.execute(text(f"insert into jobs (kind, version_id, status, priority, needs_gpu, "
                        f"prefers_gpu, attempts, created_at) values ('validate', {version}, "
                        f"'queued', -5, false, false, 0, '2026-01-01')"))
        db.commit()
    bob = make_user(client, "bob")
    live = submit(client, bob).json()["id"]
    gpu = worker.register("gpu", True, {})
    handed = []
    while (job := worker.claim(gpu, True, 0)) is not None:
        handed.append((job.kind, job.submission_id))
    assert handed == [("judge", live), ("validate", None), ("judge", first), ("rank", first)]


@both
def test_a_rank_result_fills_in_the_ratio_and_never_the_verdict(client, app, alice, worker):
    sid = submit(client, alice).json()["id"]
    judged = speed_report(0.81)
    judge_next(worker, judged)
    job = claim_rank(worker)
    assert job.submission_id == sid and "def add_one" in job.code
    progress = client.get(f"/api/submissions/{sid}", headers=alice).json()["ranking_progress"]
    assert progress["state"] == "running" and progress["phase"] is None
    # (read again at once: a pending ranking's view is never served from the page cache)
    assert worker.events(job, [{"event": "phase", "phase": "ranking"},
                               {"event": "running", "name": "throughput:big"}])
    progress = client.get(f"/api/submissions/{sid}", headers=alice).json()["ranking_progress"]
    assert progress == {"state": "running", "position": None, "phase": "ranking",
                        "check": "throughput:big", "finished": 0, "run": 1, "runs": 1,
                        "not_before": None}
    # the ranking's result fills in the ranking; the verdict and the report stay
    assert worker.result(job, speed_report(0.7734, refined=True, verdict="accepted")) == "stored"
    assert ranking_of(app, sid) == ("accepted", 0.81, "done", 0.7734)
    shown = client.get(f"/api/submissions/{sid}", headers=alice).json()
    assert shown["verdict"] == "accepted" and shown["status"] == "done"
    assert shown["throughput"][0]["ratio"] == 0.81  # the verdict run's report stands
    assert shown["ranking"] == "done" and shown["rank_ratio"] == 0.7734
    [check] = shown["timing"]
    assert check["refined"] and check["ratio"] == 0.7734 and check["verdict"] == "accepted"
    assert check["interval"] == [round(0.7734 * 0.97, 4), round(0.7734 * 1.03, 4)]
    assert [k["kind"] for k in check["kinds"]] == ["short", "long"]
    assert len(check["pair_ratios"]) == 12


@both
def test_a_noisy_rank_run_leaves_the_verdict_and_records_the_failure(client, app, alice,
                                                                     worker, problems_root):
    with_speed_check(problems_root, app)
    sid = submit(client, alice).json()["id"]
    judge_next(worker, speed_report(0.81))
    job = claim_rank(worker)
    assert worker.result(job, speed_report(0.3, refined=True, verdict="too_slow")) == "stored"
    assert ranking_of(app, sid) == ("accepted", 0.81, "failed", None)
    browser_login(client, "alice")
    board = visible(client.get("/leaderboard").text)
    assert "alice 未能测速" in board and "0.81×" not in board and "0.30×" not in board
    page = visible(client.get(f"/submissions/{sid}").text)
    assert "排行榜测速没有成功" in page and "初步" in page


def test_a_rank_report_without_refined_checks_ranks_nothing(client, app, alice, worker):
    """A worker that does not know rank jobs judges it as usual: its rough ratio must not
    reach the leaderboard."""
    sid = submit(client, alice).json()["id"]
    judge_next(worker, speed_report(0.81))
    assert worker.result(claim_rank(worker), speed_report(0.9)) == "stored"
    assert ranking_of(app, sid) == ("accepted", 0.81, "failed", None)


def test_a_lost_rank_job_is_retried_then_given_up(client, app, alice, worker, clock):
    sid = submit(client, alice).json()["id"]
    judge_next(worker, speed_report(0.81))
    for attempt in range(1, queue.MAX_ATTEMPTS + 1):
        job = claim_rank(worker)
        assert job.attempt == attempt
        clock.advance(31)  # the lease (30 s) runs out
    assert worker.claim(worker.register("w", False, {}), False, 0) is None
    assert ranking_of(app, sid) == ("accepted", 0.81, "failed", None)
    assert jobs(app, sid)[-1][:2] == ("rank", "done")


@both
def test_a_rejudge_replaces_the_queued_rank_job(client, app, alice, worker):
    sid = submit(client, alice).json()["id"]
    judge_next(worker, speed_report(0.81))
    assert worker.result(claim_rank(worker), speed_report(0.8, refined=True)) == "stored"
    with app.state.sessionmaker() as db:
        version = db.execute(text("select problem_version from submissions")).scalar()
        assert queue.rejudge(db, "add-one", version, app.state.clock()) == [sid]
        db.commit()
    judge_next(worker, speed_report(0.9))  # the rejudge: accepted again
    assert ranking_of(app, sid) == ("accepted", 0.9, "pending", None)  # old ranking void
    # a stale rank job still running is dropped when a newer one was queued
    stale = claim_rank(worker)
    with app.state.sessionmaker() as db:
        assert queue.rejudge(db, "add-one", version, app.state.clock()) == [sid]
        db.commit()
    judge_next(worker, speed_report(0.95))
    assert worker.result(stale, speed_report(0.5, refined=True)) == "stored"
    assert ranking_of(app, sid) == ("accepted", 0.95, "pending", None)
    queued = [j for j in jobs(app, sid) if j[0] == "rank" and j[1] == "queued"]
    assert len(queued) == 1  # never two queued rank jobs for one submission
    assert worker.result(claim_rank(worker), speed_report(0.93, refined=True)) == "stored"
    assert ranking_of(app, sid) == ("accepted", 0.95, "done", 0.93)
    # a rejudge that is no longer accepted has no ranking at all
    with app.state.sessionmaker() as db:
        assert queue.rejudge(db, "add-one", version, app.state.clock()) == [sid]
        db.commit()
    judge_next(worker, fake_report(passed=False))
    assert ranking_of(app, sid)[2:] == (None, None)
    assert [j for j in jobs(app, sid) if j[1] == "queued"] == []


@both
def test_the_leaderboard_shows_pending_then_the_refined_ratio(client, app, alice, worker,
                                                              problems_root):
    with_speed_check(problems_root, app)
    browser_login(client, "alice")
    sid = submit(client, alice).json()["id"]
    judge_next(worker, speed_report(0.8123))
    board = visible(client.get("/leaderboard").text)
    assert "alice 测速中" in board and "0.81×" not in board  # never the rough number
    assert worker.result(claim_rank(worker), speed_report(0.7734, refined=True)) == "stored"
    board = visible(client.get("/leaderboard").text)
    assert "1 alice 0.77×" in board and "alice 测速中" not in board
    assert rows(app, f"select rank_ratio from submissions where id = {sid}")[0][0] == 0.7734


@both
def test_the_speed_boards_rank_each_users_best_refined_ratio_then_the_waiting(client, app):
    """web.data.standings.speed_boards: one query for every problem."""
    from web.data.standings import speed_boards
    from web.models import Submission, User

    names = ["ann", "ben", "cat", "dan", "eve"]
    for name in names:
        make_user(client, name)
    plan = [("ann", "accepted", "done", 0.9), ("ben", "accepted", "done", 1.2),
            ("ann", "accepted", "done", 1.2), ("ann", "accepted", "done", 1.2),
            ("cat", "accepted", "failed", None), ("cat", "accepted", "pending", None),
            ("dan", "accepted", "failed", None), ("eve", "accepted", "pending", None),
            ("eve", "accepted", "done", 0.5), ("dan", "wrong_answer", "done", 3.0),
            ("ben", "accepted", "done", 2.0)]
    with app.state.sessionmaker() as db:
        uid = {u.username: u.id for u in db.query(User)}
        subs = [Submission(user_id=uid[name], problem="add-one", problem_version="v",
                           code="", status="done", verdict=verdict, rank_status=state,
                           rank_ratio=ratio, created_at=app.state.clock())
                for name, verdict, state, ratio in plan]
        db.add_all(subs)
        db.commit()
        ids = [s.id for s in subs]
        boards = speed_boards(db, ["add-one", "elsewhere"])
    assert boards["add-one"] == ([("ben", 2.0, ids[10]), ("ann", 1.2, ids[2]),
                                  ("eve", 0.5, ids[8])],
                                 [("cat", "pending"), ("dan", "failed")])
    assert boards["elsewhere"] == ([], [])


def test_the_submission_page_shows_the_timing(client, app, alice, worker):
    """Provisional numbers (the verdict run's) while the ranking is pending, with its
    status; the refined ones after, each with the interval, the times per kind of input
    and the pair plot."""
    browser_login(client, "alice")
    sid = submit(client, alice).json()["id"]
    judge_next(worker, speed_report(0.8123, pairs=9))
    html = client.get(f"/submissions/{sid}").text
    page = visible(html)
    assert "初步" in page and "0.81×" in page and "区间 0.79–0.84×" in page
    assert "排行榜测速排队中（前面还有 0 个任务）" in page
    assert 'data-ranking="pending"' in html
    assert "short" in page and "1.25 ms" in page and "4.00 ms" in page
    assert html.count('class="pt"') == 9 and 'class="bar-line"' in html
    job = claim_rank(worker)
    assert worker.events(job, [{"event": "phase", "phase": "ranking"}])
    assert "正在为排行榜测速…" in visible(client.get(f"/submissions/{sid}").text)
    client.post("/lang", data={"lang": "en", "csrf_token": csrf(client)})
    assert "Measuring speed for the leaderboard…" in visible(
        client.get(f"/submissions/{sid}").text)
    assert worker.result(job, speed_report(0.7734, refined=True, pairs=30)) == "stored"
    html = client.get(f"/submissions/{sid}").text
    page = visible(html)
    assert "leaderboard timing" in page and "0.77×" in page and "provisional" not in page
    assert html.count('class="pt"') == 30 and "ranking-status" not in html


def test_an_old_report_without_the_new_keys_still_shows(client, app, alice, worker):
    browser_login(client, "alice")
    sid = submit(client, alice).json()["id"]
    report = fake_report()
    report["throughput"] = [{"name": "big", "device": "cpu", "ratio": 0.8123, "min_ratio": 0.5,
                             "verdict": "accepted", "sub_ms": 2.0, "ref_ms": 1.6}]
    judge_next(worker, report)
    html = client.get(f"/submissions/{sid}").text
    page = visible(html)
    assert "0.81×" in page and "全部输入" in page and "2.00 ms" in page
    assert "<svg" not in html and "区间" not in page


def test_phase_events_of_a_judging_show_on_the_page(client, app, alice, worker):
    browser_login(client, "alice")
    sid = submit(client, alice).json()["id"]
    wid = worker.register("w", False, {})
    job = worker.claim(wid, False, 0)
    assert worker.events(job, [{"event": "phase", "phase": "waiting_for_quiet_machine"}])
    shown = client.get(f"/api/submissions/{sid}", headers=alice).json()
    assert shown["status"] == "running" and shown["phase"] == "waiting_for_quiet_machine"
    assert "等待评测机空闲后再计时" in visible(client.get(f"/submissions/{sid}").text)
    r = client.post(f"/worker/jobs/{job.job_id}/events",
                    json={"lease_token": job.lease_token,
                          "events": [{"event": "phase", "phase": "napping"}]},
                    headers=worker.headers)
    assert r.status_code == 422 and "napping" in r.text


def read_ranking_stream(client, sid: int, headers: dict) -> list[dict]:
    with client.stream("GET", f"/api/submissions/{sid}/ranking/events",
                       headers=headers) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        return [json.loads(line[5:]) for line in r.iter_lines() if line.startswith("data:")]


def test_the_ranking_stream(client, app, alice, worker):
    from web.streams import ranking_snapshot

    sid = submit(client, alice).json()["id"]
    judge_next(worker, speed_report(0.81))
    job = claim_rank(worker)
    assert worker.events(job, [{"event": "phase", "phase": "measuring"}])
    assert ranking_snapshot(app.state.sessionmaker, sid, app.state.clock) == {
        "event": "ranking", "state": "running", "position": None, "phase": "measuring",
        "check": None, "finished": 0, "run": 1, "runs": 1, "not_before": None}
    assert worker.result(job, speed_report(0.79, refined=True)) == "stored"
    assert read_ranking_stream(client, sid, alice) == [
        {"event": "ranked", "ranking": "done", "rank_ratio": 0.79}]
    bob = make_user(client, "bob")
    assert client.get(f"/api/submissions/{sid}/ranking/events",
                      headers=bob).status_code == 404  # not bob's


def test_the_pair_plot():
    check = timing.check(speed_report(1.0, pairs=17)["throughput"][0])
    assert check is not None
    svg = str(timing.pair_plot(check, "en"))
    assert svg.startswith("<svg") and 'viewBox="0 0 320 132"' in svg and 'width="100%"' in svg
    assert svg.count('<circle class="pt"') == 17 and 'data-points="17"' in svg
    bar = re.search(r'<line class="bar-line"[^>]* y1="([\d.]+)"', svg)
    dots = [float(y) for y in re.findall(r'cy="([\d.]+)"', svg)]
    assert bar and all(y < float(bar.group(1)) for y in dots)  # every pair above the bar
    assert "bar 0.50×" in svg and "median 1.00×" in svg
    assert "门槛 0.50×" in str(timing.pair_plot(check, "zh"))


def test_malformed_timing_keys_are_left_out():
    entry = {"name": "x", "ratio": 1.0, "min_ratio": 0.5, "verdict": "accepted",
             "interval": [2, 1], "pair_ratios": [1.0, "<script>", float("nan"), True] * 100,
             "kinds": [{"kind": "<b>", "sub_ms": "1", "ref_ms": 1}, "junk"], "refined": "yes"}
    check = timing.check(entry)
    assert check is not None
    assert check["interval"] is None and check["kinds"] == [] and check["refined"] is False
    assert check["pair_ratios"] == [1.0] * 50  # capped at 200 entries, then checked
    assert timing.check({"name": "y", "ratio": None, "min_ratio": 0.5}) is None


def leased(worker, job, action: str, **body) -> dict:
    r = worker.http.post(f"/worker/jobs/{job.job_id}/{action}",
                         json={"lease_token": job.lease_token, **body}, headers=worker.headers)
    assert r.status_code == 200, r.text
    return r.json()


@both
def test_a_running_rank_job_yields_to_a_waiting_submission(client, app, alice, worker):
    """Renew and events tell a ranking worker to give its job back when another job it
    could take is waiting; giving it back costs the rank job no attempt."""
    sid = submit(client, alice).json()["id"]
    judge = worker.claim(worker.register("judge", False, {}), False, 0)
    assert leased(worker, judge, "renew")["yield"] is False  # a judging never yields
    assert worker.result(judge, speed_report(0.81)) == "stored"
    rank = claim_rank(worker)
    assert leased(worker, rank, "renew")["yield"] is False  # nothing else is waiting
    # a job only a GPU worker may take does not make a CPU worker yield
    with app.state.engine.begin() as conn:
        conn.execute(text(f"insert into jobs (kind, submission_id, status, priority, "
                          f"needs_gpu, prefers_gpu, attempts, created_at) values ('judge', "
                          f"{sid}, 'queued', -10, true, true, 0, '2026-01-01')"))
    assert leased(worker, rank, "events", events=[])["yield"] is False
    bob = make_user(client, "bob")
    live = submit(client, bob).json()["id"]
    assert leased(worker, rank, "renew")["yield"] is True
    assert leased(worker, rank, "events", events=[{"event": "phase",
                                                   "phase": "ranking"}])["yield"] is True
    assert worker.release(rank)
    wid = worker.register("cpu", False, {})
    assert worker.claim(wid, False, 0).submission_id == live
    again = worker.claim(wid, False, 0)
    assert again.kind == "rank" and again.submission_id == sid and again.attempt == 1
