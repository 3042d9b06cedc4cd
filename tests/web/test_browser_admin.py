"""Browser tests of the admin workflow against a real ``python -m judge serve`` (sandboxed
when this checkout has the sandbox, like the other served tests): an admin uploads a new
problem, watches it validate live, publishes it, and a learner solves it; a broken package
is refused with a message that says why. Screenshots go to test-artifacts/browser/."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REFERENCE, TESTS, write_problem
from tests.web.served import ROOT, serving
from tests.web.support import CHROMIUM, shot
from tests.web.test_browser import register, submit_and_wait

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ADMIN, PASSWORD = "root", "password1"
# Records the validation as the page shows it, across the reload at its end.
WATCH_VALIDATION = """
document.addEventListener("DOMContentLoaded", () => {
  const root = document.getElementById("version");
  if (!root) return;
  const seen = JSON.parse(sessionStorage.getItem("seen") || "[]");
  const record = () => {
    const rows = [...document.querySelectorAll("#files tr.file")];
    seen.push({ status: root.dataset.status, total: rows.length,
                judged: rows.filter((r) => !r.classList.contains("pending")).length });
    sessionStorage.setItem("seen", JSON.stringify(seen));
  };
  record();
  new MutationObserver(record).observe(root, { childList: true, subtree: true, attributes: true });
});
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Chromium is not installed at {CHROMIUM}")
    with serving(tmp_path_factory.mktemp("served"), args=("--no-pack-prebuild",)) as served:
        env = {k: v for k, v in os.environ.items() if not k.startswith("JUDGE_")}
        made = subprocess.run(
            [sys.executable, "-m", "judge", "admin", "create-user", ADMIN, "--admin",
             "--password-stdin", "--data-dir", str(served.data_dir)],
            input=PASSWORD + "\n", text=True, capture_output=True, cwd=ROOT, env=env)
        assert made.returncode == 0, made.stderr
        yield served


def package(tmp: Path, **kwargs) -> Path:
    """A small package as a zip file: double-it and its fixtures."""
    folder = write_problem(tmp, **kwargs)
    subs = folder / "submissions"
    (subs / "accepted").mkdir(parents=True)
    (subs / "accepted" / "add_to_itself.py").write_text("def double(x):\n    return x + x\n")
    (subs / "wrong_answer").mkdir()
    (subs / "wrong_answer" / "plus_one.py").write_text("def double(x):\n    return x + 1\n")
    (subs / "runtime_error").mkdir()
    (subs / "runtime_error" / "raises.py").write_text(
        "def double(x):\n    raise ValueError('no')\n")
    path = tmp / f"{folder.name}.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for f in sorted(folder.rglob("*")):
            if f.is_file():
                archive.write(f, f"{folder.name}/{f.relative_to(folder)}")
    return path


def log_in_as_admin(page) -> None:
    page.goto("/login?next=/admin/problems")
    page.fill("#username", ADMIN)
    page.fill("#password", PASSWORD)
    page.click("#login-button")
    page.wait_for_selector("#upload-form")


def upload(page, path: Path) -> None:
    page.set_input_files("#package-file", str(path))
    page.click("#upload-button")


def test_an_admin_adds_a_problem_and_a_learner_solves_it(page, browser, server, tmp_path):
    page.add_init_script(WATCH_VALIDATION)
    log_in_as_admin(page)
    shot(page, "admin-01-bank")
    upload(page, package(tmp_path / "pkg", slug="double-it", number=907))
    page.wait_for_url("**/admin/versions/*")
    # the validation lands file by file, then the page offers publishing
    page.wait_for_selector("#publish-button", timeout=180_000)
    shot(page, "admin-02-valid")
    seen = page.evaluate("JSON.parse(sessionStorage.getItem('seen'))")
    assert any(s["status"] == "validating" and 0 < s["judged"] < s["total"] for s in seen), seen
    files = page.locator("#files").inner_text()
    for label in ("reference", "starter", "submissions/accepted/add_to_itself.py",
                  "submissions/wrong_answer/plus_one.py", "submissions/runtime_error/raises.py"):
        assert label in files
    assert page.locator("#files tr.file.ok").count() == 5
    questions: list[str] = []  # publishing asks first (admin.js, data-confirm)
    page.once("dialog", lambda d: (questions.append(d.message), d.accept()))
    page.click("#publish-button")
    page.wait_for_selector("#published-version")
    assert questions and ("Publish" in questions[0] or "发布" in questions[0]), questions
    shot(page, "admin-03-published")

    learner = browser.new_context(viewport={"width": 1360, "height": 900}, locale="zh-CN",
                                  base_url=server.url).new_page()
    register(learner)
    learner.goto("/")
    assert "加倍" in learner.locator("#problem-list").inner_text()
    learner.click("text=加倍")
    learner.wait_for_load_state("load")
    code = "def double(x):\n    return 2 * x\n"
    if learner.locator(".cm-editor").count():
        submit_and_wait(learner, code)
    else:  # no editor bundle built (scripts/build_frontend.sh): the plain form
        learner.fill("#code", code)
        learner.click("#submit-button")
        learner.wait_for_url("**/submissions/*")
        learner.wait_for_selector("#final-verdict .verdict", timeout=120_000)
    shot(learner, "admin-04-learner-accepted")
    assert learner.locator("#final-verdict").inner_text() == "通过"
    learner.context.close()
    page.goto("/admin/audit")
    assert "发布" in page.locator("#audit").inner_text()


def test_a_broken_package_is_refused_with_the_reason(page, server, tmp_path, page_errors):
    page_errors.allow("status of 400")  # the refused upload's page comes back with 400
    log_in_as_admin(page)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("../../evil.py", "x = 1")
    evil = tmp_path / "evil.zip"
    evil.write_bytes(buffer.getvalue())
    upload(page, evil)
    error = page.locator("#upload-error").inner_text()
    assert "题目包被拒绝：'../../evil.py'：路径里不能有 '..' 或 '.'" in error
    shot(page, "admin-05-refused-zip")

    wrong = REFERENCE.replace("return x * 2", "return x * 3")
    tests = TESTS + ('\n@case(zh="定值", en="fixed values")\ndef fixed_values(t):\n'
                     '    t.expect_equal(t.sub.double(torch.tensor([3])), torch.tensor([6]), '
                     '"double([3])")\n')
    upload(page, package(tmp_path / "bad", slug="double-wrong", number=908, reference=wrong,
                         tests=tests))
    page.wait_for_url("**/admin/versions/*")
    page.wait_for_selector("#invalid-note", timeout=180_000)
    shot(page, "admin-06-invalid")
    assert page.locator("#publish-button").count() == 0
    files = page.locator("#files").inner_text()
    assert "expected accepted, got wrong_answer" in files
    assert "double([3])" in files  # the failing case's own message
    assert page.request.get(f"{server.url}/api/problems/double-wrong").status == 404
