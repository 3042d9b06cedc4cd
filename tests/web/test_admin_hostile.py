"""Hostile and broken packages: each is refused with a message that says why, and nothing
of it is published. Unsafe archives are refused at upload (nothing stored in the bank's
database); a package whose own fixtures fail is stored but validated invalid, and cannot
be published. A statement with ``<script>`` is accepted and sanitised: the rendered
statement holds no script (web/markdown.py), which the served browser test checks too."""

from __future__ import annotations

import html
import io
import stat
import zipfile

import pytest

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
    assert rows(client.app, "select slug from problems") == [("add-one",)]
    assert len(rows(client.app, "select id from problem_versions")) == 1


@pytest.mark.parametrize("why, archive", [
    ("'..' and '.' are not allowed", lambda ok: raw_zip([("../evil.py", b"x = 1")])),
    ("absolute paths are not allowed", lambda ok: raw_zip([("/etc/evil.py", b"x = 1")])),
    ("symbolic links are not allowed",
     lambda ok: package_zip(ok)[:0] + raw_zip([("problem.toml", b""),
                                               symlink_entry("tests.py", "/etc/passwd")])),
    ("not a zip archive", lambda ok: b"this is not a zip"),
    ("missing tests.py, reference.py",
     lambda ok: raw_zip([(n, (ok / n).read_bytes()) for n in (
         "problem.toml", "statement.zh.md", "statement.en.md", "starter.py")])),
])
def test_unsafe_or_incomplete_archives_are_refused_at_upload(client, admin, tmp_path, why,
                                                            archive):
    ok = write_problem(tmp_path / "p")
    r = upload(client, archive(ok))
    assert r.status_code == 400, r.text
    assert "题目包被拒绝" in r.text and why in html.unescape(r.text)
    assert 'id="upload-error"' in r.text
    nothing_new(client)
    assert not (tmp_path / "evil.py").exists()


def test_too_many_files_are_refused(client, admin, tmp_path):
    many = {f"data/{i}.txt": "x" for i in range(400)}
    r = upload(client, package_zip(write_problem(tmp_path / "p"), extra=many))
    assert r.status_code == 400 and "the limit is 400" in r.text
    nothing_new(client)


def test_a_number_taken_by_another_problem_is_refused(client, admin, tmp_path):
    r = upload(client, package_zip(write_problem(tmp_path / "p", number=3)))  # add-one's
    assert r.status_code == 400 and "number 3 is already taken by" in html.unescape(r.text)
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
    assert refused.status_code == 409 and "only a valid version" in refused.text
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
