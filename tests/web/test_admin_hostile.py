"""Hostile and broken packages: each is refused with a message that says why (in the reader's
language), and nothing of it is published. Unsafe archives, and packages the web process
could not read (a tests.py that does not parse), are refused at upload, at an edit and by
``problems add``: nothing stored, in the database or the bank's folder; a package whose own
fixtures fail is stored but validated invalid, and cannot be published. A statement with
``<script>`` is accepted and sanitised: the rendered statement holds no script
(web/markdown.py), which the served browser test checks too."""

from __future__ import annotations

import html
import io
import stat
import zipfile

import pytest

from judge.cli import main
from judge.worker import Problems, Worker
from tests.conftest import REFERENCE, TESTS, write_problem
from tests.web.support import csrf, make_user, package_zip, rows, upload


def raw_zip(entries: list[tuple[zipfile.ZipInfo | str, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for info, data in entries:
            archive.writestr(info, data)
    return buffer.getvalue()


def symlink_entry(name: str, target: str) -> tuple[zipfile.ZipInfo, bytes]:
    info = zipfile.ZipInfo(name)
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return info, target.encode()


def nothing_new(client) -> None:
    """Only add-one's bundled version: no row, and no folder in the bank, of a refusal."""
    assert rows(client.app, "select slug from problems") == [("add-one",)]
    assert len(rows(client.app, "select id from problem_versions")) == 1
    assert len(list(client.app.state.store.root.iterdir())) == 1


def api_upload(client, admin, data: bytes):
    """The admin API's upload, answered in English."""
    return client.post("/api/admin/problems?lang=en", headers=admin,
                       files={"file": ("pkg.zip", data, "application/zip")})


def files_of(ok, **replaced: bytes) -> bytes:
    names = ("problem.toml", "statement.zh.md", "statement.en.md", "starter.py",
             "reference.py", "tests.py")
    return raw_zip([(n, replaced.get(n.replace(".", "_"), (ok / n).read_bytes()))
                    for n in names])


@pytest.mark.parametrize("zh, en, archive", [
    ("'../evil.py'：路径里不能有 '..' 或 '.'", "'../evil.py': '..' and '.' are not allowed",
     lambda ok: raw_zip([("../evil.py", b"x = 1")])),
    ("不能用绝对路径", "absolute paths are not allowed",
     lambda ok: raw_zip([("/etc/evil.py", b"x = 1")])),
    ("不能有符号链接", "symbolic links are not allowed",
     lambda ok: raw_zip([("problem.toml", b""), symlink_entry("tests.py", "/etc/passwd")])),
    ("上传的不是 zip 压缩包", "the upload is not a zip archive",
     lambda ok: b"this is not a zip"),
    # the loader's reasons are English only: the Chinese page says so
    ("（原因只有英文说明）missing tests.py, reference.py", "missing tests.py, reference.py",
     lambda ok: raw_zip([(n, (ok / n).read_bytes()) for n in (
         "problem.toml", "statement.zh.md", "statement.en.md", "starter.py")])),
    # named as the uploader knows it, not after the folder it was unpacked into
    ("（原因只有英文说明）problem.toml: not valid TOML", "problem.toml: not valid TOML",
     lambda ok: files_of(ok, problem_toml=b"slug = [")),
    ("problem.toml 不是 UTF-8 文本", "problem.toml is not UTF-8 text",
     lambda ok: files_of(ok, problem_toml=b"slug = '\xff'")),
    ("statement.zh.md 不是 UTF-8 文本", "statement.zh.md is not UTF-8 text",
     lambda ok: files_of(ok, statement_zh_md=b"# \xff\xfe")),
], ids=["parent-path", "absolute-path", "symlink", "not-a-zip", "incomplete", "bad-toml",
        "toml-not-utf8", "statement-not-utf8"])
def test_unsafe_or_incomplete_archives_are_refused_at_upload(client, admin, tmp_path, zh, en,
                                                            archive):
    ok = write_problem(tmp_path / "p")
    r = upload(client, archive(ok))
    assert r.status_code == 400, r.text
    page = html.unescape(r.text)
    assert "题目包被拒绝：" in page and zh in page and 'id="upload-error"' in page
    assert "pkg" not in page[page.index('id="upload-error"'):].split("</p>")[0]
    r = api_upload(client, admin, archive(ok))
    assert r.status_code == 400 and r.json()["detail"].startswith("package refused: ")
    assert en in r.json()["detail"], r.json()
    nothing_new(client)
    assert not (tmp_path / "evil.py").exists()


def test_too_many_files_are_refused(client, admin, tmp_path):
    many = {f"data/{i}.txt": "x" for i in range(400)}
    r = upload(client, package_zip(write_problem(tmp_path / "p"), extra=many))
    assert r.status_code == 400 and "个文件，上限是 400" in r.text
    nothing_new(client)


def test_a_number_taken_by_another_problem_is_refused(client, admin, tmp_path):
    package = package_zip(write_problem(tmp_path / "p", number=3))  # add-one's
    r = upload(client, package)
    assert r.status_code == 400 and "编号 3 已经被 'add-one' 占用" in html.unescape(r.text)
    r = api_upload(client, admin, package)
    assert r.status_code == 400 and "number 3 is already taken by 'add-one'" in r.text
    nothing_new(client)


# A tests.py that does not parse: the web process reads its public cases from the syntax
# tree (and whether it uses CUDA), so it is refused at once, like a schema error.
BROKEN_TESTS = TESTS + "\n\n@case(zh=\"坏\", en=\"broken\")\ndef broken(t:\n    pass\n"


def broken_line() -> int:
    import textwrap

    lines = textwrap.dedent(BROKEN_TESTS).splitlines()
    return next(i for i, line in enumerate(lines, 1) if line.startswith("def broken("))


def test_a_tests_py_that_does_not_parse_is_refused_everywhere(
        client, admin, settings, problems_root, tmp_path, monkeypatch, capsys):
    folder = write_problem(tmp_path / "p", tests=BROKEN_TESTS)
    line = broken_line()
    r = upload(client, package_zip(folder))  # the upload page
    assert r.status_code == 400, r.text
    assert f"题目包被拒绝：tests.py 有语法错误（第 {line} 行）" in r.text
    r = api_upload(client, admin, package_zip(folder))  # the API
    assert r.status_code == 400, r.text
    assert r.json()["detail"].startswith(
        f"package refused: tests.py has a syntax error on line {line}: ")
    nothing_new(client)

    # an edit of the published version that breaks its tests.py: the form comes back
    base = rows(client.app, "select published_version_id from problems")[0][0]
    tests = client.app.state.store.files(rows(client.app, "select content_hash from "
                                              "problem_versions")[0][0])["tests.py"].decode()
    fields = {"csrf_token": csrf(client, f"/admin/versions/{base}/edit"),
              "statement_zh": "# 加一", "statement_en": "# Add one",
              "tests": tests + "\ndef oops(:\n", "case_wall_s": "5", "cpu_s": "20",
              "memory_mb": "1024", "output_kb": "16"}
    r = client.post(f"/admin/versions/{base}/edit", data=fields, follow_redirects=False)
    assert r.status_code == 400 and "tests.py 有语法错误" in r.text
    assert "def oops(:" in html.unescape(r.text)  # the admin's edit is kept in the form
    nothing_new(client)

    # python -m judge problems add: refused with the reason, exit status 2
    monkeypatch.setenv("JUDGE_PROBLEMS_DIR", str(problems_root))
    data_dir = str(settings.data_dir)
    for source in (folder, tmp_path / "p.zip"):
        (tmp_path / "p.zip").write_bytes(package_zip(folder))
        assert main(["problems", "add", str(source), "--data-dir", data_dir]) == 2
        err = capsys.readouterr().err
        assert f"tests.py has a syntax error on line {line}" in err and "Traceback" not in err
    nothing_new(client)


def test_a_failure_after_storing_removes_the_stored_folder(client, admin, tmp_path,
                                                           monkeypatch):
    """Whatever fails after the package's folder is written (here: the database), the
    folder goes with the refused version."""
    from web.data import queue

    def fail(*args, **kwargs):
        raise RuntimeError("the database went away")

    monkeypatch.setattr(queue, "queue_validation", fail)
    client_500 = client.__class__(client.app, raise_server_exceptions=False)
    client_500.cookies = client.cookies
    r = upload(client_500, package_zip(write_problem(tmp_path / "p")))
    assert r.status_code == 500
    nothing_new(client)


def test_a_script_in_the_statement_is_shown_as_text(client, admin, tmp_path):
    folder = write_problem(tmp_path / "p")
    (folder / "statement.zh.md").write_text(
        "# 加倍\n\n<script>window.__pwned = 1</script>\n\n<img src=x onerror=alert(1)>\n")
    r = upload(client, package_zip(folder))
    assert r.status_code == 303
    page = client.get(r.headers["location"]).text
    preview = page[page.index('id="statement-preview"'):]
    assert "<script>window" not in preview and "<img" not in preview
    assert "&lt;script&gt;window.__pwned" in preview


def validate(client, worker, plain, settings, problems_root, folder) -> dict:
    r = upload(client, package_zip(folder))
    assert r.status_code == 303, r.text
    vid = int(r.headers["location"].rsplit("/", 1)[1])
    problems = Problems(problems_root, store=settings.bank_dir, fetch=worker.download)
    assert Worker(worker, plain, problems, name="w").run(until_idle=True) == 1
    data = client.get(f"/api/admin/versions/{vid}").json()
    refused = client.post(f"/admin/versions/{vid}/publish",
                          data={"csrf_token": csrf(client, "/admin/problems")})
    assert refused.status_code == 409 and "只有验证通过（有效）的版本才能发布" in refused.text
    refused = client.post(f"/api/admin/versions/{vid}/publish?lang=en",
                          headers={"X-CSRF-Token": csrf(client, "/admin/problems")})
    assert refused.status_code == 409
    assert refused.json()["detail"].endswith(" is invalid: only a valid version can be "
                                             "published")
    assert client.get("/api/problems/double-it").status_code == 404
    page = client.get(f"/admin/versions/{vid}").text
    assert 'id="invalid-note"' in page and 'id="publish-button"' not in page
    return data


# A reference that fails its own tests: they also hold it to fixed answers.
WRONG_REFERENCE = REFERENCE.replace("return x * 2", "return x * 3")
TESTS_FIXED = TESTS + """
@case(zh="定值", en="fixed values")
def fixed_values(t):
    t.expect_equal(t.sub.double(torch.tensor([3])), torch.tensor([6]), "double([3])")
"""
TESTS_CRASH_AT_IMPORT = TESTS + "\nraise RuntimeError('tests.py is broken on purpose')\n"
TESTS_CRASH_IN_A_CASE = TESTS.replace(
    '    x = -torch.randint(1, 100, (5,), generator=t.rng)',
    '    x = -torch.randint(1, 100, (5,), generator=t.rng)\n    [][1]')


@pytest.mark.slow
@pytest.mark.parametrize("kind, why", [
    ("reference", "reference: expected accepted, got wrong_answer"),
    ("import", "tests.py does not load: RuntimeError: tests.py is broken on purpose"),
    ("case", "reference: expected accepted, got internal_error"),
])
def test_a_package_that_fails_its_own_check_is_invalid(client, admin, worker, plain, settings,
                                                       problems_root, tmp_path, kind, why):
    folder = write_problem(
        tmp_path / "p",
        reference=WRONG_REFERENCE if kind == "reference" else REFERENCE,
        tests={"import": TESTS_CRASH_AT_IMPORT, "case": TESTS_CRASH_IN_A_CASE}.get(
            kind, TESTS_FIXED))
    data = validate(client, worker, plain, settings, problems_root, folder)
    assert data["status"] == "invalid"
    report = data["report"]
    reasons = report["errors"] + [f["detail"] for f in report["files"] if not f["ok"]]
    assert any(why in reason for reason in reasons), reasons
    learner = make_user(client, "learner")
    r = client.post("/api/submissions", headers=learner,
                    json={"problem": "double-it", "code": "def double(x):\n    return 2 * x\n"})
    assert r.status_code == 404
