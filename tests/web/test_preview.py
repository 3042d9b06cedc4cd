"""``python -m judge preview DIR``: a package's pages for its author (web/preview.py,
web/preview_runs.py): both statements through the site's own renderer, the starter in the
editor, lint's findings, "Run examples" on the public cases only, a reload stamp that
follows the files, and a broken package shown as its error. The app is driven through
TestClient with the plain launcher; one test starts the real command, one (``sandbox``)
runs in the sandbox. The browser test is tests/web/test_browser_preview.py."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from markupsafe import escape

from judge.case_reader import read_cases
from judge.package import load_problem
from tests.web.served import free_port
from web import markdown
from web.preview import create_preview_app, stamp

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = ROOT / "problems" / "padding-collate"  # hidden cases and speed checks
TEMPLATE = ROOT / "problems" / "_template"


def template_copy(tmp_path: Path) -> Path:
    """problems/_template copied to a folder named after its slug, as a new problem."""
    slug = load_problem(TEMPLATE, named_by_slug=False).slug
    return Path(shutil.copytree(TEMPLATE, tmp_path / slug,
                                ignore=shutil.ignore_patterns("__pycache__")))


@contextlib.contextmanager
def previewing(folder: Path, launcher, base_url: str = "http://testserver",
               **kwargs) -> Iterator[TestClient]:
    with TestClient(create_preview_app(folder, launcher, **kwargs),
                    base_url=base_url) as client:
        yield client


def csrf(page: str) -> str:
    return re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)


def public_names(folder: Path) -> list[str]:
    return [c.name for c in read_cases((folder / "tests.py").read_text()) if c.public]


def run(client: TestClient, code: str, lang: str = "en") -> tuple[int, list[dict]]:
    """Start a run as static/run.js does and follow its events to the end."""
    token = csrf(client.get("/").text)
    r = client.post(f"/api/runs?lang={lang}", json={"problem": "x", "code": code},
                    headers={"X-CSRF-Token": token})
    assert r.status_code == 202, r.text
    rid, events = r.json()["id"], []
    with client.stream("GET", f"/api/runs/{rid}/events?lang={lang}") as stream:
        for line in stream.iter_lines():
            if line.startswith("data:"):
                events.append(json.loads(line[5:]))
    return rid, events


def assert_shows(page: str, folder: Path) -> None:
    """Both statements as web.markdown renders them for the site, both titles, every
    speed check, the starter in the editor, lint's findings."""
    problem = load_problem(folder, named_by_slug=False)
    for lang in ("zh", "en"):
        assert f'id="column-{lang}"' in page
        assert markdown.render(problem.statement(lang)) in page
        assert getattr(problem.meta.title, lang) in page
        for check in problem.meta.throughput:
            if check.title:
                assert str(escape(getattr(check.title, lang))) in page
    assert f">{escape(problem.starter)}</textarea>" in page
    assert 'id="lint"' in page and 'id="run-button"' in page
    assert 'id="load-error"' not in page


@pytest.mark.parametrize("which", ["bundled", "template copy"])
def test_the_page_shows_both_statements_the_starter_and_lint(which, tmp_path, launcher):
    folder = BUNDLED if which == "bundled" else template_copy(tmp_path)
    with previewing(folder, launcher) as client:
        page = client.get("/")
        assert page.status_code == 200
        assert_shows(page.text, folder)
        assert "'self'" in page.headers["content-security-policy"]
        # the page's own words in the reader's language, the columns in theirs
        assert "Reloads when a file changes" in client.get("/?lang=en").text
        assert "文件改动后自动刷新" in client.get("/?lang=zh").text
        assert 'id="no-sandbox"' in page.text  # the plain launcher says so
        for name in public_names(folder):
            assert f"<code>{name}</code>" in page.text


def test_lint_findings_are_listed_at_the_top(tmp_path, launcher):
    folder = template_copy(tmp_path)
    (folder / "statement.zh.md").write_text("# 标题\n\n这是一个中文\n句子。\n", encoding="utf-8")
    with previewing(folder, launcher) as client:
        page = client.get("/?lang=en").text
    lint = page[page.index('id="lint"'):page.index('class="preview-columns"')]
    assert 'data-level="warning"' in lint and "statement.zh.md:3" in lint


def test_editing_a_file_changes_the_page_and_bumps_the_stamp(tmp_path, launcher):
    folder = template_copy(tmp_path)
    with previewing(folder, launcher) as client:
        before = client.get("/preview/version").json()["version"]
        assert f'data-version="{before}"' in client.get("/").text
        # not files of the package: compiled modules, editors' swap files, dot files
        (folder / "__pycache__").mkdir(exist_ok=True)
        (folder / "__pycache__" / "tests.cpython-311.pyc").write_bytes(b"x")
        (folder / ".statement.en.md.swp").write_bytes(b"x")
        assert client.get("/preview/version").json()["version"] == before

        with (folder / "statement.en.md").open("a", encoding="utf-8") as f:
            f.write("\nA sentence added while previewing: 7391.\n")
        (folder / "starter.py").write_text("def masked_mean(x, mask):\n    return 7391\n",
                                           encoding="utf-8")
        after = client.get("/preview/version").json()["version"]
        assert after != before
        page = client.get("/").text
        assert f'data-version="{after}"' in page
        assert "A sentence added while previewing: 7391." in page
        assert "    return 7391\n</textarea>" in page
        (folder / "reference.py").rename(folder / "reference.txt")  # a file went away
        assert client.get("/preview/version").json()["version"] != after


def test_a_broken_package_is_shown_as_its_error_until_it_is_fixed(tmp_path, launcher):
    folder = template_copy(tmp_path)
    good = (folder / "problem.toml").read_text(encoding="utf-8")
    with previewing(folder, launcher) as client:
        token = csrf(client.get("/").text)
        (folder / "problem.toml").write_text(good.replace("slug =", "slug = [", 1),
                                             encoding="utf-8")
        page = client.get("/?lang=en")
        assert page.status_code == 200
        assert 'id="load-error"' in page.text and "The package does not load" in page.text
        message = re.search(r'id="load-error-message">([^<]*)<', page.text).group(1)
        assert "problem.toml" in message
        assert 'id="run-button"' not in page.text
        r = client.post("/api/runs?lang=en", json={"code": "x = 1"},
                        headers={"X-CSRF-Token": token})
        assert r.status_code == 409 and "does not load" in r.json()["detail"]

        (folder / "problem.toml").write_text(good, encoding="utf-8")  # fixed
        assert_shows(client.get("/").text, folder)
        (folder / "statement.zh.md").unlink()  # a file missing is an error of its own
        assert "statement.zh.md" in client.get("/").text.split('id="load-error"')[1]


def test_an_empty_folder_says_what_is_missing(tmp_path, launcher):
    folder = tmp_path / "new"
    folder.mkdir()
    with previewing(folder, launcher) as client:
        page = client.get("/?lang=en").text
        assert 'id="load-error"' in page and "problem.toml" in page
        assert stamp(folder) == client.get("/preview/version").json()["version"]


def test_runs_need_the_pages_csrf_token_and_only_other_hosts_are_refused(tmp_path, launcher):
    with previewing(BUNDLED, launcher, base_url="http://127.0.0.1:8100",
                    hosts=["127.0.0.1", "localhost"]) as client:
        assert client.get("/").status_code == 200
        assert client.get("/", headers={"host": "evil.example"}).status_code == 400
        r = client.post("/api/runs", json={"code": "x = 1"})
        assert r.status_code == 403 and "CSRF" in r.json()["detail"]
        assert client.get("/api/runs/99").status_code == 404


@pytest.mark.slow
def test_a_run_judges_the_public_cases_only_and_no_speed_check(launcher):
    assert load_problem(BUNDLED).meta.throughput  # the package has speed checks to skip
    with previewing(BUNDLED, launcher) as client:
        rid, events = run(client, (BUNDLED / "reference.py").read_text(encoding="utf-8"))
        kinds = [e["event"] for e in events]
        assert kinds[0] == "start" and kinds[-1] == "done"
        assert "throughput" not in kinds and "phase" not in kinds
        planned = [t["name"] for t in events[0]["tests"]]
        assert planned == public_names(BUNDLED)
        assert {t["visibility"] for t in events[0]["tests"]} == {"public"}
        assert events[-1]["verdict"] == "accepted"
        assert events[-1]["passed"] == events[-1]["total"] == len(planned)
        report = client.get(f"/api/runs/{rid}?lang=en").json()
        assert report["status"] == "done" and report["verdict"] == "accepted"
        assert [t["name"] for t in report["tests"]] == planned

        _, events = run(client, (BUNDLED / "starter.py").read_text(encoding="utf-8"))
        assert events[-1]["verdict"] != "accepted"  # the starter is rejected
        judged = [e["result"] for e in events if e["event"] == "test"]
        assert judged and all(t["visibility"] == "public" for t in judged)


@pytest.mark.slow
def test_a_run_judges_the_package_as_it_is_on_disk(tmp_path, launcher):
    folder = template_copy(tmp_path)
    reference = (folder / "reference.py").read_text(encoding="utf-8")
    with previewing(folder, launcher) as client:
        _, events = run(client, reference, lang="zh")
        assert events[-1]["verdict"] == "accepted"
        assert [t["name"] for t in events[0]["tests"]] == public_names(folder)
        # a broken reference is the author's to see: the reason follows the message
        (folder / "reference.py").write_text(reference + "\nraise RuntimeError('oops 7391')\n",
                                             encoding="utf-8")
        _, events = run(client, reference)
        assert events[-1]["verdict"] == "internal_error"
        assert "oops 7391" in events[-1]["message"]


@pytest.mark.slow
@pytest.mark.sandbox
def test_a_run_in_the_sandbox(tmp_path):
    from tests.sandbox.helpers import make_launcher

    folder = template_copy(tmp_path)
    launcher = make_launcher()
    try:
        with previewing(folder, launcher) as client:
            assert 'id="no-sandbox"' not in client.get("/").text
            _, events = run(client, (folder / "reference.py").read_text(encoding="utf-8"))
    finally:
        launcher.close()
    assert events[-1]["verdict"] == "accepted"
    assert [t["name"] for t in events[0]["tests"]] == public_names(folder)


@contextlib.contextmanager
def command(target: str, tmp: Path) -> Iterator[str]:
    """``python -m judge preview TARGET --no-sandbox`` on a free port; its URL."""
    port = free_port()
    log = tmp / f"preview-{port}.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUDGE_")}
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "judge", "preview", target, "--port", str(port),
             "--no-sandbox"], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            assert process.poll() is None, log.read_text(errors="replace")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/preview/version", timeout=2).status_code == 200:
                    break
            assert time.monotonic() < deadline, log.read_text(errors="replace")
            time.sleep(0.2)
        yield url
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)


@pytest.mark.slow
def test_the_command_serves_a_bundled_problem_and_a_new_folder(tmp_path):
    folder = template_copy(tmp_path)
    for target, shown in (("padding-collate", BUNDLED), (str(folder), folder)):
        with command(target, tmp_path) as url:
            assert_shows(httpx.get(url).text, shown)
    r = subprocess.run([sys.executable, "-m", "judge", "preview", str(tmp_path / "nothing")],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "cp -r problems/_template" in r.stderr
