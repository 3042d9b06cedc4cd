"""A slug is never renamed (issue 15): another slug is another problem. An edit that
changes the slug is refused with nothing stored, the upload page says so, and an upload
that looks like a rename (a new slug with the old number) is told why it is refused."""

from __future__ import annotations

import html

from tests.conftest import write_problem
from tests.web.support import csrf, package_zip, rows, upload


def problems(client) -> list:
    return [tuple(r) for r in rows(client.app, "select slug from problems order by slug")]


def test_an_edit_cannot_rename_the_slug(client, admin):
    base = rows(client.app, "select published_version_id from problems")[0][0]
    (content_hash,) = rows(client.app, f"select content_hash from problem_versions "
                                       f"where id = {base}")[0]
    old = client.app.state.store.files(content_hash)
    versions = rows(client.app, "select count(*) from problem_versions")[0][0]
    fields = {"csrf_token": csrf(client, f"/admin/versions/{base}/edit"),
              "statement_zh": old["statement.zh.md"].decode(),
              "statement_en": old["statement.en.md"].decode(), "tests": old["tests.py"].decode(),
              "case_wall_s": "5.0", "cpu_s": "20.0", "memory_mb": "2048", "output_kb": "16",
              "problem_toml": old["problem.toml"].decode().replace(
                  'slug = "add-one"', 'slug = "plus-one"').replace("number = 3", "number = 9")}
    r = client.post(f"/admin/versions/{base}/edit", data=fields, follow_redirects=False)
    assert r.status_code == 400
    assert "编辑不能改 slug（'add-one' → 'plus-one'）" in html.unescape(r.text)
    assert problems(client) == [("add-one",)]  # no new problem
    assert rows(client.app, "select count(*) from problem_versions")[0][0] == versions


def test_the_upload_page_and_a_renaming_upload_say_slugs_are_never_renamed(client, admin,
                                                                          tmp_path):
    page = client.get("/admin/problems").text
    assert 'id="slug-rename-note"' in page and "slug 不能改名" in page
    # add-one's package under a new slug, number kept: refused, saying why
    r = upload(client, package_zip(write_problem(tmp_path / "p", slug="plus-one", number=3)))
    text = html.unescape(r.text)
    assert r.status_code == 400 and "编号 3 已经被 'add-one' 占用" in text
    assert "slug 不能改名：新的 slug 'plus-one' 是一道新题" in text
    assert problems(client) == [("add-one",)]
