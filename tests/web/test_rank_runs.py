"""The leaderboard's timing by the default plan: several rank runs of a submission, each
queued when the one before ends and not handed out before the spacing is over; the
submission stays pending (and off the leaderboard's numbers) until the last run, and then
ranks by the runs' geometric mean. A newer judging voids the runs so far; a run that fails
fails the ranking. Fake workers post synthetic reports over the worker API."""

from __future__ import annotations

import json
import math

import pytest
from sqlalchemy import text

from tests.web.support import (
    browser_login,
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
from web.data.ranking import RANK_RUNS, RANK_SPACING_S

both = pytest.mark.both_databases


@pytest.fixture
def settings(settings):
    """The shared settings with the default rank plan (they pin one run)."""
    return settings.model_copy(update={"rank_runs": RANK_RUNS,
                                       "rank_spacing_seconds": RANK_SPACING_S})


def ranking_of(app, sid: int) -> tuple:
    return tuple(rows(app, f"select rank_status, rank_ratio from submissions "
                           f"where id = {sid}")[0])


def stored_ranking(app, sid: int) -> dict:
    raw = rows(app, f"select ranking from submissions where id = {sid}")[0][0]
    return raw if isinstance(raw, dict) else json.loads(raw)


def claim(worker, name: str = "ranker"):
    return worker.claim(worker.register(name, False, {}), False, 0)


def rank_run(worker, ratio: float, verdict: str = "accepted") -> None:
    job = claim(worker)
    assert job is not None and job.kind == "rank"
    assert worker.result(job, speed_report(ratio, refined=True, verdict=verdict)) == "stored"


def test_the_default_plan_is_three_runs_four_minutes_apart():
    from web.settings import Settings

    plain = Settings()
    assert (plain.rank_runs, plain.rank_spacing_seconds) == (3, 240.0)


@pytest.mark.parametrize(("name", "value"), [("JUDGE_RANK_RUNS", "0"),
                                             ("JUDGE_RANK_RUNS", "three"),
                                             ("JUDGE_RANK_SPACING_SECONDS", "-1")])
def test_a_bad_rank_plan_is_refused_by_name(monkeypatch, name, value):
    from pydantic import ValidationError

    from web.settings import Settings

    monkeypatch.setenv(name, value)
    with pytest.raises(ValidationError, match=name.removeprefix("JUDGE_").lower()):
        Settings()


@both
def test_the_leaderboard_waits_for_every_run_then_ranks_their_geometric_mean(
        client, app, alice, worker, clock, problems_root):
    with_speed_check(problems_root, app)
    browser_login(client, "alice")
    sid = submit(client, alice).json()["id"]
    judge_next(worker, speed_report(0.81))
    rank_run(worker, 0.80)
    # the next run is queued at once, and handed out only once the spacing is over
    assert ranking_of(app, sid) == ("pending", None)
    assert claim(worker) is None
    progress = client.get(f"/api/submissions/{sid}", headers=alice).json()["ranking_progress"]
    later = clock.now.replace(minute=4).isoformat() + "Z"  # 08:00 + 240 s
    assert (progress["state"], progress["run"], progress["runs"], progress["not_before"]) == \
        ("queued", 2, 3, later)
    page = visible(client.get(f"/submissions/{sid}").text)
    assert "排行榜测速已完成 1/3 次，下一次在 08:04 UTC 之后开始" in page
    board = visible(client.get("/leaderboard").text)
    assert "alice 测速中" in board and "0.80×" not in board  # one run is not the ranking
    clock.advance(RANK_SPACING_S - 1)
    assert claim(worker) is None
    clock.advance(1)
    # due: the page tells its place in the queue again, no start time in the past
    progress = client.get(f"/api/submissions/{sid}", headers=alice).json()["ranking_progress"]
    assert (progress["state"], progress["run"], progress["position"],
            progress["not_before"]) == ("queued", 2, 0, None)
    assert "排行榜测速排队中（前面还有 0 个任务） （第 2/3 次）" in visible(
        client.get(f"/submissions/{sid}").text)
    rank_run(worker, 0.88)
    assert ranking_of(app, sid) == ("pending", None)
    clock.advance(RANK_SPACING_S)
    job = claim(worker)
    progress = client.get(f"/api/submissions/{sid}", headers=alice).json()["ranking_progress"]
    assert (progress["state"], progress["run"], progress["not_before"]) == ("running", 3, None)
    assert "（第 3/3 次）" in visible(client.get(f"/submissions/{sid}").text)
    assert worker.result(job, speed_report(0.84, refined=True)) == "stored"

    combined = (0.80 * 0.88 * 0.84) ** (1 / 3)
    status, ratio = ranking_of(app, sid)
    assert status == "done" and ratio == pytest.approx(combined)
    kept = stored_ranking(app, sid)
    assert [run["ratios"] for run in kept["runs"]] == [{"big": 0.80}, {"big": 0.88},
                                                       {"big": 0.84}]
    [check] = client.get(f"/api/submissions/{sid}", headers=alice).json()["timing"]
    assert check["refined"] and check["runs"] == [0.80, 0.88, 0.84]
    assert check["ratio"] == pytest.approx(combined) and check["pairs"] == 36
    page = visible(client.get(f"/submissions/{sid}").text)
    assert "3 次测速（间隔几分钟）的几何平均：0.80×, 0.88×, 0.84×" in page
    assert "3 次平均 0.84×" in page and "中位数 0.84×" not in page  # the plot's line
    assert "1 alice 0.84×" in visible(client.get("/leaderboard").text)
    assert [r[0] for r in rows(app, f"select status from jobs where submission_id = {sid} "
                                    f"and kind = 'rank'")] == ["done"] * 3


@both
def test_a_run_waiting_out_its_spacing_holds_up_no_other_job(client, app, alice, worker):
    first = submit(client, alice).json()["id"]
    judge_next(worker, speed_report(0.81))
    rank_run(worker, 0.80)  # its second run now waits
    bob = make_user(client, "bob")
    second = submit(client, bob).json()["id"]
    judge_next(worker, speed_report(0.9))
    job = claim(worker)  # bob's first run, queued after alice's waiting one
    assert job is not None and (job.kind, job.submission_id) == ("rank", second)
    assert claim(worker, "another") is None  # alice's second run is not due yet
    assert ranking_of(app, first) == ("pending", None)


@both
def test_a_failed_run_fails_the_ranking_with_its_earlier_runs(client, app, alice, worker,
                                                               clock):
    sid = submit(client, alice).json()["id"]
    judge_next(worker, speed_report(0.81))
    rank_run(worker, 0.80)
    clock.advance(RANK_SPACING_S)
    rank_run(worker, 0.3, verdict="too_slow")  # the machine was too noisy
    assert ranking_of(app, sid) == ("failed", None)
    assert rows(app, f"select count(*) from jobs where submission_id = {sid} "
                     f"and status = 'queued'")[0][0] == 0
    clock.advance(RANK_SPACING_S)
    assert claim(worker) is None


@both
def test_a_rejudge_between_runs_starts_the_ranking_again(client, app, alice, worker, clock):
    sid = submit(client, alice).json()["id"]
    judge_next(worker, speed_report(0.81))
    rank_run(worker, 0.80)
    with app.state.sessionmaker() as db:
        version = db.execute(text("select problem_version from submissions")).scalar()
        assert queue.rejudge(db, "add-one", version, app.state.clock()) == [sid]
        db.commit()
    judge_next(worker, speed_report(0.9))  # accepted again: a new first run, at once
    assert ranking_of(app, sid) == ("pending", None)
    assert stored_ranking(app, sid)["runs"] == []
    for ratio in (0.9, 0.92, 0.94):
        rank_run(worker, ratio)
        clock.advance(RANK_SPACING_S)
    status, ratio = ranking_of(app, sid)
    assert status == "done" and ratio == pytest.approx((0.9 * 0.92 * 0.94) ** (1 / 3))
    assert stored_ranking(app, sid)["checks"][0]["runs"] == [0.9, 0.92, 0.94]


def check(ratio: float, *, pairs: int, kinds: list[tuple[str, float, float]],
          interval: list[float] | None = None) -> dict:
    return {"name": "big", "device": "cpu", "verdict": "accepted", "ratio": ratio,
            "min_ratio": 0.5, "pairs": pairs, "interval": interval, "refined": True,
            "title": None, "runs": [],
            "pair_ratios": [ratio] * pairs,
            "kinds": [{"kind": k, "sub_ms": s, "ref_ms": r} for k, s, r in kinds]}


def test_combining_runs_takes_geometric_means_and_keeps_every_runs_pairs():
    runs = [[check(1.6, pairs=150, kinds=[("left", 2.0, 3.2), ("right", 2.2, 3.6)],
                   interval=[1.55, 1.66])],
            [check(1.7, pairs=120, kinds=[("right", 2.0, 3.5), ("left", 1.8, 3.1)],
                   interval=[1.62, 1.74])],
            [check(1.5, pairs=130, kinds=[("left", 2.4, 3.6)], interval=[1.45, 1.56])]]
    [c] = timing.combine(runs)
    assert c["ratio"] == pytest.approx((1.6 * 1.7 * 1.5) ** (1 / 3))
    assert c["runs"] == [1.6, 1.7, 1.5] and c["pairs"] == 400 and c["refined"]
    assert c["interval"] == pytest.approx([(1.55 * 1.62 * 1.45) ** (1 / 3),
                                           (1.66 * 1.74 * 1.56) ** (1 / 3)])
    # a kind the last run did not time is left out, not read from fewer runs
    assert [k["kind"] for k in c["kinds"]] == ["left"]
    assert c["kinds"][0]["sub_ms"] == pytest.approx((2.0 * 1.8 * 2.4) ** (1 / 3))
    # 400 pairs are thinned evenly to the plot's 200, every run's in order
    assert len(c["pair_ratios"]) == timing.MAX_PAIRS
    assert c["pair_ratios"][0] == 1.6 and c["pair_ratios"][-1] == 1.5
    assert c["pair_ratios"].count(1.7) == 60
    # a run without an interval leaves the combined one out
    runs[1][0]["interval"] = None
    assert timing.combine(runs)[0]["interval"] is None


def test_a_combined_ratio_of_nothing_or_of_a_zero_is_zero():
    assert timing.combined_ratio([]) == 0.0
    assert timing.combined_ratio([0.8, 0.0]) == 0.0
    assert math.isclose(timing.combined_ratio([0.5, 2.0]), 1.0)
