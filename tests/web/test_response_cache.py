"""Whole answers kept per generation (web/response_cache.py): the same request gets the same
bytes back until something it shows is written, and nobody gets another's answer."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.testclient import TestClient

from tests.web.support import (
    GOOD,
    browser_login,
    fake_report,
    judge_next,
    make_admin,
    make_user,
    progress_events,
    submit,
)
from web.catalog import Catalog
from web.hub import Hub
from web.models import Submission
from web.page_cache import CHANGED, MISSING, PageCache, decode, encode
from web.response_cache import KeptResponses, ResponseCache, keep


def hits(app) -> int:
    return app.state.responses.hits


def test_a_page_goes_again_to_the_same_request_and_never_to_another(app, client):
    make_user(client, "alice")
    make_user(client, "bob")
    browser_login(client, "alice")
    first = client.get("/problems/add-one")
    before = hits(app)
    again = client.get("/problems/add-one")
    assert hits(app) == before + 1 and again.text == first.text
    assert 'id="current-user">alice<' in again.text
    with TestClient(app) as other:
        browser_login(other, "bob")
        page = other.get("/problems/add-one").text
    assert 'id="current-user">bob<' in page and "alice" not in page
    assert client.get("/problems/add-one", params={"lang": "en"}).text != first.text


def test_a_new_submission_and_its_verdict_show_at_once_on_kept_pages(app, client, worker):
    app.state.page_cache.ttl = 3600  # only a new generation can refresh them here
    alice = make_user(client, "alice")
    browser_login(client, "alice")
    for path in ("/problems/add-one", "/leaderboard", "/"):
        client.get(path)
        client.get(path)
    assert hits(app) >= 3
    sid = submit(client, alice).json()["id"]
    assert f'href="/submissions/{sid}"' in client.get("/problems/add-one").text
    judge_next(worker, fake_report(passed=True))
    assert 'data-user="alice" data-me' in client.get("/leaderboard").text
    status = client.get(f"/api/submissions/{sid}", headers=alice).json()
    assert status["verdict"] == "accepted"
    before = hits(app)
    assert client.get(f"/api/submissions/{sid}", headers=alice).json() == status
    assert hits(app) == before + 1  # judged: kept
    root = make_admin(client)  # a rejudge, and its new verdict
    assert client.post("/api/admin/problems/add-one/rejudge", json={"submissions": [sid]},
                       headers=root).json()["queued"] == [sid]
    judge_next(worker, fake_report(passed=False))
    assert client.get(f"/api/submissions/{sid}",
                      headers=alice).json()["verdict"] == "wrong_answer"


def test_a_submission_being_judged_is_kept_until_its_progress_or_the_queue_moves(
        app, client, worker):
    """Clients poll a submission while it is judged: its status is kept, and every step
    of its judging (a claim, a progress event, the verdict) or of the queue ahead of it
    shows at the next read; a lease renewed is no change."""
    app.state.page_cache.ttl = 3600  # only a change can refresh them here
    alice, bob = make_user(client, "alice"), make_user(client, "bob")
    first = submit(client, alice).json()["id"]
    second = submit(client, bob).json()["id"]

    def read(sid: int, headers: dict) -> dict:
        return client.get(f"/api/submissions/{sid}", headers=headers).json()

    assert read(second, bob)["position"] == 1
    before = hits(app)
    assert read(second, bob)["position"] == 1
    assert hits(app) == before + 1  # kept
    wid = worker.register("test-worker", False, {})
    job = worker.claim(wid, False, 0)
    assert job is not None and job.submission_id == first
    assert read(second, bob)["position"] == 0  # the queue moved
    assert read(first, alice)["status"] == "running"
    events = progress_events(fake_report())
    assert worker.events(job, events[:2])
    shown = read(first, alice)
    assert shown["tests"] and shown["running"] is not None
    assert worker.renew(job)
    before = hits(app)
    assert read(first, alice) == shown
    assert hits(app) == before + 1  # a renewal is no change
    assert worker.events(job, events[2:3])
    assert read(first, alice)["tests"][0] != shown["tests"][0]  # a progress event is
    assert worker.result(job, fake_report()) == "stored"
    assert read(first, alice)["verdict"] == "accepted"


def test_an_answer_that_sets_a_cookie_is_never_kept(app):
    """A first visit gets a new session (its own CSRF token) each time: never kept, never
    sent to the next visitor."""
    pages = []
    for _ in range(2):
        with TestClient(app) as visitor:
            r = visitor.get("/leaderboard")
            assert "set-cookie" in r.headers
            pages.append(r.text)
    assert pages[0] != pages[1]  # two CSRF tokens
    assert hits(app) == 0


def test_an_answer_built_from_a_value_being_rebuilt_is_not_kept():
    """While one reader rebuilds an expired value, the page cache gives the others the
    previous one: such an answer is sent, not kept (it would outlive the rebuild)."""
    cache = PageCache(ttl=3600)
    kept = KeptResponses(cache)
    app = FastAPI()
    app.add_middleware(ResponseCache, kept=kept)
    cache.get("board", lambda: "old")
    cache.changed()  # expired ...
    cache.building.add("board")  # ... and another reader is rebuilding it

    @app.get("/board")
    def board(request: Request) -> dict:  # a sync route: it runs in a thread
        keep(request)
        return {"board": cache.get("board", lambda: "new")}

    with TestClient(app) as c:
        assert c.get("/board").json() == {"board": "old"}
        assert c.get("/board").json() == {"board": "old"}
        assert kept.hits == 0 and not kept.entries
        cache.building.discard("board")
        assert c.get("/board").json() == {"board": "new"}
        assert c.get("/board").json() == {"board": "new"} and kept.hits == 1


def test_a_catalog_change_starts_a_generation(problems_root):
    cache = PageCache()
    catalog = Catalog(problems_root)
    catalog.on_change = cache.changed
    assert not catalog.refresh() and cache.generation == 0
    (problems_root / "add-one" / "statement.en.md").write_text("# Changed\n", encoding="utf-8")
    assert catalog.refresh() and cache.generation == 1


def test_values_built_together_expire_apart():
    now = [0.0]
    cache = PageCache(ttl=2.0, clock=lambda: now[0])
    for k in range(200):
        cache.get(k, lambda: 1)
    lives = [2.0 * cache.entries[k][0][2] for k in range(200)]  # ttl x its share
    assert min(lives) >= 1.0 and max(lives) <= 2.0 and max(lives) - min(lives) > 0.5
    now[0] = 2.0
    assert all(cache.peek(k) is MISSING for k in range(200))  # all expired; peek builds none
    assert cache.get(0, lambda: 2) == 2


# ------------------------------------------------------------- scopes (web/cache_scopes.py)

def test_a_value_is_rebuilt_after_a_change_of_its_scopes_or_of_everything_only():
    cache = PageCache(ttl=3600)
    built: list[str] = []

    def get(key, scopes):
        return cache.get(key, lambda: built.append(key) or len(built), scopes=scopes)

    get("alice", [("user", 1)])
    get("board", ["standings"])
    get("any", None)
    cache.changed({("user", 2), "standings"})  # bob's verdict
    get("alice", [("user", 1)])
    get("board", ["standings"])
    get("any", None)
    assert built == ["alice", "board", "any", "board", "any"]
    cache.changed()  # everything: a user, a version, the catalog
    get("alice", [("user", 1)])
    assert built[-1] == "alice"


def test_a_commit_names_the_owners_of_the_submissions_it_wrote(app, client):
    from sqlalchemy import delete, update

    cache = app.state.page_cache
    alice, bob = make_user(client, "alice"), make_user(client, "bob")
    sid = submit(client, alice).json()["id"]
    other = submit(client, bob).json()["id"]
    with app.state.sessionmaker() as db:
        uid = db.get(Submission, sid).user_id

        def changed_by(statement) -> dict:
            before = dict(cache.last)
            db.execute(statement)
            db.commit()
            return {k: v for k, v in cache.last.items() if before.get(k) != v}

        by_id = changed_by(update(Submission).where(Submission.id == sid,
                                                    Submission.status == "queued")
                           .values(status="running"))
        assert set(by_id) == {("user", uid), ("submission", sid)}  # a claim: not judged yet
        by_ids = changed_by(update(Submission).where(Submission.id.in_([sid, other]))
                            .values(passed=0))
        assert {("submission", other), "standings"} <= set(by_ids) and "*" not in by_ids
        assert set(changed_by(update(Submission).where(Submission.user_id == uid)
                              .values(passed=1))) == {"*"}  # rows it cannot tell
        assert set(changed_by(update(Submission).where(Submission.id == sid)
                              .values(share=True))) == {"*"}  # the shared lists
        db.get(Submission, sid).verdict = "accepted"  # through the ORM
        db.commit()
        assert cache.last[("user", uid)] == cache.generation
        assert set(changed_by(delete(Submission).where(Submission.id == other))) == {"*"}


def test_another_learners_verdict_leaves_a_learners_kept_pages_and_the_leaderboard_shows_it(
        app, client, worker):
    app.state.page_cache.ttl = 3600  # only a change can refresh them here
    alice, bob = make_user(client, "alice"), make_user(client, "bob")
    sid = submit(client, alice).json()["id"]
    judge_next(worker, fake_report(passed=True))
    browser_login(client, "alice")
    pages = {path: client.get(path).text
             for path in ("/problems/add-one", "/leaderboard", f"/api/submissions/{sid}")}
    submit(client, bob)
    judge_next(worker, fake_report(passed=True))  # bob: submitted, claimed, judged
    before = hits(app)
    assert client.get("/problems/add-one").text == pages["/problems/add-one"]
    assert client.get(f"/api/submissions/{sid}", headers=alice).text
    assert hits(app) == before + 1  # alice's page was kept (the status: a new key)
    assert 'data-user="bob"' in client.get("/leaderboard").text  # the leaderboard was not


def test_a_solution_shared_by_another_shows_at_once_to_those_who_solved(app, client, worker):
    app.state.page_cache.ttl = 3600
    alice, bob = make_user(client, "alice"), make_user(client, "bob")
    submit(client, alice)
    judge_next(worker, fake_report(passed=True))
    browser_login(client, "alice")
    assert 'id="no-shared"' in client.get("/problems/add-one").text
    client.post("/api/submissions", json={"problem": "add-one", "code": GOOD, "share": True},
                headers=bob)
    judge_next(worker, fake_report(passed=True))
    page = client.get("/problems/add-one").text
    assert 'id="no-shared"' not in page and "/users/bob" in page


def test_scoped_changes_cross_the_relay():
    cache = PageCache(ttl=3600)
    hub = Hub()
    hub.on(CHANGED, cache.changed)
    hub.on_any(cache.heard)
    scopes = {("user", 3), ("submission", 17), "standings", "shared"}
    payload = encode(scopes)
    assert decode(payload) == scopes and decode(CHANGED) is None
    hub.wake_local(payload)
    assert set(cache.last) == scopes
    hub.wake_local(CHANGED)
    assert "*" in cache.last
    assert encode({("user", n) for n in range(500)}) == CHANGED  # too long: everything
