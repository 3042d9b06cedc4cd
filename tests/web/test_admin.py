"""Admins add and maintain problems: upload, validate (a real worker runs judge.check with
the plain launcher; the served browser tests use the sandbox), publish, edit, rejudge,
users and the audit log."""

from __future__ import annotations

import re

import pytest

from judge.worker import Problems, Worker
from tests.conftest import write_problem
from tests.web.support import (
    GOOD,
    WRONG,
    csrf,
    judge_next,
    make_user,
    package_zip,
    rows,
    submit,
    upload,
    visible,
)

pytestmark = pytest.mark.both_databases  # each test on SQLite and on PostgreSQL


def run_worker(worker, plain, settings, problems_root, **kw) -> int:
    problems = Problems(problems_root, store=settings.bank_dir, fetch=worker.download)
    return Worker(worker, plain, problems, name="test", **kw).run(until_idle=True)


def version_id(response) -> int:
    assert response.status_code == 303, response.text
    return int(re.search(r"/admin/versions/(\d+)$", response.headers["location"]).group(1))


def form(client) -> dict:
    return {"csrf_token": csrf(client, "/admin/problems")}


def status(client, vid: int) -> dict:
    return client.get(f"/api/admin/versions/{vid}").json()


@pytest.mark.slow
def test_upload_validate_publish_solve(client, admin, alice, worker, plain, settings,
                                       problems_root, tmp_path):
    vid = version_id(upload(client, package_zip(write_problem(tmp_path / "p"), top="double-it")))
    page = client.get(f"/admin/versions/{vid}").text
    assert "等待验证" in page and 'id="publish-button"' not in page
    assert client.get("/api/problems/double-it").status_code == 404  # not published yet
    r = client.post(f"/admin/versions/{vid}/publish", data=form(client))
    assert r.status_code == 409 and "正在等待验证：只有验证通过（有效）的版本才能发布" in r.text

    assert run_worker(worker, plain, settings, problems_root) == 1
    data = status(client, vid)
    assert data["status"] == "valid", data
    files = data["report"]["files"]
    assert [(f["label"], f["verdict"], f["ok"]) for f in files] == [
        ("reference", "accepted", True), ("starter", "runtime_error", True)]
    with client.stream("GET", f"/api/admin/versions/{vid}/events") as stream:
        snaps = [line for line in stream.iter_lines() if line.startswith("data:")]
    assert len(snaps) == 1 and '"status": "valid"' in snaps[0]

    page = client.get(f"/admin/versions/{vid}").text
    assert 'id="publish-button"' in page
    r = client.post(f"/admin/versions/{vid}/publish", data=form(client),
                    follow_redirects=False)
    assert r.status_code == 303
    assert client.get("/api/problems/double-it").status_code == 200
    code = "def double(x):\n    return x + x\n"
    sid = submit(client, alice, code, problem="double-it").json()["id"]
    assert run_worker(worker, plain, settings, problems_root) == 1
    done = client.get(f"/api/submissions/{sid}", headers=alice).json()
    assert done["verdict"] == "accepted" and done["problem_version"] == data["version"]
    actions = [r[0] for r in rows(client.app, "select action from audit_log order by id")]
    assert actions == ["add-version", "publish"]
    assert "publish" in client.get("/admin/audit").text


def test_a_validation_is_logged_as_a_version_not_as_a_submission(
        client, admin, worker, plain, settings, problems_root, tmp_path, monkeypatch, caplog):
    import logging

    from judge.worker import Worker

    vid = version_id(upload(client, package_zip(write_problem(tmp_path / "p"))))
    monkeypatch.setattr(Worker, "validate", lambda self, job, on_progress, post=None: {
        "ok": True, "errors": [], "files": [], "skipped": []})
    with caplog.at_level(logging.INFO, logger="judge.worker"):
        assert run_worker(worker, plain, settings, problems_root) == 1
    content_hash = status(client, vid)["version"]
    assert f"version {content_hash[:12]} of double-it: valid (stored)" in caplog.text
    assert "submission None" not in caplog.text


def test_a_remote_worker_downloads_the_version(client, admin, worker, settings, tmp_path):
    vid = version_id(upload(client, package_zip(write_problem(tmp_path / "p"))))
    content_hash = status(client, vid)["version"]
    remote = Problems(tmp_path / "none", store=tmp_path / "cache", fetch=worker.download)
    problem = remote.exact(content_hash)
    assert problem is not None and problem.slug == "double-it"
    assert (tmp_path / "cache" / content_hash / "tests.py").is_file()
    assert remote.exact("0" * 64) is None  # the server does not have it


def test_a_bad_edit_is_refused_and_a_good_one_is_a_new_version(client, admin):
    base = rows(client.app, "select published_version_id from problems")[0][0]
    form = client.get(f"/admin/versions/{base}/edit").text
    assert "statement.zh.md" in form and 'value="5.0"' in form
    fields = {"csrf_token": csrf(client, f"/admin/versions/{base}/edit"),
              "statement_zh": "# 加一\n\n新的题面", "statement_en": "# Add one\n\nNew text",
              "tests": _tests(client, base),
              "case_wall_s": "7.5", "cpu_s": "20", "memory_mb": "100", "output_kb": "16"}
    r = client.post(f"/admin/versions/{base}/edit", data=fields)
    assert r.status_code == 400 and "memory_mb at least 256" in r.text  # refused, kept
    fields["memory_mb"] = "1024"
    vid = version_id(client.post(f"/admin/versions/{base}/edit", data=fields,
                                 files={"file": ("extra.txt", b"data", "text/plain")},
                                 follow_redirects=False))
    assert vid != base
    store = client.app.state.store
    files = store.files(status(client, vid)["version"])
    toml = files["problem.toml"]
    assert b"case_wall_s = 7.5" in toml and b"memory_mb = 1024" in toml
    assert files["statement.en.md"] == b"# Add one\n\nNew text" and files["extra.txt"] == b"data"
    assert status(client, vid)["status"] == "uploaded"
    # learners still see the published version
    assert "New text" not in client.get("/api/problems/add-one").text


def _tests(client, vid: int) -> str:
    sql = f"select content_hash from problem_versions where id={vid}"
    (content_hash,) = rows(client.app, sql)[0]
    return client.app.state.store.files(content_hash)["tests.py"].decode()


def test_rejudge_goes_after_live_submissions_and_records_the_version(client, admin, alice,
                                                                     worker):
    first = submit(client, alice, WRONG).json()["id"]
    judge_next(worker)
    bob = make_user(client, "bob")
    r = client.post("/admin/problems/add-one/rejudge", follow_redirects=False,
                    data={"csrf_token": csrf(client, "/admin/problems/add-one"), "which": "all"})
    assert r.status_code == 303 and r.headers["location"].endswith("notice=rejudge-1")
    live = submit(client, bob, GOOD).json()["id"]
    assert judge_next(worker) == live  # the live submission first
    assert client.get(f"/api/submissions/{first}", headers=alice).json()["status"] == "done"
    assert judge_next(worker) == first  # then the rejudge
    (version,) = rows(client.app, f"select problem_version from submissions where id={first}")
    assert version[0] == client.get("/api/problems/add-one").json()["version"]
    page = client.get("/admin/problems/add-one").text
    assert version[0][:12] in page
    assert f'id="judged-version">{version[0][:12]}<' in client.get(f"/submissions/{first}").text
    r = client.post("/api/admin/problems/add-one/rejudge", headers=admin,
                    json={"submissions": [first, 999]})
    assert r.json() == {"queued": [first]}
    r = client.post("/admin/problems/add-one/rejudge", data={
        "csrf_token": csrf(client, "/admin/problems/add-one"), "which": "selected", "ids": "x"})
    assert r.status_code == 422


def test_unpublish_hides_a_problem_from_learners(client, admin, alice):
    r = client.post("/admin/problems/add-one/unpublish",
                    data={"csrf_token": csrf(client, "/admin/problems/add-one")})
    assert r.status_code == 200
    assert client.get("/api/problems/add-one").status_code == 404
    assert submit(client, alice).status_code == 404
    assert "未发布" in client.get("/admin/problems").text


def test_admins_promote_and_disable_users(client, admin, alice):
    from tests.web.support import browser_login

    (uid,) = rows(client.app, "select id from users where username = 'alice'")[0]
    token = csrf(client, "/admin/users")
    assert client.post(f"/admin/users/{uid}", data={"csrf_token": token, "action": "disable"}
                       ).status_code == 200
    assert client.get("/api/submissions/1", headers=alice).status_code == 401
    assert client.post(f"/admin/users/{uid}", data={"csrf_token": token, "action": "promote"}
                       ).status_code == 200
    assert "已停用" in client.get("/admin/users").text
    (me,) = rows(client.app, "select id from users where username = 'root'")[0]
    r = client.post(f"/admin/users/{me}", data={"csrf_token": token, "action": "demote"})
    assert r.status_code == 409
    audit = client.get("/admin/audit").text
    assert "disable" in audit and "promote" in audit and "alice" in audit
    # a disabled user cannot log in from the page
    other = client.__class__(client.app)
    r = other.post("/login", data={"username": "alice", "password": "password1",
                                   "csrf_token": csrf(other, "/login")})
    assert r.status_code == 403 and "停用" in r.text
    client.post(f"/admin/users/{uid}", data={"csrf_token": token, "action": "enable"})
    browser_login(other, "alice")
    assert "admin-link" in other.get("/").text  # promoted earlier


def test_the_admin_api_takes_uploads_and_says_why_it_refuses(client, admin, tmp_path):
    client.cookies.clear()  # the bearer token alone
    data = package_zip(write_problem(tmp_path / "p"))
    r = client.post("/api/admin/problems", headers=admin,
                    files={"file": ("p.zip", data, "application/zip")})
    assert r.status_code == 201 and r.json()["status"] == "uploaded"
    again = client.post("/api/admin/problems", headers=admin,
                        files={"file": ("p.zip", data, "application/zip")})
    assert again.json()["id"] == r.json()["id"]  # the same content is the same version
    r = client.post("/api/admin/problems?lang=en", headers=admin,
                    files={"file": ("x.zip", b"nope", "application/zip")})
    assert r.status_code == 400 and r.json()["detail"] == (
        "package refused: the upload is not a zip archive")
    listing = client.get("/api/admin/problems", headers=admin).json()
    assert [p["slug"] for p in listing] == ["add-one", "double-it"]
    assert listing[1]["published"] is None and listing[1]["newest"]["status"] == "uploaded"


def test_validation_progress_is_kept_and_streamed(client, admin, worker, clock, tmp_path):
    vid = version_id(upload(client, package_zip(write_problem(tmp_path / "p"))))
    wid = worker.register("w", False, {})
    job = worker.claim(wid, False, 0)
    assert job.kind == "validate" and job.version_id == vid and job.submission_id is None
    assert status(client, vid)["status"] == "validating"
    files = [{"label": "reference", "expected": "accepted"},
             {"label": "starter", "expected": "not accepted"}]
    assert worker.events(job, [{"event": "start", "files": files},
                               {"event": "file", "file": {**files[0], "verdict": "accepted",
                                                          "ok": True, "detail": ""}}])
    report = status(client, vid)["report"]
    assert [f["verdict"] for f in report["files"]] == ["accepted", None]
    refused = client.post(f"/worker/jobs/{job.job_id}/events",  # malformed: nothing kept
                          headers={"Authorization": "Bearer worker-secret"},
                          json={"lease_token": job.lease_token,
                                "events": [{"event": "file", "file": "not an object"}]})
    assert refused.status_code == 422
    result = {"ok": False, "errors": [], "skipped": [], "files": [
        {**files[0], "verdict": "accepted", "ok": True, "detail": ""},
        {**files[1], "verdict": "accepted", "ok": False, "detail": "starter: accepted"}]}
    assert worker.result(job, result) == "stored"
    with client.stream("GET", f"/api/admin/versions/{vid}/events") as stream:
        (snap,) = [line for line in stream.iter_lines() if line.startswith("data:")]
    assert '"status": "invalid"' in snap and "starter: accepted" in snap


def test_a_lost_validation_is_retried_then_given_up(client, admin, worker, clock, tmp_path):
    vid = version_id(upload(client, package_zip(write_problem(tmp_path / "p"))))
    wid = worker.register("w", False, {})
    attempts = 0
    while (job := worker.claim(wid, False, 0)) is not None:  # the worker never answers
        attempts += 1
        assert job.kind == "validate" and job.attempt == attempts
        clock.advance(31)  # the lease (30 s) runs out: queued again, up to 3 attempts
        if attempts < 3:
            assert status(client, vid)["status"] in ("uploaded", "validating")
    assert attempts == 3
    data = status(client, vid)
    assert data["status"] == "invalid"
    assert "the worker was lost" in data["report"]["errors"][0]


def test_a_package_that_needs_cuda_is_validated_by_a_gpu_worker(client, admin, worker,
                                                                 tmp_path):
    folder = write_problem(tmp_path / "p")
    (folder / "problem.toml").write_text((folder / "problem.toml").read_text()
                                         + "\n[requires]\ncuda = true\n")
    version_id(upload(client, package_zip(folder)))
    assert worker.claim(worker.register("cpu", False, {}), False, 0) is None
    job = worker.claim(worker.register("gpu", True, {}), True, 0)
    assert job is not None and job.kind == "validate"


def finish_validation(client, vid: int, files: list[dict], errors: list[str] = ()) -> None:
    """Store a validation result as a worker's would be stored."""
    from web.data import bank

    with client.app.state.sessionmaker() as db:
        bank.validation_finished(db, vid, {"ok": False, "errors": list(errors),
                                                    "files": files, "skipped": []},
                                          client.app.state.clock())
        db.commit()


def test_admin_pages_name_verdicts_actions_and_origins_in_the_admins_language(
        client, admin, tmp_path):
    vid = version_id(upload(client, package_zip(write_problem(tmp_path / "p"))))
    finish_validation(client, vid, [
        {"label": "reference", "expected": "accepted", "verdict": "wrong_answer", "ok": False,
         "detail": "reference: expected accepted, got wrong_answer"},
        {"label": "starter", "expected": "runtime_error", "verdict": "runtime_error",
         "ok": True, "detail": ""}])
    page = client.get(f"/admin/versions/{vid}").text
    table = visible(page[page.index('id="files"'):page.index("</table>", page.index('id="files"'))])
    assert "通过" in table and "答案错误" in table and "运行错误" in table
    assert "wrong_answer" not in table.replace("expected accepted, got wrong_answer", "")
    assert "runtime_error" not in table
    assert '"labels": {' in page  # the live table (admin.js) uses the same labels
    assert "上传" in visible(page)
    audit = visible(client.get("/admin/audit").text)
    assert "添加版本" in audit and "add-version" not in audit
    client.post("/lang", data={"lang": "en", "csrf_token": csrf(client, "/admin/audit")})
    audit = visible(client.get("/admin/audit").text)
    assert "add a version" in audit and "add-version" not in audit
    table = visible(client.get(f"/admin/versions/{vid}").text)
    assert "Wrong answer" in table and "Runtime error" in table


def test_admin_pages_show_titles_and_say_when_no_file_was_judged(client, admin, tmp_path):
    vid = version_id(upload(client, package_zip(write_problem(tmp_path / "p"))))
    bank = client.get("/admin/problems").text
    row = visible(bank[bank.index('data-slug="double-it"') - 4:])
    assert row.strip().startswith("7 加倍 double-it")  # unpublished: the newest's title
    assert "加一 add-one" in visible(bank)
    assert "7. 加倍 double-it" in visible(client.get("/admin/problems/double-it").text)
    page = client.get(f"/admin/versions/{vid}").text
    assert "加倍 · " in visible(page[page.index('id="version-title"'):])
    assert 'id="files"' in page and 'id="no-files"' not in page  # waiting: the live table
    # tests.py crashed on import: the check judged no file and says why
    finish_validation(client, vid, [], ["tests.py does not load: RuntimeError: broken"])
    page = client.get(f"/admin/versions/{vid}").text
    assert 'id="files"' not in page and 'id="no-files"' in page
    assert "没有评测任何文件" in visible(page) and "tests.py does not load" in page
