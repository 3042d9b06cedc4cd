"""Helpers for the web tests: a small problem bank whose hidden test leaves a recognisable
message, a clock the tests move, and clients for learners (bearer token or a browser-like
session) and workers."""

from __future__ import annotations

import os
import re
import textwrap
from datetime import datetime, timedelta
from pathlib import Path

from fastapi.testclient import TestClient

ROOT = Path(__file__).resolve().parents[2]
HIDDEN_MARK = "HIDDEN-SECRET-7391"  # in the hidden case's failure message, never shown

TOML = """
slug = "add-one"
number = 3
difficulty = "easy"
names = ["add_one"]
tags = ["warm-up"]
[title]
zh = "加一"
en = "Add one"
[limits]
case_wall_s = 5.0
cpu_s = 20.0
memory_mb = 2048
output_kb = 16
"""

TESTS = f'''
import torch
from judge.testing import case


@case(public=True, zh="样例", en="example")
def example_small(t):
    x = torch.tensor([1, 2, 3])
    t.expect_equal(t.sub.add_one(x), t.ref.add_one(x), "add_one(x)")


@case(zh="大数", en="large values")
def large_values(t):
    x = torch.tensor([1234567])
    got = t.sub.add_one(x)
    t.expect(bool((got == x + 1).all()), "{HIDDEN_MARK} 隐藏输入 1234567",
             "{HIDDEN_MARK} hidden input 1234567")
'''

STATEMENT = """# 加一

给每个元素加一。<script>alert('statement')</script>

```python
def add_one(x): ...
```
"""


def write_bank(root: Path) -> Path:
    folder = root / "add-one"
    folder.mkdir(parents=True)
    (folder / "problem.toml").write_text(TOML)
    (folder / "statement.zh.md").write_text(STATEMENT)
    (folder / "statement.en.md").write_text(STATEMENT.replace("给每个元素加一。", "Add one."))
    (folder / "starter.py").write_text("def add_one(x):\n    raise NotImplementedError\n")
    (folder / "reference.py").write_text("def add_one(x):\n    return x + 1\n")
    (folder / "tests.py").write_text(textwrap.dedent(TESTS))
    return root


GOOD = "def add_one(x):\n    return x + 1\n"
# passes the public example (small values) and fails the hidden one
WRONG = "def add_one(x):\n    return x + (x < 1000).long()\n"


class Clock:
    """The app's clock; tests move it to expire leases and age rate limits."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, 8, 0, 0)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


def make_user(client: TestClient, name: str = "alice", password: str = "password1") -> dict:
    """Create a user through the API; returns the bearer headers."""
    r = client.post("/api/users", json={"username": name, "password": password})
    assert r.status_code == 201, r.text
    r = client.post("/api/token", data={"username": name, "password": password})
    assert r.status_code == 200, r.text
    return {"Authorization": f"Bearer {r.json()['access_token']}"}


def csrf(client: TestClient, path: str = "/") -> str:
    """The CSRF token a page's forms carry (the session cookie goes with the client)."""
    html = client.get(path).text
    m = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert m, f"no CSRF field on {path}"
    return m.group(1)


def browser_login(client: TestClient, name: str, password: str = "password1") -> None:
    r = client.post("/login", data={"username": name, "password": password,
                                    "csrf_token": csrf(client, "/login")},
                    follow_redirects=False)
    assert r.status_code == 303, r.text


def submit(client: TestClient, headers: dict, code: str = GOOD, problem: str = "add-one"):
    return client.post("/api/submissions", json={"problem": problem, "code": code},
                       headers=headers)


def rows(app, sql: str) -> list:
    from sqlalchemy import text

    with app.state.engine.connect() as conn:
        return list(conn.execute(text(sql)))


def visible(html: str) -> str:
    """A page's text as a reader sees it: no scripts, styles or tags, spaces collapsed."""
    html = re.sub(r"<(script|style)\b.*?</\1>", "", html, flags=re.S)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def fake_report(passed: bool = True, *, message: str = "", output: str = "") -> dict:
    """A report as a worker would post it for add-one: the public example passes (with
    ``output`` printed), the hidden case passes or fails with HIDDEN_MARK in its message."""
    from judge.i18n import T
    from judge.report import Report, TestResult
    from judge.verdict import Verdict

    hidden = Verdict.ACCEPTED if passed else Verdict.WRONG_ANSWER
    tests = [
        TestResult("example_small", "public", T("样例", "example"), Verdict.ACCEPTED,
                   T(message, message), 1.5, output),
        TestResult("large_values", "hidden", T("大数", "large values"), hidden,
                   T("" if passed else f"{HIDDEN_MARK} 隐藏输入 1234567",
                     "" if passed else f"{HIDDEN_MARK} hidden input 1234567"), 2.5,
                   "" if passed else f"{HIDDEN_MARK} printed"),
    ]
    report = Report(Verdict.ACCEPTED if passed else Verdict.WRONG_ANSWER, "add-one", 99,
                    "none", tests=tests,
                    message=T("", "") if passed else T("隐藏用例 large_values（大数）未通过",
                                                       "hidden case large_values failed"))
    return report.to_json("zh")


def passing_report(tests: int, problem: str = "add-one") -> dict:
    """A passing report with this many public tests (``t0``, ``t1``, ...)."""
    from judge.i18n import T
    from judge.report import Report, TestResult
    from judge.verdict import Verdict

    results = [TestResult(f"t{i}", "public", T("样例", "example"), Verdict.ACCEPTED,
                          T("", ""), 1.0, "") for i in range(tests)]
    return Report(Verdict.ACCEPTED, problem, 99, "none", tests=results).to_json("zh")


def grader_events(report: dict) -> list:
    """The grader's progress events for a report (judge.events)."""
    from judge.events import Done, PlannedTest, Running, Started, TestJudged
    from judge.report import Report

    judged = Report.from_json(report)
    events: list = [Started(len(judged.tests), tuple(PlannedTest(t.name, t.visibility)
                                                     for t in judged.tests), judged.seed)]
    for i, t in enumerate(judged.tests):
        events += [Running(t.name, i), TestJudged(i, t)]
    events.append(Done.of(judged))
    return events


def progress_events(report: dict) -> list[dict]:
    """The grader's progress events for a report, as a worker posts them."""
    return [e.to_json() for e in grader_events(report)]


def judge_next(worker, report: dict | None = None, *, gpu: bool = False) -> int:
    """Play a worker: claim the next job, post its progress and the result. Returns the
    submission id."""
    report = report or fake_report()
    wid = worker.register("test-worker", gpu, {})
    job = worker.claim(wid, gpu, 0)
    assert job is not None, "no job to claim"
    assert worker.events(job, progress_events(report))
    assert worker.result(job, report) == "stored"
    return job.submission_id


CUDA_TOML = TOML.replace('slug = "add-one"', 'slug = "gpu-add"').replace(
    "number = 3", "number = 4") + "[requires]\ncuda = true\n"


def write_cuda_problem(root: Path) -> None:
    """gpu-add: add-one again, but every case needs CUDA (only GPU workers judge it)."""
    src = root / "add-one"
    folder = root / "gpu-add"
    folder.mkdir()
    for f in src.iterdir():
        (folder / f.name).write_text(f.read_text())
    (folder / "problem.toml").write_text(CUDA_TOML)


def make_admin(client: TestClient, name: str = "root") -> dict:
    """A user with admin rights, logged in on the client's session too; bearer headers."""
    from web.data import accounts
    from web.data.accounts import user_by_name

    headers = make_user(client, name)
    with client.app.state.sessionmaker() as db:
        user = user_by_name(db, name)
        assert user is not None
        accounts.set_admin(db, user, True)
        db.commit()
    browser_login(client, name)
    return headers


def package_zip(folder: Path, *, extra: dict[str, str] | None = None,
                top: str | None = None) -> bytes:
    """A package folder as an upload (under one top folder when ``top`` is given)."""
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                name = str(path.relative_to(folder))
                archive.writestr(f"{top}/{name}" if top else name, path.read_bytes())
        for name, text in (extra or {}).items():
            archive.writestr(name, text)
    return buffer.getvalue()


def upload(client: TestClient, data: bytes, name: str = "pkg.zip"):
    """Upload a package through the admin page (the client is an admin's session)."""
    token = csrf(client, "/admin/problems")
    return client.post("/admin/problems/upload", data={"csrf_token": token},
                       files={"file": (name, data, "application/zip")}, follow_redirects=False)


ARTIFACTS = ROOT / "test-artifacts" / "browser"
CHROMIUM = os.environ.get("JUDGE_CHROMIUM", "/usr/bin/chromium")


def shot(page, name: str) -> None:
    """A browser test's screenshot, kept in test-artifacts/browser/."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def speed_check(ratio: float, *, refined: bool = False, verdict: str = "accepted",
                pairs: int = 12, bar: float = 0.5) -> dict:
    """One measured speed check ("big") as a newer worker posts it: with the interval,
    the pair ratios, the times per kind of input and whether it is a ranking's."""
    spread = [ratio * (0.94 + 0.01 * (i % 12)) for i in range(pairs)]
    return {"name": "big", "device": "cpu", "ratio": ratio, "min_ratio": bar,
            "verdict": verdict, "title": {"zh": "大批次", "en": "big batch"}, "spread": 0.05,
            "pairs": pairs, "rounds": 1, "sub_ms": 2.5, "ref_ms": 2.5 * ratio, "torch": "",
            "interval": [round(ratio * 0.97, 4), round(ratio * 1.03, 4)],
            "pair_ratios": spread, "refined": refined,
            "kinds": [{"kind": "short", "sub_ms": 1.25, "ref_ms": 1.0},
                      {"kind": "long", "sub_ms": 3.75, "ref_ms": 4.0}]}


def speed_report(ratio: float = 0.8123, *, refined: bool = False, verdict: str = "accepted",
                 **check) -> dict:
    """fake_report() with one measured speed check; a ``too_slow`` one when ``verdict``
    says so (what a ranking run too noisy to measure sends)."""
    report = fake_report()
    report["verdict"] = verdict
    report["throughput"] = [speed_check(ratio, refined=refined, verdict=verdict, **check)]
    return report


def with_speed_check(problems_root, app) -> None:
    """add-one gets a speed check ("big"), so the leaderboard has a speed table for it."""
    toml = problems_root / "add-one" / "problem.toml"
    toml.write_text(toml.read_text() + '[[throughput]]\nname = "big"\nworkload = "big"\n')
    from web.catalog import Catalog

    app.state.catalog = Catalog(problems_root)
