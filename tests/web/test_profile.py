"""The learner's own pages: a profile per user (solved problems, best speed, activity),
the history's filters, a diff between two of one's own submissions, and solutions after
solving (the reference with its explanation, and the code others agreed to share),
never before."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from sqlalchemy import text

from tests.web.support import (
    GOOD,
    WRONG,
    browser_login,
    csrf,
    fake_report,
    judge_next,
    make_admin,
    make_user,
    rows,
    visible,
    write_bank,
)

EXPLANATION_EN = """# How it works

Add one with `x + 1`: broadcasting does the rest. SOLUTION-EXPLAINED-EN

<script>alert('solution')</script>
"""
EXPLANATION_ZH = "# 思路\n\n`x + 1` 即可。SOLUTION-EXPLAINED-ZH\n"
REFERENCE_MARK = "REFERENCE-SOURCE-4242"


@pytest.fixture
def problems_root(tmp_path):
    """The test bank, with a solution explained in both languages."""
    root = write_bank(tmp_path / "problems")
    folder = root / "add-one"
    (folder / "reference.py").write_text(f"# {REFERENCE_MARK}\ndef add_one(x):\n"
                                         f"    return x + 1\n")
    (folder / "solution.en.md").write_text(EXPLANATION_EN)
    (folder / "solution.zh.md").write_text(EXPLANATION_ZH)
    return root


@pytest.fixture
def logged_in(client, alice):
    browser_login(client, "alice")
    return client


def judged(client, headers, worker, clock, *, passed=True, code=GOOD, ratio=None,
           share=False) -> int:
    """Submit through the API and let a fake worker judge it; returns the id."""
    r = client.post("/api/submissions", headers=headers,
                    json={"problem": "add-one", "code": code, "share": share})
    assert r.status_code == 202, r.text
    report = fake_report(passed=passed)
    if ratio is not None:
        report["throughput"] = [{"name": "big", "device": "cpu", "ratio": ratio,
                                 "min_ratio": 0.5, "verdict": "accepted"}]
    judge_next(worker, report)
    clock.advance(30)  # under the per-minute limit
    return r.json()["id"]


# ---------------------------------------------------------------- the profile


def test_a_profile_shows_solved_problems_best_speed_and_activity(logged_in, alice, worker,
                                                                 clock, client):
    judged(logged_in, alice, worker, clock, passed=False)
    judged(logged_in, alice, worker, clock, ratio=0.61)
    clock.advance(86400)
    judged(logged_in, alice, worker, clock, ratio=0.93)
    html = client.get("/users/alice").text
    text = visible(html)
    assert "alice" in text and "1 / 1" in text  # one problem, solved
    solved = re.search(r'<table class="board" id="solved">.*?</table>', html, re.S)[0]
    assert "3. 加一" in visible(solved) and "0.93×" in solved and "0.61×" not in solved
    assert "2 / 3" in visible(solved)  # accepted / submitted
    day1, day2 = clock.now.date() - timedelta(days=1), clock.now.date()
    assert f'data-day="{day1.isoformat()}" data-count="2"' in html
    assert f'data-day="{day2.isoformat()}" data-count="1"' in html
    assert "3 次提交，2 天有提交" in text
    assert client.get("/users/ALICE").status_code == 200  # names are case-insensitive


def test_a_profile_in_english_and_tried_problems(client, alice, worker, clock):
    judged(client, alice, worker, clock, passed=False)
    client.cookies.set("lang", "en")
    html = client.get("/users/alice").text
    text = visible(html)
    assert "Solved" in text and "No problem solved yet." in text
    tried = visible(re.search(r'<ul id="tried">.*?</ul>', html, re.S)[0])
    assert "Tried" in text and tried.strip() == "3. Add one · 1 submission"


def test_an_unknown_user_is_a_clear_404(client):
    r = client.get("/users/nobody")
    assert r.status_code == 404 and "没有叫 nobody 的用户" in r.text
    client.cookies.set("lang", "en")
    r = client.get("/users/nobody")
    assert r.status_code == 404 and "there is no user named nobody" in r.text
    r = client.get("/api/users/nobody")
    assert r.status_code == 404 and "nobody" in r.json()["detail"]


def test_a_profile_names_published_problems_only(client, alice, worker, clock, app):
    judged(client, alice, worker, clock)
    with app.state.engine.begin() as conn:
        conn.execute(text("update submissions set problem = 'secret-draft'"))
    data = client.get("/api/users/alice").json()
    assert data["solved"] == [] and data["tried"] == [] and data["submissions"] == 1
    assert "secret-draft" not in client.get("/users/alice").text


def test_the_profile_api(client, alice, worker, clock):
    judged(client, alice, worker, clock, ratio=0.7)
    data = client.get("/api/users/alice").json()
    assert data["username"] == "alice" and data["submissions"] == 1
    assert data["solved"] == [{"problem": "add-one", "first_solved_at": data["solved"][0][
        "first_solved_at"], "best_ratio": 0.7, "accepted": 1, "submissions": 1}]
    assert data["activity"]["per_day"] == {clock.now.date().isoformat(): 1}
    assert "code" not in str(data)  # a profile never carries code


def test_a_disabled_account_has_no_public_profile(client, alice, app):
    from web.data import accounts

    with app.state.sessionmaker() as db:
        user = accounts.user_by_name(db, "alice")
        user.disabled = True
        db.commit()
    assert client.get("/users/alice").status_code == 404
    make_admin(client)
    assert client.get("/users/alice").status_code == 200


def test_user_names_link_to_their_profile(logged_in, alice, worker, clock):
    sid = judged(logged_in, alice, worker, clock)
    assert 'href="/users/alice"' in logged_in.get("/leaderboard").text
    assert 'href="/users/alice"' in logged_in.get(f"/submissions/{sid}").text
    assert 'href="/users/alice"' in logged_in.get("/submissions").text


# ---------------------------------------------------------------- the history's filters


def test_the_history_filters_by_verdict_and_problem(logged_in, alice, worker, clock):
    wrong = judged(logged_in, alice, worker, clock, passed=False)
    good = judged(logged_in, alice, worker, clock)
    html = logged_in.get("/submissions?verdict=accepted").text
    assert f'data-id="{good}"' in html and f'data-id="{wrong}"' not in html
    assert '<option value="accepted" selected>' in html
    html = logged_in.get("/submissions?verdict=wrong_answer&problem=3").text  # by number too
    assert f'data-id="{wrong}"' in html and f'data-id="{good}"' not in html
    assert '<option value="add-one" selected>' in html
    html = logged_in.get("/submissions?problem=gone-problem").text
    assert "No submissions match" in html or "没有符合筛选条件的提交" in html
    html = logged_in.get("/submissions?verdict=pending").text
    assert 'data-id="' not in html


def test_an_unknown_verdict_filter_says_which_exist(logged_in):
    r = logged_in.get("/submissions?verdict=great")
    assert r.status_code == 400 and "没有这种结果：&#39;great&#39;" in r.text
    assert "wrong_answer" in r.text


def test_the_pager_keeps_the_filters(logged_in, alice, worker, clock, monkeypatch):
    from web.routes import pages_submissions

    monkeypatch.setattr(pages_submissions, "PAGE", 1)
    ids = [judged(logged_in, alice, worker, clock, passed=False) for _ in range(3)]
    judged(logged_in, alice, worker, clock)
    html = logged_in.get("/submissions?verdict=wrong_answer&problem=add-one").text
    assert "1 / 3" in visible(html)
    assert 'href="/submissions?problem=add-one&amp;verdict=wrong_answer&amp;page=2"' in html
    html = logged_in.get("/submissions?problem=add-one&verdict=wrong_answer&page=3").text
    assert f'data-id="{ids[0]}"' in html
    assert 'href="/submissions?problem=add-one&amp;verdict=wrong_answer&amp;page=2"' in html


# ---------------------------------------------------------------- the diff


def test_a_diff_between_two_of_ones_submissions(logged_in, alice, worker, clock):
    old = judged(logged_in, alice, worker, clock, passed=False, code=WRONG)
    new = judged(logged_in, alice, worker, clock,
                 code=GOOD + "# <script>alert('diff')</script>\n")
    html = logged_in.get(f"/submissions/{old}/diff/{new}").text
    assert "<script>alert('diff')" not in html
    assert "# &lt;script&gt;alert(&#39;diff&#39;)&lt;/script&gt;" in html
    assert re.search(r'<tr class="del">.*x \+ \(x &lt; 1000\)\.long\(\)', html)
    assert re.search(r'<tr class="add">.*return x \+ 1</td>', html)
    assert "+2" in visible(html) and "−1" in visible(html)
    same = logged_in.get(f"/submissions/{new}/diff/{new}").text
    assert 'id="identical"' in same
    data = logged_in.get(f"/api/submissions/{old}/diff/{new}").json()
    assert data["added"] == 2 and data["removed"] == 1 and not data["identical"]
    assert data["unified"].startswith(f"--- #{old}\n+++ #{new}\n@@ ")


def test_the_history_compare_form_leads_to_the_diff(logged_in, alice, worker, clock):
    a = judged(logged_in, alice, worker, clock, passed=False, code=WRONG)
    b = judged(logged_in, alice, worker, clock)
    history = logged_in.get("/submissions").text
    assert 'form="compare"' in history and 'action="/submissions/compare"' in history
    r = logged_in.get(f"/submissions/compare?id={b}&id={a}", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == f"/submissions/{a}/diff/{b}"
    r = logged_in.get(f"/submissions/compare?id={a}")
    assert r.status_code == 400 and "请勾选正好两份提交来比较" in r.text


def test_only_the_owner_or_an_admin_may_diff(logged_in, alice, worker, clock, client):
    mine = judged(logged_in, alice, worker, clock)
    bob = make_user(client, "bob")
    theirs = judged(client, bob, worker, clock)
    for a, b in ((mine, theirs), (theirs, mine)):
        assert logged_in.get(f"/submissions/{a}/diff/{b}").status_code == 404
        assert client.get(f"/api/submissions/{a}/diff/{b}", headers=alice).status_code == 404
    assert client.get(f"/api/submissions/{mine}/diff/{mine}", headers=bob).status_code == 404
    client.cookies.clear()  # no session: the login page
    r = client.get(f"/submissions/{mine}/diff/{theirs}", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"].startswith("/login")
    root = make_admin(client)
    assert client.get(f"/submissions/{mine}/diff/{theirs}").status_code == 200
    assert client.get(f"/api/submissions/{mine}/diff/{theirs}", headers=root).status_code == 200


# ---------------------------------------------------------------- solutions after solving


def solution_leaks(html: str) -> list[str]:
    return [m for m in (REFERENCE_MARK, "SOLUTION-EXPLAINED", 'id="solutions"') if m in html]


def test_no_solution_before_acceptance(client, alice, worker, clock):
    assert solution_leaks(client.get("/problems/add-one").text) == []  # anonymous
    browser_login(client, "alice")
    logged_in = client
    assert solution_leaks(logged_in.get("/problems/add-one").text) == []
    judged(logged_in, alice, worker, clock, passed=False)
    html = logged_in.get("/problems/add-one").text
    assert solution_leaks(html) == [] and 'id="solutions-locked"' in html
    r = client.get("/api/problems/add-one/solution", headers=alice)
    assert r.status_code == 403 and "通过这道题之后才能看题解" in r.json()["detail"]
    assert REFERENCE_MARK not in r.text
    assert client.get("/api/problems/add-one/solution").status_code == 403  # the session
    client.cookies.clear()
    assert client.get("/api/problems/add-one/solution").status_code == 401
    assert REFERENCE_MARK not in client.get("/api/problems/add-one").text
    # an admin too: the rule is the same for everyone
    root = make_admin(client)
    assert client.get("/api/problems/add-one/solution", headers=root).status_code == 403
    assert solution_leaks(client.get("/problems/add-one").text) == []


def test_after_acceptance_the_reference_and_its_explanation(logged_in, alice, worker, clock):
    judged(logged_in, alice, worker, clock)
    html = logged_in.get("/problems/add-one").text
    assert 'id="solutions"' in html and REFERENCE_MARK in html
    assert "SOLUTION-EXPLAINED-ZH" in html and "SOLUTION-EXPLAINED-EN" not in html
    assert '<pre class="hl"><code class="language-python">' in html  # highlighted
    logged_in.post("/lang", data={"lang": "en", "next": "/", "csrf_token": csrf(logged_in)})
    english = logged_in.get("/problems/add-one").text
    assert "SOLUTION-EXPLAINED-EN" in english
    assert "<script>alert('solution')" not in english  # the statement's sanitiser
    data = logged_in.get("/api/problems/add-one/solution").json()
    assert REFERENCE_MARK in data["reference"] and data["shared"] == []
    assert data["explanation"] == {"zh": EXPLANATION_ZH, "en": EXPLANATION_EN}


def test_shared_code_of_others_fastest_first(logged_in, alice, worker, clock, client, app):
    bob, carol, dave = (make_user(client, n) for n in ("bob", "carol", "dave"))
    judged(client, bob, worker, clock, ratio=0.6, share=True,
           code=GOOD + "# bob-slow <script>x</script>\n")
    judged(client, bob, worker, clock, ratio=0.9, share=True, code=GOOD + "# bob-fast\n")
    judged(client, carol, worker, clock, ratio=1.2, share=False, code=GOOD + "# carol\n")
    judged(client, dave, worker, clock, ratio=0.8, share=True, code=GOOD + "# dave\n")
    judged(client, dave, worker, clock, ratio=1.5, share=True, passed=False,
           code=GOOD + "# dave-wrong\n")
    judged(logged_in, alice, worker, clock, ratio=2.0, share=True, code=GOOD + "# alice\n")
    html = logged_in.get("/problems/add-one").text
    shared = re.search(r'<details id="shared-solutions".*?</details>', html, re.S)[0]
    assert "bob-fast" in shared and "# dave" in shared
    assert shared.index("bob-fast") < shared.index("# dave")  # 0.9 before 0.8
    for never in ("bob-slow", "carol", "dave-wrong", "# alice"):
        assert never not in shared  # a user's best only; opted in; accepted; not mine
    assert 'href="/users/bob"' in shared
    data = logged_in.get("/api/problems/add-one/solution").json()
    assert [(s["user"], s["ratio"]) for s in data["shared"]] == [("bob", 0.9), ("dave", 0.8)]
    assert rows(app, "select count(*) from submissions where share")[0][0] == 5


def test_sharing_is_off_unless_ticked_on_the_page(logged_in, app, worker):
    page = logged_in.get("/problems/add-one").text
    assert 'name="share"' in page and "checked" not in re.search(
        r'<input type="checkbox" name="share"[^>]*>', page)[0]
    for ticked in (False, True):
        data = {"code": GOOD, "csrf_token": csrf(logged_in, "/problems/add-one")}
        if ticked:
            data["share"] = "true"
        r = logged_in.post("/problems/add-one/submit", data=data, follow_redirects=False)
        assert r.status_code == 303, r.text
        judge_next(worker)
    assert [s for (s,) in rows(app, "select share from submissions order by id")] == [0, 1]
    assert logged_in.get("/api/submissions/2").json()["share"] is True
    # a refused submission comes back with the box as it was ticked
    r = logged_in.post("/problems/add-one/submit", data={
        "code": " ", "share": "true", "csrf_token": csrf(logged_in, "/problems/add-one")})
    assert r.status_code == 400
    assert re.search(r'<input type="checkbox" name="share"[^>]*checked>', r.text)
